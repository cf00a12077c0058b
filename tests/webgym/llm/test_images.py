"""Screenshots as data URLs, downscaled on request."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from webgym.llm.images import data_url, image_part


def _image(size: tuple[int, int], fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, "green").save(buffer, format=fmt)
    return buffer.getvalue()


def _decode(url: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_small_images_are_sent_unchanged_and_large_ones_shrink_keeping_the_aspect():
    png = _image((640, 360), "PNG")
    assert data_url(png, max_side=1024) == "data:image/png;base64," + base64.b64encode(png).decode()
    shrunk = _decode(data_url(_image((1280, 720), "JPEG"), max_side=400))
    assert shrunk.format == "PNG" and shrunk.size == (400, 225)
    assert image_part(png)["image_url"]["url"].startswith("data:image/png;base64,")
    assert data_url(_image((10, 10), "JPEG")).startswith("data:image/jpeg;base64,")


def test_unreadable_bytes_are_refused_clearly():
    with pytest.raises(ValueError, match=r"not a readable image \(9 bytes\)"):
        data_url(b"not a png")
