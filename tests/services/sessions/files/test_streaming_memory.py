"""Streams stay streams on a served gateway: a slow remote never makes the body pile up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import httpx
import psutil

from tests.services.sessions.files import memfs
from tests.services.sessions.live import live_server  # noqa: F401

MIB = 1024 * 1024
MAX_GROWTH = 32 * MIB


class PeakRss:
    """Peak resident memory of this process while the block runs."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.start = self.process.memory_info().rss
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth(self) -> int:
        return self.peak - self.start


async def test_uploads_and_downloads_keep_memory_flat(live_server, owner, make_connection):  # noqa: F811
    conn = await make_connection(owner, "memsink")
    base = f"{live_server.url}/api/v1/memsink/{conn.id}"
    block = bytes(MIB)

    async def body() -> AsyncIterator[bytes]:
        for _ in range(memfs.SINK_SIZE // MIB):
            yield block

    headers = {"Authorization": f"Bearer {owner.token}"}
    async with httpx.AsyncClient(timeout=120, headers=headers) as http:
        warm = await http.post(f"{base}/upload", params={"path": "/warm"}, content=block)
        assert warm.status_code == 200
        with PeakRss() as uploading:
            response = await http.post(f"{base}/upload", params={"path": "/big"}, content=body())
        assert response.status_code == 200, response.text
        received = 0
        with PeakRss() as downloading:
            async with http.stream("GET", f"{base}/download", params={"path": "/zeros"}) as stream:
                assert stream.status_code == 200
                async for chunk in stream.aiter_raw():
                    received += len(chunk)
                    if received % (16 * MIB) < len(chunk):
                        await asyncio.sleep(0.05)
    assert received == memfs.SINK_SIZE
    assert uploading.growth < MAX_GROWTH, uploading.growth // MIB
    assert downloading.growth < MAX_GROWTH, downloading.growth // MIB
