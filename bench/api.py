"""API throughput at 32 clients (vs a bare Quart endpoint), login latency, idle RSS.

.venv/bin/python bench/api.py [--seconds 10] [--clients 32]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    Row,
    free_port,
    hostgate_server,
    median,
    percentile,
    print_table,
    rss_mib,
    wait_http,
)

PASSWORD = "bench password 1"


def wrk(url: str, seconds: int, clients: int, token: str | None = None) -> float | None:
    """Requests/s from wrk when installed (a separate, fast load generator)."""
    if not shutil.which("wrk"):
        return None
    command = ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", url]
    if token:
        command[1:1] = ["-H", f"Authorization: Bearer {token}"]
    output = subprocess.run(command, capture_output=True, text=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", output)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    if non2xx:
        raise RuntimeError(f"{url}: {non2xx.group(1)} error responses under load")
    return float(match.group(1)) if match else None


async def httpx_rate(url: str, seconds: int, clients: int, token: str | None = None) -> float:
    """Requests/s from an asyncio httpx client (fallback when wrk is absent)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    done = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal done
            while time.monotonic() < deadline:
                response = await client.get(url)
                response.raise_for_status()
                done += 1

        await asyncio.gather(*(worker() for _ in range(clients)))
    return done / seconds


def rate(url: str, seconds: int, clients: int, token: str | None = None) -> float:
    measured = wrk(url, seconds, clients, token)
    if measured is None:
        measured = asyncio.run(httpx_rate(url, seconds, clients, token))
    return measured


def run(seconds: int, clients: int) -> list[Row]:
    rows: list[Row] = []
    port = free_port()
    bare = subprocess.Popen([sys.executable, str(Path(__file__).parent / "bare_app.py"), str(port)])
    try:
        wait_http(f"http://127.0.0.1:{port}/ping")
        baseline = rate(f"http://127.0.0.1:{port}/ping", seconds, clients)
    finally:
        bare.terminate()
        bare.wait(10)
    with hostgate_server() as server:
        idle = rss_mib(server.pid)
        setup = httpx.post(
            f"{server.url}/api/v1/auth/setup",
            json={"username": "bench", "password": PASSWORD, "displayName": "Bench"},
        )
        setup.raise_for_status()
        token = setup.json()["token"]
        timings = []
        for _ in range(20):
            started = time.perf_counter()
            response = httpx.post(
                f"{server.url}/api/v1/auth/login", json={"username": "bench", "password": PASSWORD}
            )
            timings.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
        me = rate(f"{server.url}/api/v1/auth/me", seconds, clients, token)
        connections = rate(f"{server.url}/api/v1/connections", seconds, clients, token)
        health = rate(f"{server.url}/api/v1/health", seconds, clients)
        loaded = rss_mib(server.pid)
    rows += [
        Row("bare Quart /ping (baseline)", baseline, "/s"),
        Row("GET /api/v1/health", health, "/s", baseline),
        Row(f"GET /api/v1/auth/me @{clients}", me, "/s", baseline, ">= 0.6x"),
        Row(f"GET /api/v1/connections @{clients}", connections, "/s", baseline, ">= 0.6x"),
        Row("login latency p50 (argon2id)", median(timings), "ms", None, "< 100 ms"),
        Row("login latency p95", percentile(timings, 95), "ms"),
        Row("gateway RSS idle", idle, "Mi"),
        Row("gateway RSS after load", loaded, "Mi"),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--clients", type=int, default=32)
    args = parser.parse_args()
    print_table(run(args.seconds, args.clients))


if __name__ == "__main__":
    main()
