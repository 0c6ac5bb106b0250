"""The short form of bench/load.py: terminals and API clients at once, zero errors.

A real ``hostgate serve`` and a real sshd; 20 SSH terminals through ``/ws/ssh``
type a command every half second while 10 API clients list connections, audit and
sessions (a quarter second between calls) for 10 seconds: about 400 commands and 400
API calls, as many as a command a second for 20 seconds made, in half the wall time
(the suite's budget). Every failure counts (a socket that does not open or
closes early, output that does not come back, a non-200 answer); the server must
not log an unhandled error. No timing is asserted.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.load import prepare, run_load
from testsupport.gateway import GatewayProcess

TERMINALS = 20
API_CLIENTS = 10
SECONDS = 10.0
INTERVAL = 0.5  # seconds between one terminal's commands (jittered)
THINK = 0.25  # seconds between one API client's calls (jittered)


async def test_terminals_and_api_clients_at_once_without_errors(sshd: Any, tmp_path: Any) -> None:
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        target = await asyncio.to_thread(
            prepare, gateway.url, sshd, pid=gateway.pid, terminals=TERMINALS
        )
        report = await run_load(
            target,
            terminals=TERMINALS,
            api_clients=API_CLIENTS,
            seconds=SECONDS,
            interval=INTERVAL,
            think=THINK,
        )
    finally:
        gateway.stop()
    assert report.errors == [], report.errors
    assert report.terminals_opened == TERMINALS
    assert report.terminal_rounds >= TERMINALS
    assert len(report.api_latencies_ms) >= API_CLIENTS
    assert gateway.unhandled() == []
