"""The SSH front door at scale: many shells at once, and how long a key login takes.

.venv/bin/python bench/sshd_door_scale.py [--shells 200] [--logins 40] [--parallel 50]

One sshd, one gateway (``hostgate serve`` with the door on a free port), one user
with a registered ed25519 key and one stored connection ``box`` to the sshd.

- key login: ``--logins`` asyncssh clients, one after another, each connecting to the
  door as ``bench:box`` and signing in with the key (``asyncssh.connect`` returns once
  the server accepted the key): p50 and p95, beside the same login straight to the sshd.
- shells: ``--shells`` front-door shells opened at once (``--parallel`` at a time), each
  on a PTY, each proven alive by a command's answer; then all of them held open while
  the gateway's RSS is read, and closed. Errors are every shell that did not answer.
  RSS per idle session is the growth over the gateway's RSS before, per shell.

The login rate limit counts attempts per client address (30 per 15 minutes), as it
should for people; the bench's clients therefore come from their own loopback
addresses (``127.0.1.x``), at most ``PER_ADDRESS`` logins each, as that many users
would come from their own machines.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import asyncssh
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (  # noqa: E402
    Row,
    free_port,
    hostgate_server,
    median,
    percentile,
    print_table,
    rss_mib,
)

PASSWORD = "bench-password-1"
PER_ADDRESS = 20
"""Logins from one client address, under the login rate limit (30 per 15 minutes)."""
ANSWER_SECONDS = 120.0
"""How long a shell may take to answer while all the others open on two cores."""


class Addresses:
    """Loopback source addresses handed out ``PER_ADDRESS`` logins each."""

    def __init__(self) -> None:
        self._used = 0

    def next(self) -> tuple[str, int]:
        index = self._used // PER_ADDRESS
        self._used += 1
        return (f"127.0.{1 + index // 250}.{1 + index % 250}", 0)


class Door:
    """Where the door listens and what a client needs to sign in through it."""

    def __init__(self, port: int, key: asyncssh.SSHKey, addresses: Addresses) -> None:
        self.port = port
        self.key = key
        self.addresses = addresses

    async def connect(self, user: str = "bench:box") -> asyncssh.SSHClientConnection:
        return await asyncssh.connect(
            "127.0.0.1",
            self.port,
            username=user,
            client_keys=[self.key],
            known_hosts=None,
            agent_path=None,
            local_addr=self.addresses.next(),
            preferred_auth="publickey",
        )


async def key_logins(door: Door, server: Any, count: int) -> tuple[list[float], list[float]]:
    """Milliseconds per key login: through the door, and straight to the sshd."""
    through: list[float] = []
    direct: list[float] = []
    direct_key = asyncssh.import_private_key(server.private_key)
    for _ in range(count):
        began = time.perf_counter()
        connection = await door.connect()
        through.append((time.perf_counter() - began) * 1000)
        connection.close()
        await connection.wait_closed()
        began = time.perf_counter()
        connection = await asyncssh.connect(
            server.host,
            server.port,
            username=server.username,
            client_keys=[direct_key],
            known_hosts=None,
            agent_path=None,
            preferred_auth="publickey",
        )
        direct.append((time.perf_counter() - began) * 1000)
        connection.close()
        await connection.wait_closed()
    return through, direct


class Shell:
    """One front-door shell on a PTY, proven alive by an ``echo``'s answer."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.connection: asyncssh.SSHClientConnection | None = None
        self.process: asyncssh.SSHClientProcess[bytes] | None = None

    async def open(self, door: Door) -> None:
        self.connection = await door.connect()
        self.process = await self.connection.create_process(
            term_type="xterm", term_size=(80, 24), encoding=None
        )
        marker = f"alive-{self.index}-{6 * 7}".encode()
        self.process.stdin.write(f"echo alive-{self.index}-$((6*7))\n".encode())
        seen = b""
        async with asyncio.timeout(ANSWER_SECONDS):
            while marker not in seen:
                data = await self.process.stdout.read(4096)
                if not data:
                    raise RuntimeError(f"shell {self.index} ended: {seen[-200:]!r}")
                seen = seen[-4096:] + data

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


async def shells_at_once(
    door: Door, count: int, parallel: int, pid: int
) -> tuple[int, float, float, float, list[str]]:
    """Open ``count`` shells (``parallel`` at a time) and hold them all open.

    Errors, RSS before (MiB), RSS with all open (MiB), seconds to open them all, and
    the first few errors' messages.
    """
    before = rss_mib(pid)
    gate = asyncio.Semaphore(parallel)
    shells = [Shell(index) for index in range(count)]
    failures: list[str] = []

    async def one(shell: Shell) -> None:
        async with gate:
            try:
                await shell.open(door)
            except Exception as exc:  # every kind of failure counts as an error
                failures.append(f"shell {shell.index}: {type(exc).__name__}: {exc}"[:300])

    began = time.perf_counter()
    await asyncio.gather(*(one(shell) for shell in shells))
    elapsed = time.perf_counter() - began
    await asyncio.sleep(2)  # let the gateway settle before its RSS is read
    during = rss_mib(pid)
    for shell in shells:
        shell.close()
    return len(failures), before, during, elapsed, failures[:5]


def set_up(url: str, server: Any, public_key: str) -> None:
    """The bench admin, the connection ``box`` to the sshd, and the key in the profile."""
    api = httpx.Client(base_url=f"{url}/api/v1", timeout=60)
    token = api.post(
        "/auth/setup",
        json={"username": "bench", "password": PASSWORD, "displayName": "Bench"},
    ).json()["token"]
    api.headers["Authorization"] = f"Bearer {token}"
    api.put(
        "/settings",
        json={"security.max_sessions_per_user": 10_000, "security.max_sessions_total": 10_000},
    ).raise_for_status()
    api.post(
        "/connections",
        json={
            "name": "box",
            "protocol": "ssh",
            "host": server.host,
            "port": server.port,
            "username": server.username,
            "password": server.password,
        },
    ).raise_for_status()
    api.post(
        "/profile/ssh-keys", json={"publicKey": public_key, "name": "bench"}
    ).raise_for_status()


async def run_async(args: argparse.Namespace, door: Door, server: Any, pid: int) -> list[Row]:
    warm = await door.connect()  # the first login pays for imports and caches
    warm.close()
    through, direct = await key_logins(door, server, args.logins)
    errors, before, during, elapsed, failures = await shells_at_once(
        door, args.shells, args.parallel, pid
    )
    for failure in failures:
        print(f"  {failure}", flush=True)
    shells = args.shells
    return [
        Row("door key login p50", median(through), "ms", median(direct), "< 100 ms"),
        Row("door key login p95", percentile(through, 95), "ms", percentile(direct, 95)),
        Row(f"door shells open at once, errors of {shells}", errors, "", None, "0"),
        Row(f"door time to open {shells} shells", elapsed, "s"),
        Row(f"door gateway RSS with {shells} idle shells", during, "MiB", None, "< 512"),
        Row("door RSS per idle shell", (during - before) * 1024 / max(shells, 1), "KiB"),
    ]


def measure(args: argparse.Namespace) -> list[Row]:
    """Start an sshd and a gateway with the door, then both figures."""
    from testsupport.sshd import start_sshd

    server = start_sshd()
    door_port = free_port()
    key = asyncssh.generate_private_key("ssh-ed25519")
    public = key.export_public_key().decode().strip()
    try:
        env = {"HOSTGATE_SSHD_LISTEN": f"127.0.0.1:{door_port}"}
        with hostgate_server(extra_env=env) as served:
            set_up(served.url, server, public)
            door = Door(door_port, key, Addresses())
            return asyncio.run(run_async(args, door, server, served.pid))
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shells", type=int, default=200, help="front-door shells at once")
    parser.add_argument("--logins", type=int, default=40, help="key logins timed")
    parser.add_argument("--parallel", type=int, default=50, help="shells opening at a time")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs", flush=True)
    print_table(measure(args))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
