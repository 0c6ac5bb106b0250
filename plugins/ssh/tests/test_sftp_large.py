"""A large file through a served gateway (hypercorn) and OpenSSH: identical bytes, flat memory."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import AsyncIterator

import httpx
import psutil

MIB = 1024 * 1024
SIZE = 64 * MIB
BLOCK = MIB
MAX_GROWTH = 40 * MIB
"""A 64 MiB transfer buffered anywhere (request body, response, adapter) would exceed this."""


def block(index: int) -> bytes:
    """Deterministic, incompressible 1 MiB blocks (nothing to keep in memory)."""
    return hashlib.shake_128(index.to_bytes(4, "big")).digest(BLOCK)


class PeakRss:
    """Peak resident memory of this process while the block runs."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.peak = self.process.memory_info().rss
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


async def test_large_round_trip_is_byte_identical_with_flat_memory(
    live_server, make_user, make_connection, sshd, workdir
):
    owner = await make_user("big")
    conn = await make_connection(
        owner, "sftp", sshd.host, sshd.port, username=sshd.username, password=sshd.password
    )
    base = f"{live_server.url}/api/v1/sftp/{conn.id}"
    path = f"{workdir}/large.bin"
    sent = hashlib.sha256()

    async def body() -> AsyncIterator[bytes]:
        for index in range(SIZE // BLOCK):
            data = block(index)
            sent.update(data)
            yield data

    async with httpx.AsyncClient(
        timeout=300, headers={"Authorization": f"Bearer {owner.token}"}
    ) as http:
        warm = await http.post(
            f"{base}/upload", params={"path": f"{workdir}/warm"}, content=b"w" * MIB
        )
        assert warm.status_code == 200
        assert (await http.get(f"{base}/download", params={"path": f"{workdir}/warm"})).content
        baseline = psutil.Process().memory_info().rss
        with PeakRss() as upload_rss:
            response = await http.post(
                f"{base}/upload",
                params={"path": path},
                content=body(),
                headers={"Content-Length": str(SIZE)},
            )
        assert response.status_code == 200, response.text
        received = hashlib.sha256()
        length = 0
        with PeakRss() as download_rss:
            async with http.stream("GET", f"{base}/download", params={"path": path}) as stream:
                assert stream.status_code == 200
                assert stream.headers["Content-Length"] == str(SIZE)
                async for chunk in stream.aiter_raw():
                    received.update(chunk)
                    length += len(chunk)
    local = hashlib.sha256()
    with open(path, "rb") as handle:
        while data := handle.read(BLOCK):
            local.update(data)
    assert length == SIZE
    assert local.hexdigest() == sent.hexdigest()
    assert received.hexdigest() == sent.hexdigest()
    assert upload_rss.peak - baseline < MAX_GROWTH, (upload_rss.peak - baseline) // MIB
    assert download_rss.peak - baseline < MAX_GROWTH, (download_rss.peak - baseline) // MIB
