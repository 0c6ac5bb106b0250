"""Recordings in an S3-compatible bucket against recordings on local disk (issue 33).

.venv/bin/python bench/recordings_bucket.py [--size 64] [--rounds 3] [--range-mib 256]

Two real ``hostgate serve`` gateways run side by side, one recording to its data
directory (the default) and one to a bucket on the test suite's S3-compatible server
(``testsupport.s3server``: Ceph radosgw where installed, else moto's server), both in
front of one OpenSSH sshd (``testsupport.sshd``, needs root for its login user).
Printed, rounds alternating between the two:

- terminal ``cat`` of a ``--size`` MiB text file through ``/ws/ssh`` with recording on
  (the default): MB/s to the bucket and to local disk. Target: bucket >= 0.9x local.
- a ``--range-mib`` MiB RDP recording (uploaded, finalized) read back with one large
  ``Range`` request (all but its first byte): MB/s from the bucket and from local disk.
  Target: bucket >= 0.8x local. ``--range-mib 1024`` is the issue's 1 GiB WebM.

Both gateways and the S3 server share the machine: the ratios are of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (  # noqa: E402
    Row,
    cpu_seconds,
    hostgate_server,
    median,
    print_table,
    socket_cat,
    text_file,
)
from terminal import Gateway  # noqa: E402

MIB = 1024 * 1024
UPLOAD_PIECE = 8 * MIB


def bucket_env(server: Any) -> dict[str, str]:
    """The gateway's environment for recordings in a fresh prefix of ``server``'s bucket."""
    settings = server.config()
    return {
        "HOSTGATE_RECORDINGS_URL": settings["recordings_url"],
        "HOSTGATE_S3_ENDPOINT_URL": settings["s3_endpoint_url"],
        "HOSTGATE_S3_REGION": settings["s3_region"],
        "HOSTGATE_S3_ACCESS_KEY_ID": settings["s3_access_key_id"],
        "HOSTGATE_S3_SECRET_ACCESS_KEY": settings["s3_secret_access_key"],
    }


async def cat_rate(gateway: Gateway, path: Path, pid: int) -> tuple[float, float]:
    """MB/s of one ``cat`` through the gateway (recording on), and its CPU ms per MiB."""
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        socket = await gateway.open(http, deflate=False)
    cpu = cpu_seconds(pid)
    moved, elapsed = await socket_cat(socket, path)
    await asyncio.sleep(1)  # the recording's close (the last part, the upload's completion)
    return moved / MIB / elapsed, (cpu_seconds(pid) - cpu) * 1000 / (moved / MIB)


def pieces(total: int) -> Iterator[bytes]:
    block = os.urandom(UPLOAD_PIECE)
    for start in range(0, total, UPLOAD_PIECE):
        yield block[: min(UPLOAD_PIECE, total - start)]


def recorded_webm(gateway: Gateway, total: int) -> str:
    """An RDP session whose recording holds ``total`` bytes; its id."""
    created = httpx.post(
        f"{gateway.url}/api/v1/connections",
        json={"name": "desk", "protocol": "rdp", "host": "127.0.0.1", "port": 3389},
        headers=gateway.headers,
    )
    created.raise_for_status()
    started = httpx.post(
        f"{gateway.url}/api/v1/sessions/rdp-session",
        json={"connectionId": created.json()["id"]},
        headers=gateway.headers,
    )
    started.raise_for_status()
    session_id = str(started.json()["sessionId"])
    url = f"{gateway.url}/api/v1/sessions/{session_id}/recording"
    for piece in pieces(total):
        httpx.post(f"{url}/chunk", content=piece, headers=gateway.headers, timeout=120)
    httpx.post(f"{url}/finalize", headers=gateway.headers, timeout=120).raise_for_status()
    return session_id


def range_rate(gateway: Gateway, session_id: str, total: int) -> float:
    """MB/s of one ``Range: bytes=1-`` read of the recording, streamed and dropped."""
    url = f"{gateway.url}/api/v1/sessions/{session_id}/recording"
    headers = {**gateway.headers, "Range": f"bytes=1-{total - 1}"}
    start = time.perf_counter()
    moved = 0
    with httpx.stream("GET", url, headers=headers, timeout=600) as response:
        response.raise_for_status()
        for data in response.iter_bytes(MIB):
            moved += len(data)
    assert moved == total - 1, moved
    return moved / MIB / (time.perf_counter() - start)


def measure(size: int, rounds: int, range_mib: int) -> list[Row]:
    """Both gateways, the cat and the range read; the rows (run_all's ``recordings``)."""
    from testsupport.s3server import one_cluster_at_a_time, started_s3
    from testsupport.sshd import start_sshd

    sshd = start_sshd()
    text = Path(tempfile.mkdtemp(prefix="hg-bench-text-")) / "cat.txt"
    text_file(text, size)
    text.parent.chmod(0o755)
    text.chmod(0o644)
    rows: list[Row] = []
    try:
        with ExitStack() as stack:
            stack.enter_context(one_cluster_at_a_time())
            # room for the range read's object and the cats' recordings (radosgw's memstore)
            room = (range_mib + rounds * size * 2) * MIB + 512 * MIB
            s3 = stack.enter_context(started_s3(room))
            print(f"S3-compatible server: {s3.kind}")
            local_server = stack.enter_context(hostgate_server())
            bucket_server = stack.enter_context(hostgate_server(bucket_env(s3)))
            local, bucket = Gateway(local_server.url), Gateway(bucket_server.url)
            pids = {"local": local_server.pid, "bucket": bucket_server.pid}
            for gateway in (local, bucket):
                gateway.add_connection(sshd)
            cats: dict[str, list[float]] = {"local": [], "bucket": []}
            cpus: dict[str, list[float]] = {"local": [], "bucket": []}
            ratios = []
            for _ in range(rounds):
                for name, gateway in (("local", local), ("bucket", bucket)):
                    rate, cpu = asyncio.run(cat_rate(gateway, text, pids[name]))
                    cats[name].append(rate)
                    cpus[name].append(cpu)
                ratios.append(cats["bucket"][-1] / cats["local"][-1])
            rows.append(
                Row(
                    f"cat {size} MiB, recording to the bucket",
                    median(cats["bucket"]),
                    "MB/s",
                    baseline=median(cats["local"]),
                    target=">= 0.9x local disk",
                    measured_ratio=median(ratios),
                )
            )
            rows.append(
                Row(
                    "  gateway CPU per MiB of that cat, bucket",
                    median(cpus["bucket"]),
                    "ms",
                    baseline=median(cpus["local"]),
                    target="(load-robust: lower is better)",
                )
            )
            total = range_mib * MIB
            ids = {
                name: recorded_webm(g, total) for name, g in (("local", local), ("bucket", bucket))
            }
            reads: dict[str, list[float]] = {"local": [], "bucket": []}
            ratios = []
            for _ in range(rounds):
                reads["local"].append(range_rate(local, ids["local"], total))
                reads["bucket"].append(range_rate(bucket, ids["bucket"], total))
                ratios.append(reads["bucket"][-1] / reads["local"][-1])
            rows.append(
                Row(
                    f"range read of {range_mib} MiB from the bucket",
                    median(reads["bucket"]),
                    "MB/s",
                    baseline=median(reads["local"]),
                    target=">= 0.8x local disk",
                    measured_ratio=median(ratios),
                )
            )
    finally:
        sshd.stop()
        text.unlink(missing_ok=True)
        text.parent.rmdir()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=64, help="MiB of text to cat")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--range-mib", type=int, default=256, help="MiB of the range read")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    print_table(measure(args.size, args.rounds, args.range_mib))
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
