"""Live view fan-out: one SSH terminal watched by N viewers, against the same terminal unwatched.

.venv/bin/python bench/studies/live_view.py [--viewers 20] [--size 16] [--rounds 3]

A real ``hostgate serve`` (hypercorn) runs in front of OpenSSH sshd
(``testsupport.sshd``, needs root for its login user). Each round ``cat``s a
``--size`` MiB text file in one interactive SSH terminal through ``/ws/ssh``, read
to the end by a ``websockets`` client (permessage-deflate on, as browsers
negotiate it), twice back to back: unwatched, then watched by ``--viewers``
clients of ``/ws/sessions/<id>/watch`` (deflate on too, unless ``--viewers-raw``)
that read everything the gateway sends them. Printed (medians over the rounds):

- the terminal's output throughput, watched and unwatched (the viewers run in a
  process of their own, so their decoding does not slow the terminal's client);
- the gateway process's CPU time per MiB of terminal output, watched and
  unwatched (the fan-out's cost: each viewer's copy is framed and compressed
  separately);
- the CPU the viewers' own process spent per MiB (on this 2-core machine the
  watched figure is bounded by everyone's CPU: sshd, the gateway, the terminal's
  client and the viewers' process);
- what the viewers received, as a share of the terminal's output (a viewer that
  falls more than 1 MiB behind gets a fresh screen instead of the backlog, so
  less than 100% means viewers were resynchronised rather than slowing the
  terminal);
- the time from opening a watch socket to its first screen, with the session's
  64 KiB of recent output redrawn (p50 and max over the viewers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import (  # noqa: E402
    Row,
    cpu_seconds,
    hostgate_server,
    median,
    percentile,
    print_table,
    text_file,  # noqa: E402
)
from terminal import Gateway  # noqa: E402


async def active_session(gateway: Gateway, http: httpx.AsyncClient) -> str:
    for _ in range(100):
        sessions = (await http.get("/api/v1/sessions/active", headers=gateway.headers)).json()[
            "sessions"
        ]
        terminals = [s for s in sessions if s["kind"] == "terminal"]
        if terminals:
            return str(terminals[0]["id"])
        await asyncio.sleep(0.05)
    raise RuntimeError("the terminal is not in /sessions/active")


async def _watch_all(url: str, tickets: list[str], out: Any, deflate: bool) -> None:
    """The viewers' process: open every watch socket, report ready, read until the end."""
    received = [0] * len(tickets)
    screens: list[float] = []

    async def one(index: int, ticket: str) -> Any:
        start = time.perf_counter()
        socket = await websockets.connect(
            f"{url}?ticket={ticket}", max_size=2**24, compression="deflate" if deflate else None
        )
        hello = json.loads(await socket.recv())
        if hello.get("type") != "watch":
            raise RuntimeError(f"watch refused: {hello}")
        screen = await socket.recv()
        assert isinstance(screen, bytes)
        screens.append((time.perf_counter() - start) * 1000)
        return socket

    async def read(index: int, socket: Any) -> None:
        try:
            while True:
                frame = await socket.recv()
                if isinstance(frame, bytes):
                    received[index] += len(frame)
        except websockets.ConnectionClosed:
            pass

    sockets = await asyncio.gather(*(one(i, t) for i, t in enumerate(tickets)))
    out.put(("ready", screens))
    cpu = time.process_time()
    await asyncio.gather(*(read(i, s) for i, s in enumerate(sockets)))
    out.put(("done", (received, time.process_time() - cpu)))


def watch_all(url: str, tickets: list[str], out: Any, deflate: bool) -> None:
    """Entry point of the viewers' process (its own interpreter, so its own CPU)."""
    asyncio.run(_watch_all(url, tickets, out, deflate))


async def run_cat(
    gateway: Gateway, path: Path, pid: int, viewers: int, *, deflate: bool = True
) -> tuple[int, float, float, list[int], list[float], float]:
    """Bytes, seconds and gateway CPU seconds of the ``cat``; what each viewer received,
    how long each took to its first screen, and the viewers' process CPU seconds.

    The viewers run in a process of their own: decoding 20 sockets' frames would
    otherwise slow the terminal's own client, which shares this process's loop.
    """
    loop = asyncio.get_running_loop()
    process: Any = None
    queue: Any = None
    screens: list[float] = []
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        socket = await gateway.open(http, deflate=True)
        if viewers:
            session_id = await active_session(gateway, http)
            tickets = [
                (await http.post("/api/v1/auth/ws-ticket", headers=gateway.headers)).json()[
                    "ticket"
                ]
                for _ in range(viewers)
            ]
            context = multiprocessing.get_context("spawn")
            queue = context.Queue()
            url = f"{gateway.ws_url}/ws/sessions/{session_id}/watch"
            process = context.Process(target=watch_all, args=(url, tickets, queue, deflate))
            process.start()
            kind, screens = await loop.run_in_executor(None, queue.get, True, 120)
            assert kind == "ready"
    cpu = cpu_seconds(pid)
    start = time.perf_counter()
    await socket.send(json.dumps({"type": "data", "data": f"cat {path}; exit\r"}))
    moved = 0
    try:
        while True:
            frame = await socket.recv()
            if isinstance(frame, bytes):
                moved += len(frame)
    except websockets.ConnectionClosed:
        pass
    elapsed = time.perf_counter() - start
    received: list[int] = []
    viewers_cpu = 0.0
    if process is not None:
        kind, (received, viewers_cpu) = await loop.run_in_executor(None, queue.get, True, 120)
        assert kind == "done"
        process.join(30)
    return moved, elapsed, cpu_seconds(pid) - cpu, received, screens, viewers_cpu


async def measure(args: argparse.Namespace, gateway: Gateway, server: Any, pid: int) -> list[Row]:
    path = server.home / "bench-live-view.txt"
    text_file(path, args.size)
    os.chmod(path, 0o644)
    await run_cat(gateway, Path("/dev/null"), pid, 0)  # warm-up
    plain: list[tuple[float, float]] = []
    watched: list[tuple[float, float, float, float]] = []
    screens: list[float] = []
    client_cpu: list[float] = []
    for _ in range(args.rounds):
        moved, elapsed, spent, _, _, _ = await run_cat(gateway, path, pid, 0)
        mib = moved / 2**20
        plain.append((mib / elapsed, spent * 1000 / mib))
        moved, elapsed, spent, received, firsts, viewers_cpu = await run_cat(
            gateway, path, pid, args.viewers, deflate=not args.viewers_raw
        )
        mib = moved / 2**20
        client_cpu.append(viewers_cpu * 1000 / mib)
        share = median(received) / moved
        watched.append((mib / elapsed, spent * 1000 / mib, mib / elapsed / plain[-1][0], share))
        screens.extend(firsts)
    path.unlink()
    plain_rate = median(r for r, _ in plain)
    plain_cpu = median(c for _, c in plain)
    n = args.viewers
    return [
        Row("cat unwatched", plain_rate, "MB/s"),
        Row(
            f"cat watched by {n}",
            median(r for r, _, _, _ in watched),
            "MB/s",
            plain_rate,
            measured_ratio=median(ratio for _, _, ratio, _ in watched),
        ),
        Row("gateway CPU per MiB, unwatched", plain_cpu, "ms"),
        Row(
            f"gateway CPU per MiB, watched by {n}",
            median(c for _, c, _, _ in watched),
            "ms",
            plain_cpu,
        ),
        Row(
            f"gateway CPU per MiB per viewer (of {n})",
            (median(c for _, c, _, _ in watched) - plain_cpu) / n,
            "ms",
        ),
        Row(
            f"viewers' process CPU per MiB (all {n})",
            median(client_cpu),
            "ms",
        ),
        Row("bytes each viewer received", 100 * median(s for *_, s in watched), "%"),
        Row("first screen p50", percentile(screens, 50), "ms"),
        Row("first screen max", max(screens), "ms"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--size", type=int, default=16, help="MiB of text to cat")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--viewers-raw", action="store_true", help="viewers do not negotiate permessage-deflate"
    )
    parser.add_argument(
        "--loop", default="auto", help="the gateway's event loop (HOSTGATE_EVENT_LOOP)"
    )
    args = parser.parse_args()

    from testsupport.sshd import start_sshd

    server = start_sshd()
    try:
        with hostgate_server({"HOSTGATE_EVENT_LOOP": args.loop}) as hg:
            gateway = Gateway(hg.url)
            gateway.add_connection(server)
            rows = asyncio.run(measure(args, gateway, server, hg.pid))
    finally:
        server.stop()
    print_table(rows)


if __name__ == "__main__":
    main()
