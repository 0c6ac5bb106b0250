"""SMB and FTP file throughput: through the gateway vs a direct client, and the gateway's RSS.

.venv/bin/python bench/files_smb_ftp.py [--size-mib 1024] [--only smb|ftp]

A real smbd and vsftpd are started on free 127.0.0.1 ports (testsupport
launchers), and a real ``hostgate serve``. For each protocol the same file is
moved four ways in the same run: direct download and upload (smbprotocol's
``smbclient`` module; aioftp), then download and upload through
``/api/v1/<protocol>/<id>/download|upload`` with a streaming HTTP client (curl
when installed, so the client's own cost stays small; else httpx). Each
transfer runs ``HOSTGATE_BENCH_REPEATS`` times (default 3), direct and gateway
alternating, and the best run counts. The gateway's resident memory is sampled
during its transfers; the growth over its idle RSS is reported.
``bench/files.py`` calls ``smb_rows`` / ``ftp_rows``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import Row, hostgate_server, print_table, rss_mib  # noqa: E402

MIB = 1024 * 1024
BLOCK = 4 * MIB
PASSWORD = "bench password 1"


CURL = shutil.which("curl")


def block() -> bytes:
    """One random block; files are this block repeated (nothing on the path compresses)."""
    return os.urandom(BLOCK)


def source_file(size: int) -> Path:
    """A local file of ``size`` bytes for uploads (written once per run)."""
    path = Path(tempfile.mkdtemp(prefix="hg-bench-src-")) / "source.bin"
    data = block()
    with path.open("wb") as handle:
        for _ in range(size // BLOCK):
            handle.write(data)
    return path


async def curl(*args: str, headers: dict[str, str]) -> int:
    """Run curl; fail on an HTTP error; return what ``-w`` printed as a number (or 0)."""
    header_args = [item for name, value in headers.items() for item in ("-H", f"{name}: {value}")]
    process = await asyncio.create_subprocess_exec(
        CURL or "curl", "-sS", "--fail", *header_args, *args, stdout=asyncio.subprocess.PIPE
    )
    output, _ = await process.communicate()
    if process.returncode:
        raise RuntimeError(f"curl failed with exit code {process.returncode}")
    text = output.decode().strip()
    return int(text) if text.isdigit() else 0


class RssSampler:
    """Peak RSS of a process (and children) while a transfer runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.idle = rss_mib(pid)
        self.peak = self.idle
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_mib(self.pid))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth(self) -> float:
        return self.peak - self.idle


def timed(function: Callable[[], Coroutine[Any, Any, int]]) -> float:
    """MB/s (10^6 bytes per second) of one transfer."""
    started = time.perf_counter()
    moved: int = asyncio.run(function())
    return moved / 1e6 / (time.perf_counter() - started)


REPEATS = max(1, int(os.environ.get("HOSTGATE_BENCH_REPEATS", "3")))
"""Each transfer runs this many times, direct and gateway alternating; the best counts."""


Transfer = Callable[[], Coroutine[Any, Any, int]]


def interleaved(
    gateway: Gateway,
    direct_upload: Transfer,
    direct_download: Transfer,
    gateway_upload: Transfer,
    gateway_download: Transfer,
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    """Best MB/s of direct and gateway transfers run alternately, and peak RSS growth.

    Alternating keeps a change in machine load from favouring one side; the
    best of several runs is the least disturbed one.
    """
    direct = [0.0, 0.0]
    through = [0.0, 0.0]
    rss = [0.0, 0.0]
    for _ in range(REPEATS):
        for index, (mine, theirs) in enumerate(
            ((direct_upload, gateway_upload), (direct_download, gateway_download))
        ):
            direct[index] = max(direct[index], timed(mine))
            speed, growth = gateway.measure(theirs)
            through[index] = max(through[index], speed)
            rss[index] = max(rss[index], growth)
    return (direct[0], direct[1]), (through[0], through[1]), (rss[0], rss[1])


# -- the gateway side ---------------------------------------------------------


class Gateway:
    """A logged-in admin on a running hostgate."""

    def __init__(self, url: str, token: str, pid: int) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}"}
        self.pid = pid

    @classmethod
    def setup(cls, url: str, pid: int) -> Gateway:
        response = httpx.post(
            f"{url}/api/v1/auth/setup",
            json={"username": "bench", "password": PASSWORD, "displayName": "Bench"},
        )
        response.raise_for_status()
        return cls(url, response.json()["token"], pid)

    def connection(self, body: dict[str, object]) -> str:
        response = httpx.post(f"{self.url}/api/v1/connections", json=body, headers=self.headers)
        response.raise_for_status()
        return str(response.json()["id"])

    def _url(self, protocol: str, connection_id: str, suffix: str, path: str) -> str:
        return f"{self.url}/api/v1/{protocol}/{connection_id}/{suffix}?path={quote(path)}"

    async def download(self, protocol: str, connection_id: str, path: str) -> int:
        """GET the file and discard it: curl when installed (a C client), else httpx."""
        url = self._url(protocol, connection_id, "download", path)
        if CURL:
            return await curl(
                "-o", "/dev/null", "-w", "%{size_download}", url, headers=self.headers
            )
        moved = 0
        async with (
            httpx.AsyncClient(timeout=600) as client,
            client.stream("GET", url, headers=self.headers) as response,
        ):
            response.raise_for_status()
            async for chunk in response.aiter_raw(BLOCK):
                moved += len(chunk)
        return moved

    async def upload(self, protocol: str, connection_id: str, path: str, source: Path) -> int:
        """POST a local file as the raw body, streamed from disk."""
        url = self._url(protocol, connection_id, "upload", path)
        size = source.stat().st_size
        if CURL:
            await curl(
                "-X", "POST", "-T", str(source), "-o", "/dev/null", url, headers=self.headers
            )
            return size

        async def body() -> AsyncIterator[bytes]:
            with source.open("rb") as handle:
                while chunk := handle.read(BLOCK):
                    yield chunk

        async with httpx.AsyncClient(timeout=600) as client:
            response = await client.post(
                url, content=body(), headers={**self.headers, "Content-Length": str(size)}
            )
            response.raise_for_status()
        return size

    def measure(self, run: Callable[[], Coroutine[Any, Any, int]]) -> tuple[float, float]:
        """(MB/s, RSS growth MiB) of one transfer through the gateway."""
        with RssSampler(self.pid) as sampler:
            speed = timed(run)
        return speed, sampler.growth


# -- SMB ------------------------------------------------------------------------


def smb_rows(gateway: Gateway, source: Path) -> list[Row]:
    """Start smbd, move ``size`` bytes each way directly and through the gateway."""
    import smbclient

    from testsupport.peers import stop
    from testsupport.samba import start_samba

    size = source.stat().st_size
    server, process = start_samba(Path(tempfile.mkdtemp(prefix="hg-bench-smb-")))
    try:
        unc = rf"\\{server.host}\files"
        kwargs = {"username": server.username, "password": server.password, "port": server.port}
        cache: dict[str, object] = {}
        smbclient.register_session(server.host, connection_cache=cache, **kwargs)
        shared = server.share_dir("files")

        async def direct_upload() -> int:
            # Both clients upload into a deleted target (file_rounds.upload_ways says why).
            (shared / "direct.bin").unlink(missing_ok=True)
            with (
                source.open("rb") as local,
                smbclient.open_file(
                    rf"{unc}\direct.bin", mode="wb", connection_cache=cache, **kwargs
                ) as handle,
            ):
                while data := local.read(BLOCK):
                    handle.write(data)
            return size

        async def direct_download() -> int:
            moved = 0
            with smbclient.open_file(
                rf"{unc}\direct.bin", mode="rb", buffering=0, connection_cache=cache, **kwargs
            ) as handle:
                while chunk := handle.read(BLOCK):
                    moved += len(chunk)
            return moved

        connection_id = gateway.connection(
            {
                "name": "bench smb",
                "protocol": "smb",
                "host": server.host,
                "port": server.port,
                "username": server.username,
                "password": server.password,
                "extraConfig": {"share": "files"},
            }
        )
        name = f"/gateway-{uuid.uuid4().hex[:6]}.bin"

        async def gateway_upload() -> int:
            (shared / name.lstrip("/")).unlink(missing_ok=True)
            return await gateway.upload("smb", connection_id, name, source)

        (direct_up, direct_down), (up, down), (up_rss, down_rss) = interleaved(
            gateway,
            direct_upload,
            direct_download,
            gateway_upload,
            lambda: gateway.download("smb", connection_id, name),
        )
        smbclient.reset_connection_cache(connection_cache=cache)
        assert (shared / name.lstrip("/")).stat().st_size == size
    finally:
        stop(process)
    return [
        Row("SMB download via gateway", down, "MB/s", direct_down, ">= 0.90x direct"),
        Row("SMB upload via gateway", up, "MB/s", direct_up, ">= 0.90x direct"),
        Row("SMB gateway RSS growth (max)", max(up_rss, down_rss), "MiB", None, "< 64 MiB"),
    ]


# -- FTP ------------------------------------------------------------------------


def ftp_rows(gateway: Gateway, source: Path) -> list[Row]:
    """Start vsftpd, move ``size`` bytes each way directly and through the gateway."""
    import aioftp

    from testsupport.ftpd import start_vsftpd
    from testsupport.peers import stop

    size = source.stat().st_size
    server, process = start_vsftpd(Path(tempfile.mkdtemp(prefix="hg-bench-ftp-")))
    try:

        async def direct_upload() -> int:
            async with (
                aioftp.Client.context(server.host, server.port) as client,
                client.upload_stream("/pub/direct.bin") as stream,
            ):
                with source.open("rb") as local:
                    while data := local.read(BLOCK):
                        await stream.write(data)
            return size

        async def direct_download() -> int:
            moved = 0
            async with (
                aioftp.Client.context(server.host, server.port) as client,
                client.download_stream("/pub/direct.bin") as stream,
            ):
                async for chunk in stream.iter_by_block(BLOCK):
                    moved += len(chunk)
            return moved

        connection_id = gateway.connection(
            {"name": "bench ftp", "protocol": "ftp", "host": server.host, "port": server.port}
        )
        name = f"/pub/gateway-{uuid.uuid4().hex[:6]}.bin"
        (direct_up, direct_down), (up, down), (up_rss, down_rss) = interleaved(
            gateway,
            direct_upload,
            direct_download,
            lambda: gateway.upload("ftp", connection_id, name, source),
            lambda: gateway.download("ftp", connection_id, name),
        )
        assert server.local(name).stat().st_size == size
    finally:
        stop(process)
    return [
        Row("FTP download via gateway", down, "MB/s", direct_down, ">= 0.80x direct"),
        Row("FTP upload via gateway", up, "MB/s", direct_up, ">= 0.80x direct"),
        Row("FTP gateway RSS growth (max)", max(up_rss, down_rss), "MiB", None, "< 64 MiB"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--only", choices=("smb", "ftp"))
    args = parser.parse_args()
    size = max(1, args.size_mib * MIB // BLOCK) * BLOCK
    rows: list[Row] = []
    source = source_file(size)
    try:
        with hostgate_server() as server:
            gateway = Gateway.setup(server.url, server.pid)
            if args.only in (None, "smb"):
                rows += smb_rows(gateway, source)
            if args.only in (None, "ftp"):
                rows += ftp_rows(gateway, source)
    finally:
        shutil.rmtree(source.parent, ignore_errors=True)
    client = "curl" if CURL else "httpx"
    print(
        f"file size {size // MIB} MiB, gateway HTTP client {client}, load {os.getloadavg()[0]:.1f}"
    )
    print_table(rows)


if __name__ == "__main__":
    main()
