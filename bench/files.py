"""File throughput through the gateway vs a direct client on the same server, same run.

.venv/bin/python bench/files.py [--size 1024] [--only sftp|smb|ftp]

A real ``hostgate serve`` (hypercorn) runs on a free port. For each protocol the
same file (``--size`` MiB of random bytes) is moved four ways: direct download
and upload with the protocol's Python client, then download and upload through
``/api/v1/<protocol>/<id>/download|upload`` with a streaming HTTP client (curl
when installed, else httpx). Printed: MB/s, the ratio to the direct client, and
the gateway's resident memory (peak, and growth over its idle RSS while a
transfer runs, sampled with psutil). For SFTP it also prints the CPU seconds per
GiB the gateway process spends against those of the direct client: on a small
machine where the SSH server, the gateway and the HTTP client compete for the
same cores, that figure shows the gateway's own cost better than MB/s.

One function per protocol returns its rows: ``sftp_rows`` here (OpenSSH sshd;
the direct client is asyncssh with the same cipher preference as the gateway's
SFTP adapter, AES-GCM first, and, for reference, with asyncssh's defaults),
``smb_rows`` and ``ftp_rows`` in
``files_smb_ftp.py``. Targets: SFTP >= 0.95x direct both ways, SMB >= 0.9x,
FTP >= 0.8x both ways; RSS growth < 64 MiB. ``file_rounds.py`` measures the same
transfers in alternating rounds with CPU per GiB, profiles and the parallel curve.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import Row, cpu_seconds, hostgate_server, print_table, rss_mib  # noqa: E402
from files_smb_ftp import (  # noqa: E402
    BLOCK,
    CURL,
    MIB,
    Gateway,
    RssSampler,
    ftp_rows,
    smb_rows,
    source_file,
    timed,
)


def sftp_rows(gateway: Gateway, source: Path) -> list[Row]:
    """Start sshd; move the file directly with asyncssh and through the gateway, both ways."""
    import asyncssh
    from hostgate_ssh.sftp import TRANSFER_CIPHERS

    from testsupport.sshd import start_sshd

    size = source.stat().st_size
    gib = 2**30 / size
    server = start_sshd()
    name = f"bench-{uuid.uuid4().hex[:6]}"
    direct_path = server.home / f"{name}-direct.bin"
    gateway_path = server.home / f"{name}-gateway.bin"
    try:

        async def client(ciphers: Sequence[str] | None) -> asyncssh.SSHClientConnection:
            options: dict[str, Any] = {"encryption_algs": ciphers} if ciphers else {}
            return await asyncssh.connect(
                server.host,
                server.port,
                username=server.username,
                password=server.password,
                known_hosts=None,
                client_keys=(),
                agent_path=None,
                config=None,
                **options,
            )

        def direct_upload(ciphers: Sequence[str] | None) -> Callable[[], Awaitable[int]]:
            async def run() -> int:
                async with (
                    await client(ciphers) as connection,
                    connection.start_sftp_client() as sftp,
                ):
                    await sftp.put(str(source), str(direct_path))
                return size

            return run

        def direct_download(ciphers: Sequence[str] | None) -> Callable[[], Awaitable[int]]:
            async def run() -> int:
                async with (
                    await client(ciphers) as connection,
                    connection.start_sftp_client() as sftp,
                ):
                    await sftp.get(str(direct_path), os.devnull)
                return size

            return run

        connection_id = gateway.connection(
            {
                "name": "bench sftp",
                "protocol": "sftp",
                "host": server.host,
                "port": server.port,
                "username": server.username,
                "password": server.password,
            }
        )
        default_up = timed(direct_upload(None))
        default_down = timed(direct_download(None))
        direct_up, direct_up_cpu = timed_cpu(direct_upload(TRANSFER_CIPHERS))
        direct_down, direct_down_cpu = timed_cpu(direct_download(TRANSFER_CIPHERS))
        # the first request pays the SSH handshake and host-key trust; transfers reuse it
        asyncio.run(gateway_list(gateway, connection_id, str(server.home)))
        target = str(gateway_path)
        up, up_rss, up_peak, up_cpu = measure(
            gateway, lambda: gateway.upload("sftp", connection_id, target, source)
        )
        down, down_rss, down_peak, down_cpu = measure(
            gateway, lambda: gateway.download("sftp", connection_id, target)
        )
        assert gateway_path.stat().st_size == size, "the gateway upload is incomplete"
        assert direct_path.stat().st_size == size, "the direct upload is incomplete"
    finally:
        for path in (direct_path, gateway_path):
            path.unlink(missing_ok=True)
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
    return [
        Row("SFTP download via gateway", down, "MB/s", direct_down, ">= 0.95x direct"),
        Row("SFTP upload via gateway", up, "MB/s", direct_up, ">= 0.95x direct"),
        Row("SFTP download via gateway vs asyncssh defaults", down, "MB/s", default_down, ""),
        Row("SFTP upload via gateway vs asyncssh defaults", up, "MB/s", default_up, ""),
        Row("SFTP gateway RSS growth (max)", max(up_rss, down_rss), "MiB", None, "< 64 MiB"),
        Row("SFTP gateway RSS peak", max(up_peak, down_peak), "MiB", None, ""),
        Row(
            "SFTP download CPU s/GiB, gateway vs client", down_cpu * gib, "s", direct_down_cpu * gib
        ),
        Row("SFTP upload CPU s/GiB, gateway vs client", up_cpu * gib, "s", direct_up_cpu * gib),
    ]


async def gateway_list(gateway: Gateway, connection_id: str, path: str) -> None:
    import httpx

    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(
            f"{gateway.url}/api/v1/sftp/{connection_id}/list",
            json={"path": path},
            headers=gateway.headers,
        )
        response.raise_for_status()


def timed_cpu(run: Callable[[], Awaitable[int]]) -> tuple[float, float]:
    """(MB/s, CPU seconds of this process) of one direct transfer."""
    started = time.process_time()
    speed = timed(run)
    return speed, time.process_time() - started


def measure(
    gateway: Gateway, run: Callable[[], Awaitable[int]]
) -> tuple[float, float, float, float]:
    """(MB/s, RSS growth MiB, RSS peak MiB, CPU seconds) of one transfer through the gateway."""
    started = cpu_seconds(gateway.pid, tree=True)
    with RssSampler(gateway.pid) as sampler:
        speed = timed(run)
    return speed, sampler.growth, sampler.peak, cpu_seconds(gateway.pid, tree=True) - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="file size in MiB (default 1024)")
    parser.add_argument("--only", choices=("sftp", "smb", "ftp"))
    args = parser.parse_args()
    size = max(1, args.size * MIB // BLOCK) * BLOCK
    rows: list[Row] = []
    source = source_file(size)
    try:
        with hostgate_server() as server:
            gateway = Gateway.setup(server.url, server.pid)
            idle = rss_mib(server.pid)
            if args.only in (None, "sftp"):
                rows += sftp_rows(gateway, source)
            if args.only in (None, "smb"):
                rows += smb_rows(gateway, source)
            if args.only in (None, "ftp"):
                rows += ftp_rows(gateway, source)
    finally:
        shutil.rmtree(source.parent, ignore_errors=True)
    client = "curl" if CURL else "httpx"
    print(
        f"file size {size // MIB} MiB, gateway HTTP client {client}, gateway idle RSS "
        f"{idle:.0f} MiB, load {os.getloadavg()[0]:.1f}"
    )
    print_table(rows)


if __name__ == "__main__":
    main()
