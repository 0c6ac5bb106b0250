"""Terminal figures: throughput vs a direct asyncssh channel, keystroke latency, idle memory.

.venv/bin/python bench/terminal.py [--size 64] [--keystrokes 300] [--terminals 200]
.venv/bin/python bench/terminal.py --concurrent 1,10,100 --size 4 [--rounds 3] [--deflate]

A real ``hostgate serve`` (hypercorn) runs on a free port in front of OpenSSH sshd
(``testsupport.sshd``, needs root for its login user). Printed:

- throughput: ``cat`` of a ``--size`` MiB text file in an interactive PTY shell,
  read to the end, directly with asyncssh (the same client library, cipher
  preference and PTY request the gateway uses) and through ``/ws/ssh`` with the
  ``websockets`` client, with and without permessage-deflate (browsers negotiate
  it), with recording and command log on (the default) and, for reference, off.
  ``--rounds`` rounds each run the direct client and every gateway variant back to
  back; the figures are medians, the ratio the median of the per-round ratios.
  Target: gateway >= 0.9x direct. Wall-clock rates depend on what else the machine
  runs (sshd, the gateway and the client each want a core), so the CPU time spent
  per MiB by the gateway process and by the direct client is printed too.
- keystroke round trip: one character sent, its echo received; p50 and p99 over
  ``--keystrokes`` keys, through the gateway and directly.
- memory: the gateway's resident set with ``--terminals`` idle SSH terminals open
  (and the growth per terminal). Target: < 512 MiB.

``--concurrent 1,10,100`` measures only how the relay scales: that many terminals
``cat`` the ``--size`` MiB file at once (recording on, the default), and the
aggregate MB/s and the gateway's CPU per MiB are printed for each number
(medians of ``--rounds``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import asyncssh
import httpx
import websockets
from hostgate_ssh.terminal import CIPHERS

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
    socket_cat,
    socket_keystrokes,
    terminal_socket,
    text_file,
)

PASSWORD = "bench-password-1"
PROMPT = b"$ "


class Gateway:
    """An admin on the served gateway with one ssh connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ws_url = url.replace("http://", "ws://")
        response = httpx.post(
            f"{url}/api/v1/auth/setup",
            json={"username": "bench", "password": PASSWORD, "displayName": "Bench"},
        )
        response.raise_for_status()
        self.headers = {"Authorization": f"Bearer {response.json()['token']}"}
        self.connection_id = ""

    def settings(self, values: dict[str, Any]) -> None:
        httpx.put(
            f"{self.url}/api/v1/settings", json=values, headers=self.headers
        ).raise_for_status()

    def add_connection(self, server: Any) -> None:
        body = {
            "name": "bench",
            "protocol": "ssh",
            "host": server.host,
            "port": server.port,
            "username": server.username,
            "password": server.password,
        }
        response = httpx.post(f"{self.url}/api/v1/connections", json=body, headers=self.headers)
        response.raise_for_status()
        self.connection_id = str(response.json()["id"])

    async def open(self, http: httpx.AsyncClient, *, deflate: bool = True) -> Any:
        """A terminal socket resting at the shell prompt."""
        ticket = (await http.post("/api/v1/auth/ws-ticket", headers=self.headers)).json()["ticket"]
        url = f"{self.ws_url}/ws/ssh?ticket={ticket}&connectionId={self.connection_id}"
        return await terminal_socket(url, deflate=deflate)


async def direct_shell(server: Any) -> tuple[Any, Any]:
    """An asyncssh interactive shell on a PTY, resting at the prompt."""
    connection = await asyncssh.connect(
        server.host,
        server.port,
        username=server.username,
        password=server.password,
        known_hosts=None,
        agent_path=None,
        encryption_algs=CIPHERS,
    )
    process = await connection.create_process(
        term_type="xterm-256color", term_size=(120, 40), encoding=None
    )
    tail = b""
    while not tail.rstrip().endswith(b"$"):
        tail = (tail + await process.stdout.read(65536))[-256:]
    return connection, process


async def direct_cat(server: Any, path: Path) -> tuple[int, float, float]:
    """Bytes, seconds and this process's CPU seconds for the ``cat``."""
    connection, process = await direct_shell(server)
    cpu = cpu_seconds(os.getpid())
    start = time.perf_counter()
    process.stdin.write(f"cat {path}; exit\n".encode())
    moved = 0
    while data := await process.stdout.read(65536):
        moved += len(data)
    elapsed = time.perf_counter() - start
    spent = cpu_seconds(os.getpid()) - cpu
    connection.close()
    return moved, elapsed, spent


async def gateway_cat(
    gateway: Gateway, path: Path, pid: int, *, deflate: bool
) -> tuple[int, float, float]:
    """Bytes, seconds and the gateway process's CPU seconds for the ``cat``."""
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        socket = await gateway.open(http, deflate=deflate)
    cpu = cpu_seconds(pid)
    moved, elapsed = await socket_cat(socket, path)
    return moved, elapsed, cpu_seconds(pid) - cpu


async def concurrent_cats(
    gateway: Gateway, path: Path, pid: int, sessions: int, *, deflate: bool
) -> tuple[int, float, float]:
    """``sessions`` terminals each ``cat`` the file at once: bytes, seconds, gateway CPU seconds.

    The sockets are opened first (in batches of 10, as a browser tab each), then
    every ``cat`` starts together; the time runs until the last socket closed.
    """
    sockets: list[Any] = []
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        for start in range(0, sessions, 10):
            batch = range(start, min(sessions, start + 10))
            sockets += await asyncio.gather(*(gateway.open(http, deflate=deflate) for _ in batch))

    async def drain(socket: Any) -> int:
        moved = 0
        try:
            while True:
                frame = await socket.recv()
                if isinstance(frame, bytes):
                    moved += len(frame)
        except websockets.ConnectionClosed:
            return moved

    cpu = cpu_seconds(pid)
    start = time.perf_counter()
    command = json.dumps({"type": "data", "data": f"cat {path}; exit\r"})
    await asyncio.gather(*(socket.send(command) for socket in sockets))
    moved = sum(await asyncio.gather(*(drain(socket) for socket in sockets)))
    return moved, time.perf_counter() - start, cpu_seconds(pid) - cpu


async def curve(args: argparse.Namespace, gateway: Gateway, server: Any, pid: int) -> list[Row]:
    """Aggregate throughput and gateway CPU per MiB with 1, 10, 100... concurrent ``cat``s."""
    path = server.home / "bench-terminal.txt"
    size = text_file(path, args.size)
    os.chmod(path, 0o644)
    await gateway_cat(gateway, Path("/dev/null"), pid, deflate=False)
    rows: list[Row] = []
    try:
        for sessions in args.concurrent:
            rates: list[float] = []
            costs: list[float] = []
            for _ in range(args.rounds):
                moved, elapsed, spent = await concurrent_cats(
                    gateway, path, pid, sessions, deflate=args.deflate
                )
                if moved < size * sessions:
                    raise RuntimeError(f"moved {moved} of {size * sessions} bytes")
                rates.append(moved / elapsed / 2**20)
                costs.append(spent * 1000 / (moved / 2**20))
            label = f"{sessions} concurrent cat ({args.size} MiB each)"
            rows.append(Row(f"{label}: aggregate", median(rates), "MB/s"))
            rows.append(Row(f"{label}: gateway CPU per MiB", median(costs), "ms"))
    finally:
        path.unlink()
    return rows


async def keystrokes_gateway(gateway: Gateway, count: int) -> list[float]:
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        socket = await gateway.open(http)
    return await socket_keystrokes(socket, count)


async def keystrokes_direct(server: Any, count: int) -> list[float]:
    connection, process = await direct_shell(server)
    samples = []
    for index in range(count):
        key = "abcdefghij"[index % 10].encode()
        start = time.perf_counter()
        process.stdin.write(key)
        while key not in await process.stdout.read(65536):
            pass
        samples.append((time.perf_counter() - start) * 1000)
        if index % 50 == 49:
            process.stdin.write(b"\x15")
            await asyncio.sleep(0.05)
    connection.close()
    return samples


async def idle_terminals(gateway: Gateway, pid: int, count: int) -> tuple[float, float]:
    """RSS before and with ``count`` idle terminals open."""
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        warm = await gateway.open(http, deflate=True)
        await warm.close()
        await asyncio.sleep(1)
        before = rss_mib(pid)
        sockets: list[Any] = []
        for start in range(0, count, 20):
            batch = [gateway.open(http) for _ in range(min(20, count - start))]
            sockets.extend(await asyncio.gather(*batch))
        await asyncio.sleep(2)
        during = rss_mib(pid)
        for socket in sockets:
            await socket.close()
    return before, during


async def measure(args: argparse.Namespace, gateway: Gateway, server: Any, pid: int) -> list[Row]:
    path = server.home / "bench-terminal.txt"
    size = text_file(path, args.size)
    os.chmod(path, 0o644)
    rows = []
    # a first session warms the gateway up (imports, first connection to this server)
    await gateway_cat(gateway, Path("/dev/null"), pid, deflate=False)
    variants = ((False, True), (True, True), (False, False))  # (deflate, recording)
    direct: list[tuple[float, float]] = []  # (MB/s, CPU ms per MiB) per round
    through: dict[tuple[bool, bool], list[tuple[float, float, float]]] = {v: [] for v in variants}
    for _ in range(args.rounds):
        # each round measures the direct client and every variant back to back, so a
        # drift in the machine's speed moves the baseline and the gateway together
        moved, elapsed, spent = await direct_cat(server, path)
        rate = moved / elapsed / 2**20
        direct.append((rate, spent * 1000 / (moved / 2**20)))
        for deflate, recording in variants:
            gateway.settings({"recordings.enabled": recording})
            moved, elapsed, spent = await gateway_cat(gateway, path, pid, deflate=deflate)
            if moved < size:
                raise RuntimeError(f"gateway moved {moved} of {size} bytes")
            speed = moved / elapsed / 2**20
            through[(deflate, recording)].append(
                (speed, spent * 1000 / (moved / 2**20), speed / rate)
            )
    direct_rate = median(rate for rate, _ in direct)
    direct_cpu = median(cpu for _, cpu in direct)
    rows.append(Row("cat direct asyncssh", direct_rate, "MB/s"))
    cpu_rows = [Row("CPU per MiB, direct asyncssh client", direct_cpu, "ms")]
    for deflate, recording in variants:
        runs = through[(deflate, recording)]
        name = "gateway" + (" deflate" if deflate else "") + ("" if recording else " no-rec")
        rows.append(
            Row(
                f"cat {name}",
                median(speed for speed, _, _ in runs),
                "MB/s",
                direct_rate,
                ">= 0.9x",
                measured_ratio=median(ratio for _, _, ratio in runs),
            )
        )
        cpu_rows.append(
            Row(
                f"CPU per MiB, {name} process",
                median(cpu for _, cpu, _ in runs),
                "ms",
                direct_cpu,
            )
        )
    gateway.settings({"recordings.enabled": True})
    rows.extend(cpu_rows)
    path.unlink()
    gateway_keys = await keystrokes_gateway(gateway, args.keystrokes)
    direct_keys = await keystrokes_direct(server, args.keystrokes)
    rows.append(
        Row(
            "keystroke p50 gateway", percentile(gateway_keys, 50), "ms", percentile(direct_keys, 50)
        )
    )
    rows.append(
        Row(
            "keystroke p99 gateway", percentile(gateway_keys, 99), "ms", percentile(direct_keys, 99)
        )
    )
    before, during = await idle_terminals(gateway, pid, args.terminals)
    rows.append(Row("RSS idle gateway", before, "MiB"))
    rows.append(Row(f"RSS with {args.terminals} idle terminals", during, "MiB", None, "< 512"))
    rows.append(Row("RSS per idle terminal", (during - before) * 1024 / args.terminals, "KiB"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=64, help="MiB of text to cat")
    parser.add_argument("--keystrokes", type=int, default=300)
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating direct/gateway throughput rounds"
    )
    parser.add_argument("--terminals", type=int, default=200)
    parser.add_argument(
        "--loop", default="auto", help="the gateway's event loop (HOSTGATE_EVENT_LOOP)"
    )
    parser.add_argument(
        "--concurrent",
        type=lambda text: [int(n) for n in text.split(",")],
        help="only the curve: comma-separated numbers of concurrent cat sessions (1,10,100)",
    )
    parser.add_argument(
        "--deflate", action="store_true", help="the curve's sockets negotiate permessage-deflate"
    )
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()}")

    from testsupport.sshd import start_sshd

    server = start_sshd()
    try:
        with hostgate_server({"HOSTGATE_EVENT_LOOP": args.loop}) as hg:
            gateway = Gateway(hg.url)
            gateway.settings(
                {"security.max_sessions_per_user": 10_000, "security.max_sessions_total": 10_000}
            )
            gateway.add_connection(server)
            run = curve if args.concurrent else measure
            rows = asyncio.run(run(args, gateway, server, hg.pid))
    finally:
        server.stop()
    print_table(rows)
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
