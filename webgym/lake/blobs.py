"""The blob store: screenshots and other bytes under `blobs/<sha256>.<suffix>`, content-addressed and
written once."""

from __future__ import annotations

import hashlib

from webgym.lake.files import Storage


class Blobs(Storage):
    """Bytes stored once under their SHA-256."""

    def put_blob(self, data: bytes, suffix: str = "png") -> str:
        """Store bytes once under their SHA-256 and return the hash."""
        sha = hashlib.sha256(data).hexdigest()
        path = self._path("blobs", f"{sha}.{suffix}")
        if not self.fs.exists(path):
            self._put(path, data)
        return sha

    def get_blob(self, sha: str, suffix: str = "png") -> bytes:
        """The bytes stored under a hash; FileNotFoundError names the hash when absent."""
        path = self._path("blobs", f"{sha}.{suffix}")
        try:
            return self.fs.cat_file(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"no blob {sha}.{suffix} under {self.url('blobs')}") from None
