"""Screenshots as chat message parts: base64 data URLs, optionally downscaled first.

Cache keys replace each data URL by its hash (cache.py), so a screenshot costs 64 characters
there, and a downscaled screenshot is a different request from the full-size one.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from PIL import Image, UnidentifiedImageError



def data_url(image: bytes, max_side: int | None = None) -> str:
    """A data URL of `image` (PNG, JPEG, ...); re-encoded as PNG when it must shrink to `max_side`."""
    try:
        with Image.open(io.BytesIO(image)) as picture:
            fmt = picture.format or "PNG"
            if max_side is not None and max(picture.size) > max_side:
                picture.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
                buffer = io.BytesIO()
                picture.save(buffer, format="PNG")
                image, fmt = buffer.getvalue(), "PNG"
    except (UnidentifiedImageError, OSError) as error:
        raise ValueError(f"not a readable image ({len(image)} bytes): {error}") from None
    return f"data:image/{fmt.lower()};base64,{base64.b64encode(image).decode('ascii')}"


def image_part(image: bytes, max_side: int | None = None) -> dict[str, Any]:
    """An `image_url` content part for a user message."""
    return {"type": "image_url", "image_url": {"url": data_url(image, max_side)}}
