"""Load: N SSH terminals through /ws/ssh and M API clients at once, for a while.

.venv/bin/python bench/load.py [--terminals 200] [--api-clients 50] [--seconds 600]
                               [--interval 5] [--think 1]

Starts a real OpenSSH ``sshd`` (testsupport/sshd.py) and a real ``hostgate serve``,
creates an admin and one SSH connection, raises ``security.max_sessions_per_user``
to fit, then:

- each terminal gets a ticket (``POST /auth/ws-ticket``), opens
  ``/ws/ssh?ticket=...&connectionId=...``, waits for its shell, and every
  ``--interval`` seconds (jittered) types ``echo m$((k+1000000))`` and waits for
  the computed output (the typed echo cannot match it); at the end it types
  ``exit`` and expects close code 1000. Terminals open in batches of 10.
- each API client loops over ``GET /connections``, ``GET /audit`` and
  ``GET /sessions`` with ``--think`` seconds between requests.

Any failure is an error: a socket that cannot open or closes early, a command
whose output does not come back within 30 s, an API answer other than 200, a
transport error. Printed: errors (must be zero), terminal rounds, API requests,
API latency p50/p95/max, and the gateway's RSS (idle, with every terminal open,
peak). ``run_load`` is what ``tests/load/test_short_load.py`` runs in CI with a
few terminals for a few seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (  # noqa: E402
    Row,
    cpu_seconds,
    hostgate_server,
    median,
    percentile,
    print_table,
    rss_mib,
)

PASSWORD = "load test password 1"
OPEN_BATCH = 10
COMMAND_TIMEOUT = 30.0
OPEN_TIMEOUT = 60.0
API_PATHS = (
    "/api/v1/connections",
    "/api/v1/audit?page=1&limit=25",
    "/api/v1/sessions?page=1&limit=25",
)
MAX_ERRORS_KEPT = 50


@dataclass
class LoadReport:
    """What a load run saw."""

    terminals: int
    api_clients: int
    seconds: float
    terminal_rounds: int = 0
    terminals_opened: int = 0
    api_latencies_ms: list[float] = field(default_factory=list)
    path_latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    rss_idle_mib: float = 0.0
    rss_open_mib: float = 0.0
    rss_peak_mib: float = 0.0
    open_seconds: float = 0.0
    gateway_cores: float = 0.0
    client_cores: float = 0.0

    def error(self, text: str) -> None:
        """Count an error (the first few are kept verbatim)."""
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(text)

    def rows(self) -> list[Row]:
        """The figures as bench table rows."""
        n, m = self.terminals, self.api_clients
        return [
            Row(f"load errors ({n} terminals, {m} API clients)", self.error_count, "", None, "0"),
            Row("load terminal command round trips", self.terminal_rounds, ""),
            Row("load API requests", len(self.api_latencies_ms), ""),
            Row("load API latency p50", median(self.api_latencies_ms), "ms"),
            Row("load API latency p95", percentile(self.api_latencies_ms, 95), "ms"),
            Row("load API latency max", max(self.api_latencies_ms, default=0.0), "ms"),
            *(
                Row(f"load API p95 {path.split('?')[0]}", percentile(values, 95), "ms")
                for path, values in sorted(self.path_latencies_ms.items())
            ),
            Row(f"load seconds to open {n} terminals", self.open_seconds, "s"),
            Row("gateway CPU under load (cores busy)", self.gateway_cores, ""),
            Row("load generator CPU (cores busy)", self.client_cores, ""),
            Row("gateway RSS idle (load run)", self.rss_idle_mib, "Mi"),
            Row(f"gateway RSS with {n} terminals", self.rss_open_mib, "Mi", None, "< 512 MiB"),
            Row("gateway RSS peak under load", self.rss_peak_mib, "Mi"),
        ]


@dataclass
class Target:
    """A running gateway with an admin token and an SSH connection to drive."""

    url: str
    token: str
    connection_id: str
    pid: int | None = None

    @property
    def headers(self) -> dict[str, str]:
        """Bearer authorization."""
        return {"Authorization": f"Bearer {self.token}"}


def prepare(url: str, sshd: Any, *, pid: int | None, terminals: int) -> Target:
    """Set up the first admin, one SSH connection to ``sshd``, and a session cap that fits."""
    setup = httpx.post(
        f"{url}/api/v1/auth/setup",
        json={"username": "load", "password": PASSWORD, "displayName": "Load"},
        timeout=60,
    )
    setup.raise_for_status()
    token = setup.json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    settings = httpx.put(
        f"{url}/api/v1/settings",
        json={
            "security.max_sessions_per_user": max(10, terminals + 10),
            "security.max_sessions_total": max(500, terminals + 10),
        },
        headers=headers,
        timeout=60,
    )
    settings.raise_for_status()
    created = httpx.post(
        f"{url}/api/v1/connections",
        json={
            "name": "load sshd",
            "protocol": "ssh",
            "host": sshd.host,
            "port": sshd.port,
            "username": sshd.username,
            "password": sshd.password,
        },
        headers=headers,
        timeout=60,
    )
    created.raise_for_status()
    return Target(url, token, str(created.json()["id"]), pid)


class Terminal:
    """One SSH terminal through the gateway socket."""

    def __init__(self, number: int, target: Target, http: httpx.AsyncClient) -> None:
        self.number = number
        self.target = target
        self.http = http
        self.socket: Any = None
        self.buffer = bytearray()

    async def open(self) -> None:
        """Ticket, socket, ``Connected``, a working shell."""
        from websockets.asyncio.client import connect

        response = await self.http.post("/api/v1/auth/ws-ticket", headers=self.target.headers)
        response.raise_for_status()
        query = urlencode(
            {
                "ticket": response.json()["ticket"],
                "connectionId": self.target.connection_id,
                "cols": 80,
                "rows": 24,
            }
        )
        ws_url = self.target.url.replace("http", "ws", 1) + f"/ws/ssh?{query}"
        self.socket = await connect(ws_url, max_size=None, open_timeout=OPEN_TIMEOUT)
        status = await asyncio.wait_for(self.socket.recv(), OPEN_TIMEOUT)
        message = json.loads(status) if isinstance(status, str) else {}
        if message != {"type": "status", "message": "Connected"}:
            raise RuntimeError(f"expected Connected, got {status!r}")
        await self.command(0, OPEN_TIMEOUT)

    async def command(self, round_number: int, timeout: float = COMMAND_TIMEOUT) -> None:
        """Type a command whose output differs from its echo; wait for the output."""
        wanted = f"m{round_number + 1000000}".encode()
        self.buffer.clear()
        typed = f"echo m$(({round_number}+1000000))\r"
        await self.socket.send(json.dumps({"type": "data", "data": typed}))
        deadline = time.monotonic() + timeout
        while wanted not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no output for round {round_number}")
            frame = await asyncio.wait_for(self.socket.recv(), left)
            if isinstance(frame, bytes):
                self.buffer += frame
                del self.buffer[:-4096]

    async def close(self) -> int | None:
        """Type ``exit``; the close code the gateway sends."""
        from websockets.exceptions import ConnectionClosed

        await self.socket.send(json.dumps({"type": "data", "data": "exit\r"}))
        try:
            while True:
                await asyncio.wait_for(self.socket.recv(), COMMAND_TIMEOUT)
        except ConnectionClosed:
            pass
        code: int | None = self.socket.close_code
        return code

    async def abort(self) -> None:
        """Drop the socket after a failure."""
        if self.socket is not None:
            with contextlib.suppress(Exception):
                await self.socket.close()


async def _terminal_life(
    terminal: Terminal,
    report: LoadReport,
    opened: asyncio.Event,
    deadline: asyncio.Event,
    interval: float,
) -> None:
    try:
        await terminal.open()
        report.terminals_opened += 1
    except Exception as exc:
        report.error(f"terminal {terminal.number}: open failed: {exc!r}")
        opened.set()
        await terminal.abort()
        return
    opened.set()
    rounds = 0
    try:
        while not deadline.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(deadline.wait(), interval * random.uniform(0.5, 1.5))
            if deadline.is_set():
                break
            rounds += 1
            await terminal.command(rounds)
            report.terminal_rounds += 1
        code = await terminal.close()
        if code != 1000:
            report.error(f"terminal {terminal.number}: closed with {code}, not 1000")
    except Exception as exc:
        report.error(f"terminal {terminal.number}: round {rounds}: {exc!r}")
        await terminal.abort()


async def _api_client(
    number: int,
    target: Target,
    http: httpx.AsyncClient,
    report: LoadReport,
    stop: asyncio.Event,
    think: float,
) -> None:
    turn = number
    while not stop.is_set():
        path = API_PATHS[turn % len(API_PATHS)]
        turn += 1
        began = time.perf_counter()
        try:
            response = await http.get(path, headers=target.headers)
            elapsed = (time.perf_counter() - began) * 1000
            if response.status_code != 200:
                report.error(f"api {path}: {response.status_code} {response.text[:200]}")
            else:
                report.api_latencies_ms.append(elapsed)
                report.path_latencies_ms.setdefault(path, []).append(elapsed)
        except httpx.HTTPError as exc:
            report.error(f"api {path}: {exc!r}")
        if think > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), think * random.uniform(0.5, 1.5))


async def _sample_rss(pid: int, report: LoadReport, stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(Exception):
            report.rss_peak_mib = max(report.rss_peak_mib, rss_mib(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of the gateway so far (0 when not known)."""
    return 0.0 if pid is None else cpu_seconds(pid)


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def run_load(
    target: Target,
    *,
    terminals: int,
    api_clients: int,
    seconds: float,
    interval: float = 5.0,
    think: float = 1.0,
) -> LoadReport:
    """Hold ``terminals`` SSH terminals while ``api_clients`` poll the API for ``seconds``.

    Terminals open first (in batches), then the clock starts; the report counts
    every error.
    """
    report = LoadReport(terminals, api_clients, seconds)
    pid = target.pid
    if pid is not None:
        report.rss_idle_mib = report.rss_peak_mib = rss_mib(pid)
    stop = asyncio.Event()
    deadline = asyncio.Event()
    limits = httpx.Limits(max_connections=api_clients + OPEN_BATCH + 2)
    async with httpx.AsyncClient(base_url=target.url, timeout=60, limits=limits) as http:
        sampler = asyncio.create_task(_sample_rss(pid, report, stop)) if pid else None
        lives: list[asyncio.Task[None]] = []
        began = time.monotonic()
        for start in range(0, terminals, OPEN_BATCH):
            batch = []
            for number in range(start, min(terminals, start + OPEN_BATCH)):
                opened = asyncio.Event()
                terminal = Terminal(number, target, http)
                lives.append(
                    asyncio.create_task(
                        _terminal_life(terminal, report, opened, deadline, interval)
                    )
                )
                batch.append(opened.wait())
            await asyncio.gather(*batch)
        report.open_seconds = time.monotonic() - began
        if pid is not None:
            report.rss_open_mib = rss_mib(pid)
        clients = [
            asyncio.create_task(_api_client(n, target, http, report, stop, think))
            for n in range(api_clients)
        ]
        gateway_cpu, client_cpu, wall = _cpu_seconds(pid), _own_cpu_seconds(), time.monotonic()
        await asyncio.sleep(seconds)
        stop.set()
        await asyncio.gather(*clients)
        wall = time.monotonic() - wall
        report.gateway_cores = (_cpu_seconds(pid) - gateway_cpu) / wall
        report.client_cores = (_own_cpu_seconds() - client_cpu) / wall
        deadline.set()
        await asyncio.gather(*lives)
        if sampler is not None:
            await sampler
    return report


def run(
    terminals: int = 200,
    api_clients: int = 50,
    seconds: float = 600.0,
    interval: float = 5.0,
    think: float = 1.0,
) -> list[Row]:
    """Start sshd and a gateway, run the load, return the table rows."""
    import shutil

    from testsupport.sshd import start_sshd

    server = start_sshd()
    try:
        with hostgate_server() as gateway:
            target = prepare(gateway.url, server, pid=gateway.pid, terminals=terminals)
            report = asyncio.run(
                run_load(
                    target,
                    terminals=terminals,
                    api_clients=api_clients,
                    seconds=seconds,
                    interval=interval,
                    think=think,
                )
            )
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
    for line in report.errors:
        print(f"error: {line}")
    return report.rows()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=200)
    parser.add_argument("--api-clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between commands")
    parser.add_argument("--think", type=float, default=1.0, help="seconds between API calls")
    args = parser.parse_args()
    rows = run(args.terminals, args.api_clients, args.seconds, args.interval, args.think)
    print_table(rows)
    if rows[0].value:
        sys.exit(1)


if __name__ == "__main__":
    main()
