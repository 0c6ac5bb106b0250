"""``ChunkReader``: a ``StreamReader`` for bulk data (it lives in ``_compat.asyncio_streams``)."""

from __future__ import annotations

from ._compat.asyncio_streams import SMALL_CHUNK, ChunkReader

__all__ = ["SMALL_CHUNK", "ChunkReader"]
