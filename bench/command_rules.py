"""Command rules' cost: keystroke echo and ``cat`` throughput with 200 rules in force vs none.

.venv/bin/python bench/command_rules.py [--rules 200] [--size 64] [--keystrokes 300] [--rounds 3]

A real ``hostgate serve`` in front of OpenSSH sshd (``testsupport.sshd``, needs root
for its login user), as bench/terminal.py. Each round measures, without rules and
then with ``--rules`` rules (exact, prefix, glob and regex, none matching what the
bench types), in the same gateway: the keystroke round trip (p50, p99 of
``--keystrokes`` keys, a new terminal each time), the Enter round trip (``true``
typed, Enter sent, the next prompt read: the one moment rules are evaluated) and
``cat`` of a ``--size`` MiB file. Targets (issue 34): keystroke p99 < 2 ms added,
``cat`` >= 0.9x of no rules.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (  # noqa: E402
    Row,
    hostgate_server,
    median,
    percentile,
    print_table,
    socket_cat,
    socket_keystrokes,
    text_file,
)
from terminal import Gateway  # noqa: E402

KINDS = ("exact", "prefix", "glob", "regex")


def add_rules(gateway: Gateway, count: int) -> None:
    """``count`` rules of every kind and action, none matching what the bench types."""
    patterns = {
        "exact": "shutdown -h now {n}",
        "prefix": "rm -rf /srv/data{n}",
        "glob": "dd if=/dev/sd?{n} *",
        "regex": r"^(sudo\s+)?mkfs\.\w+\s+/dev/x{n}",
    }
    actions = ("block", "approve", "alert")
    with httpx.Client(base_url=gateway.url, headers=gateway.headers, timeout=30) as http:
        for n in range(count):
            kind = KINDS[n % len(KINDS)]
            body = {
                "name": f"bench rule {n}",
                "action": actions[n % len(actions)],
                "match": kind,
                "pattern": patterns[kind].format(n=n),
            }
            http.post("/api/v1/command-rules", json=body).raise_for_status()


def clear_rules(gateway: Gateway) -> None:
    with httpx.Client(base_url=gateway.url, headers=gateway.headers, timeout=30) as http:
        while rules := http.get("/api/v1/command-rules?limit=200").json()["rules"]:
            for rule in rules:
                http.delete(f"/api/v1/command-rules/{rule['id']}").raise_for_status()


async def enters(gateway: Gateway, count: int) -> list[float]:
    """Milliseconds from Enter after ``true`` to the next prompt."""
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        socket = await gateway.open(http)
    samples = []
    for _ in range(count):
        await socket.send(json.dumps({"type": "data", "data": "true"}))
        seen = b""
        while b"true" not in seen:
            frame = await socket.recv()
            seen += frame if isinstance(frame, bytes) else b""
        start = time.perf_counter()
        await socket.send(json.dumps({"type": "data", "data": "\r"}))
        seen = b""
        while not seen.endswith(b"$ "):
            frame = await socket.recv()
            seen += frame if isinstance(frame, bytes) else b""
        samples.append((time.perf_counter() - start) * 1000)
    await socket.close()
    return samples


async def one_round(gateway: Gateway, path: Path, args: argparse.Namespace) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        keys = await socket_keystrokes(await gateway.open(http), args.keystrokes)
        enter = await enters(gateway, 50)
        socket = await gateway.open(http, deflate=False)
    moved, elapsed = await socket_cat(socket, path)
    return {
        "p50": percentile(keys, 50),
        "p99": percentile(keys, 99),
        "enter": percentile(enter, 50),
        "cat": moved / elapsed / 2**20,
    }


async def measure(args: argparse.Namespace, gateway: Gateway, server: Any) -> list[Row]:
    path = server.home / "bench-rules.txt"
    text_file(path, args.size)
    os.chmod(path, 0o644)
    none: list[dict[str, float]] = []
    ruled: list[dict[str, float]] = []
    try:
        await one_round(gateway, Path("/dev/null"), args)  # warm up
        for _ in range(args.rounds):
            clear_rules(gateway)
            none.append(await one_round(gateway, path, args))
            add_rules(gateway, args.rules)
            ruled.append(await one_round(gateway, path, args))
    finally:
        path.unlink()
        clear_rules(gateway)
    n = args.rules

    def both(key: str) -> tuple[float, float]:
        return median(r[key] for r in ruled), median(r[key] for r in none)

    rows: list[Row] = []
    for key, label in (("p50", "keystroke p50"), ("p99", "keystroke p99")):
        with_rules, without = both(key)
        rows.append(Row(f"{label}, {n} rules (vs none)", with_rules, "ms", without))
    with_rules, without = both("p99")
    rows.append(Row("keystroke p99 added by rules", with_rules - without, "ms", None, "< 2 ms"))
    with_rules, without = both("enter")
    rows.append(Row(f"Enter to prompt p50, {n} rules (vs none)", with_rules, "ms", without))
    ratios = [r["cat"] / base["cat"] for r, base in zip(ruled, none, strict=True)]
    with_rules, without = both("cat")
    rows.append(
        Row(
            f"cat {args.size} MiB, {n} rules (vs none)",
            with_rules,
            "MB/s",
            without,
            ">= 0.9x",
            measured_ratio=median(ratios),
        )
    )
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    """Start sshd and a gateway, measure, stop both."""
    from testsupport.sshd import start_sshd

    server = start_sshd()
    try:
        with hostgate_server() as served:
            gateway = Gateway(served.url)
            gateway.settings(
                {"security.max_sessions_per_user": 10_000, "security.max_sessions_total": 10_000}
            )
            gateway.add_connection(server)
            return asyncio.run(measure(args, gateway, server))
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--size", type=int, default=64, help="MiB of text to cat")
    parser.add_argument("--keystrokes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    print_table(run(args))
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
