"""API throughput at 32 clients (vs a bare Quart endpoint), login latency, idle RSS.

.venv/bin/python bench/api.py [--seconds 10] [--clients 32] [--rounds 3]

Each figure is the median of ``--rounds`` runs of ``--seconds``, taken in turns
with the baseline while both servers run; each ratio is the median of the
rounds' ratios (each against the baseline measured just before it).
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


def seed_connections(url: str, token: str, groups: int = 3, per_group: int = 6) -> int:
    """A realistic tree for ``GET /connections``: a few groups of SSH connections."""
    headers = {"Authorization": f"Bearer {token}"}
    made = 0
    with httpx.Client(base_url=url, headers=headers) as http:
        for g in range(groups):
            group = http.post("/api/v1/connections/groups", json={"name": f"group {g}"})
            group.raise_for_status()
            for c in range(per_group + (2 if g == 0 else 0)):
                body = {
                    "name": f"host {g}-{c}",
                    "protocol": "ssh",
                    "host": f"10.0.{g}.{c + 1}",
                    "port": 22,
                    "username": "ops",
                    "password": "not used",
                    "tags": ["bench"],
                    "groupId": group.json()["id"] if c % 4 else None,
                }
                http.post("/api/v1/connections", json=body).raise_for_status()
                made += 1
    return made


def interleaved(
    measure: dict[str, str], rounds: int, seconds: int, clients: int, token: str
) -> dict[str, list[float]]:
    """Requests/s of every URL, measured in turns, ``rounds`` times.

    The baseline and the gateway run side by side and are measured alternately,
    so a noisy neighbour slows both rather than skewing the ratio.
    """
    rates: dict[str, list[float]] = {name: [] for name in measure}
    for _ in range(rounds):
        for name, url in measure.items():
            rates[name].append(rate(url, seconds, clients, token if "/api/" in url else None))
    return rates


def run(seconds: int, clients: int, rounds: int = 3) -> list[Row]:
    rows: list[Row] = []
    port = free_port()
    bare = subprocess.Popen([sys.executable, str(Path(__file__).parent / "bare_app.py"), str(port)])
    try:
        with hostgate_server() as server:
            wait_http(f"http://127.0.0.1:{port}/ping")
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
                    f"{server.url}/api/v1/auth/login",
                    json={"username": "bench", "password": PASSWORD},
                )
                timings.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            listed = seed_connections(server.url, token)
            rates = interleaved(
                {
                    "bare": f"http://127.0.0.1:{port}/ping",
                    "health": f"{server.url}/api/v1/health",
                    "me": f"{server.url}/api/v1/auth/me",
                    "connections": f"{server.url}/api/v1/connections",
                },
                rounds,
                seconds,
                clients,
                token,
            )
            loaded = rss_mib(server.pid)
    finally:
        bare.terminate()
        bare.wait(10)
    baseline = median(rates["bare"])

    def against_baseline(name: str) -> float:
        pairs = zip(rates[name], rates["bare"], strict=True)
        return median([value / base for value, base in pairs])

    rows += [
        Row("bare Quart /ping (baseline)", baseline, "/s"),
        Row(
            "GET /api/v1/health",
            median(rates["health"]),
            "/s",
            baseline,
            measured_ratio=against_baseline("health"),
        ),
        Row(
            f"GET /api/v1/auth/me @{clients}",
            median(rates["me"]),
            "/s",
            baseline,
            ">= 0.6x",
            measured_ratio=against_baseline("me"),
        ),
        Row(
            f"GET /api/v1/connections @{clients} ({listed} in 3 groups)",
            median(rates["connections"]),
            "/s",
            baseline,
            ">= 0.6x",
            measured_ratio=against_baseline("connections"),
        ),
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
    parser.add_argument("--rounds", type=int, default=3, help="alternating measurements")
    args = parser.parse_args()
    print_table(run(args.seconds, args.clients, args.rounds))


if __name__ == "__main__":
    main()
