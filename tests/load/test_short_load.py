"""The short form of bench/load.py: terminals and API clients at once, zero errors.

A real ``hostgate serve`` and a real sshd; 20 SSH terminals through ``/ws/ssh``
type a command every second while 10 API clients list connections, audit and
sessions for 20 seconds. Every failure counts (a socket that does not open or
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
SECONDS = 20.0


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
            interval=1.0,
            think=0.5,
        )
    finally:
        gateway.stop()
    assert report.errors == [], report.errors
    assert report.terminals_opened == TERMINALS
    assert report.terminal_rounds >= TERMINALS
    assert len(report.api_latencies_ms) >= API_CLIENTS
    assert gateway.unhandled() == []
