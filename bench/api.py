"""API throughput at 32 clients (vs a bare Quart endpoint), login latency, idle RSS.

.venv/bin/python bench/api.py [--seconds 10] [--clients 32] [--rounds 3]
    [--against DIR] [--profile DIR]

Each figure is the median of ``--rounds`` runs of ``--seconds``, taken in turns
with the baseline while both servers run; each ratio is the median of the
rounds' ratios (each against the baseline measured just before it). Besides
requests/s, the gateway's CPU microseconds per request (user + system of its
process over the run, divided by the requests wrk counted) are printed: on a
shared machine they move far less than the rate.

``--against DIR``: a second gateway runs the kernel of another checkout (for
example ``git worktree add /tmp/before integrate``) and is measured in the same
rounds, so a change is compared on and off in one run. ``--profile DIR``: after
the rounds, py-spy (when installed) records the gateway under load on each
endpoint and writes flame graphs (SVG) into DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

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


def wrk(url: str, seconds: int, clients: int, token: str | None = None) -> tuple[float, int] | None:
    """Requests/s and requests from wrk when installed (a separate, fast load generator)."""
    if not shutil.which("wrk"):
        return None
    command = ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", url]
    if token:
        command[1:1] = ["-H", f"Authorization: Bearer {token}"]
    output = subprocess.run(command, capture_output=True, text=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", output)
    count = re.search(r"(\d+) requests in", output)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    if non2xx:
        raise RuntimeError(f"{url}: {non2xx.group(1)} error responses under load")
    if not match or not count:
        return None
    return float(match.group(1)), int(count.group(1))


async def httpx_rate(
    url: str, seconds: int, clients: int, token: str | None = None
) -> tuple[float, int]:
    """Requests/s and requests from an asyncio httpx client (fallback when wrk is absent)."""
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
    return done / seconds, done


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (every thread)."""
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


@dataclass
class Target:
    """One URL to load, and the process whose CPU it costs."""

    url: str
    pid: int
    token: str | None = None


def rate(target: Target, seconds: int, clients: int) -> tuple[float, float]:
    """Requests/s, and the serving process's CPU microseconds per request."""
    cpu = cpu_seconds(target.pid)
    measured = wrk(target.url, seconds, clients, target.token)
    if measured is None:
        measured = asyncio.run(httpx_rate(target.url, seconds, clients, target.token))
    spent = cpu_seconds(target.pid) - cpu
    per_second, requests = measured
    return per_second, 1e6 * spent / max(requests, 1)


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
    measure: dict[str, Target], rounds: int, seconds: int, clients: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Requests/s and CPU µs per request of every target, measured in turns, ``rounds`` times.

    The baseline and the gateway run side by side and are measured alternately,
    so a noisy neighbour slows both rather than skewing the ratio.
    """
    rates: dict[str, list[float]] = {name: [] for name in measure}
    costs: dict[str, list[float]] = {name: [] for name in measure}
    for _ in range(rounds):
        for name, target in measure.items():
            per_second, cpu_ms = rate(target, seconds, clients)
            rates[name].append(per_second)
            costs[name].append(cpu_ms)
    return rates, costs


def sign_up(url: str) -> str:
    """The first admin's token on a fresh gateway."""
    setup = httpx.post(
        f"{url}/api/v1/auth/setup",
        json={"username": "bench", "password": PASSWORD, "displayName": "Bench"},
    )
    setup.raise_for_status()
    return str(setup.json()["token"])


def profile(target: Target, seconds: int, clients: int, svg: Path) -> None:
    """A py-spy flame graph of the serving process while wrk loads ``target``."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("py-spy is not installed: no profile", file=sys.stderr)
        return
    svg.parent.mkdir(parents=True, exist_ok=True)
    recorder = subprocess.Popen(
        [
            spy,
            "record",
            "--pid",
            str(target.pid),
            "--rate",
            "250",
            "--duration",
            str(seconds),
            "--format",
            "flamegraph",
            "--output",
            str(svg),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1)
    rate(target, seconds, clients)
    recorder.wait(60)


def run(
    seconds: int,
    clients: int,
    rounds: int = 3,
    *,
    against: Path | None = None,
    profile_dir: Path | None = None,
) -> list[Row]:
    rows: list[Row] = []
    port = free_port()
    bare = subprocess.Popen([sys.executable, str(Path(__file__).parent / "bare_app.py"), str(port)])
    with ExitStack() as stack:
        stack.callback(bare.wait, 10)
        stack.callback(bare.terminate)
        server = stack.enter_context(hostgate_server())
        other = None
        if against is not None:
            source = str(against.resolve() / "kernel" / "src")
            other = stack.enter_context(hostgate_server({"PYTHONPATH": source}))
        wait_http(f"http://127.0.0.1:{port}/ping")
        idle = rss_mib(server.pid)
        token = sign_up(server.url)
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
        measure = {
            "bare": Target(f"http://127.0.0.1:{port}/ping", bare.pid),
            "health": Target(f"{server.url}/api/v1/health", server.pid),
            "me": Target(f"{server.url}/api/v1/auth/me", server.pid, token),
            "connections": Target(f"{server.url}/api/v1/connections", server.pid, token),
        }
        if other is not None:
            other_token = sign_up(other.url)
            seed_connections(other.url, other_token)
            measure["me (against)"] = Target(f"{other.url}/api/v1/auth/me", other.pid, other_token)
            measure["connections (against)"] = Target(
                f"{other.url}/api/v1/connections", other.pid, other_token
            )
        rates, costs = interleaved(measure, rounds, seconds, clients)
        loaded = rss_mib(server.pid)
        if profile_dir is not None:
            for name in ("me", "connections"):
                profile(measure[name], seconds, clients, profile_dir / f"api-{name}.svg")
    baseline = median(rates["bare"])

    def against_baseline(name: str) -> float:
        pairs = zip(rates[name], rates["bare"], strict=True)
        return median([value / base for value, base in pairs])

    def cpu_row(name: str, label: str) -> Row:
        pairs = zip(costs[name], costs["bare"], strict=True)
        return Row(
            f"{label}: CPU per request",
            median(costs[name]),
            "µs",
            median(costs["bare"]),
            measured_ratio=median([value / base for value, base in pairs]),
        )

    rows += [
        Row("bare Quart /ping (baseline)", baseline, "/s"),
        Row("bare Quart /ping: CPU per request", median(costs["bare"]), "µs"),
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
            ">= 0.85x",
            measured_ratio=against_baseline("me"),
        ),
        cpu_row("me", "GET /api/v1/auth/me"),
        Row(
            f"GET /api/v1/connections @{clients} ({listed} in 3 groups)",
            median(rates["connections"]),
            "/s",
            baseline,
            ">= 0.85x",
            measured_ratio=against_baseline("connections"),
        ),
        cpu_row("connections", "GET /api/v1/connections"),
    ]
    if other is not None:
        for name in ("me", "connections"):
            rows += [
                Row(
                    f"  {name} on {against}",
                    median(rates[f"{name} (against)"]),
                    "/s",
                    baseline,
                    measured_ratio=against_baseline(f"{name} (against)"),
                ),
                cpu_row(f"{name} (against)", f"  {name} on {against}"),
            ]
    rows += [
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
    parser.add_argument("--against", type=Path, help="a checkout whose kernel runs alongside")
    parser.add_argument("--profile", type=Path, help="write py-spy flame graphs here")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    rows = run(
        args.seconds, args.clients, args.rounds, against=args.against, profile_dir=args.profile
    )
    print_table(rows)
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
