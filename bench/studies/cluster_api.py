"""Several nodes: API requests/s with one node, ``serve --workers 2`` and two nodes behind
HAProxy; RSS with idle terminals spread over two nodes.

.venv/bin/python bench/studies/cluster_api.py [--seconds 8] [--clients 32] [--rounds 3]
                                      [--terminals 400] [--skip api,terminals]

Real engines as tests/cluster runs them: Debian's PostgreSQL (one throwaway
cluster, one database for every gateway process here) and redis-server, real
``hostgate serve`` processes, HAProxy started from docs/haproxy.cfg as written.
All three set-ups run side by side on the same database and Redis (the idle
ones cost nothing) and are measured in turns, ``--rounds`` times, with ``wrk``
(2 threads, ``--clients`` connections) as the load generator:

- ``one node``: one ``hostgate serve`` (one worker);
- ``--workers 2``: one ``hostgate serve --workers 2`` (two processes sharing the
  port with SO_REUSEPORT);
- ``two nodes + HAProxy``: two ``hostgate serve`` behind the balancer.

Each ratio is the median of the rounds' ratios to the one-node figure measured
in the same round. Also printed: the gateway processes' CPU milliseconds per
request (user + system of every process of the set-up, over the requests wrk
counted), a figure the machine's other load disturbs less than requests/s.
The load generator and the gateways share the machine's cores: on 2 cores wrk
takes a share of what a second worker would get.

Idle terminals: ``--terminals`` SSH terminals (a real sshd) opened through the
balancer (round robin, so half on each node), resting at the prompt; the RSS of
each node before and with them, and per terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import Row, median, print_table, rss_mib  # noqa: E402
from api import seed_connections  # noqa: E402

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess  # noqa: E402
from testsupport.haproxy import start_haproxy  # noqa: E402
from testsupport.peers import free_port, launch_on_free_port, stop, wait_for_port, which  # noqa: E402
from testsupport.postgres import _pg_bin  # noqa: E402

API = "/api/v1"


@contextmanager
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (as testsupport.postgres starts it); an asyncpg URL."""
    initdb, server = _pg_bin("initdb"), _pg_bin("postgres")
    if not initdb or not server:
        raise SystemExit("PostgreSQL is not installed (Debian package postgresql)")
    run_as: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="hg-bench-pg-"))
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
            run_as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(base, "postgres")
        except KeyError:
            pass
    base.chmod(0o777)
    data = base / "data"
    subprocess.run(
        [*run_as, initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"],
        check=True,
        capture_output=True,
    )
    port = free_port()
    process = subprocess.Popen(
        [*run_as, server, "-D", str(data), "-p", str(port), "-h", "127.0.0.1", "-k", str(base)]
        + ["-F", "-c", "fsync=off", "-c", "max_connections=300"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not wait_for_port(port, 30):
            raise SystemExit("PostgreSQL did not start")
        subprocess.run(
            [*run_as, _pg_bin("createdb") or "createdb", "-h", "127.0.0.1", "-p", str(port)]
            + ["-U", "postgres", "hostgate"],
            check=True,
        )
        yield f"postgresql+asyncpg://postgres@127.0.0.1:{port}/hostgate"
    finally:
        stop(process)
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def redis(directory: Path) -> Iterator[str]:
    binary = which("redis-server", "/usr/bin", "/usr/sbin")
    if binary is None:
        raise SystemExit("redis-server is not installed")

    def command(port: int) -> list[str]:
        return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]

    process, port = launch_on_free_port("redis-server", command, directory / "redis.log")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(process)


def processes(node: GatewayProcess) -> list[psutil.Process]:
    parent = psutil.Process(node.pid)
    return [parent, *parent.children(recursive=True)]


def cpu_seconds(nodes: list[GatewayProcess]) -> float:
    total = 0.0
    for node in nodes:
        for process in processes(node):
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
    return total


def wrk(url: str, seconds: int, clients: int, token: str) -> tuple[float, int]:
    """``(requests/s, requests)`` from wrk; an error answer under load is a failure."""
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    command = ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", "-H"]
    command += [f"Authorization: Bearer {token}", url]
    output = subprocess.run(command, capture_output=True, text=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    if non2xx:
        raise RuntimeError(f"{url}: {non2xx.group(1)} error responses under load\n{output}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    total = re.search(r"(\d+) requests in", output)
    if rate is None or total is None:
        raise RuntimeError(f"wrk printed no figures:\n{output}")
    return float(rate.group(1)), int(total.group(1))


def login(url: str) -> str:
    response = httpx.post(
        f"{url}{API}/auth/login",
        json={"username": "admin", "password": ADMIN_PASSWORD},
        timeout=30,
    )
    response.raise_for_status()
    return str(response.json()["token"])


def api_rows(args: argparse.Namespace, setups: dict[str, tuple[str, list[GatewayProcess]]]):
    token = login(setups["one node"][0])
    rows: list[Row] = []
    for path in ("/auth/me", "/connections"):
        rates: dict[str, list[float]] = {name: [] for name in setups}
        cpu: dict[str, list[float]] = {name: [] for name in setups}
        ratios: dict[str, list[float]] = {name: [] for name in setups}
        for _ in range(args.rounds):
            for name, (url, nodes) in setups.items():
                before = cpu_seconds(nodes)
                rate, count = wrk(f"{url}{API}{path}", args.seconds, args.clients, token)
                cpu[name].append((cpu_seconds(nodes) - before) * 1000 / max(count, 1))
                rates[name].append(rate)
            for name in setups:
                ratios[name].append(rates[name][-1] / rates["one node"][-1])
        base = median(rates["one node"])
        for name in setups:
            ratio = None if name == "one node" else median(ratios[name])
            target = "" if name == "one node" else ">= 1.6x (one node)"
            rows.append(
                Row(
                    f"GET {path} {name}",
                    median(rates[name]),
                    "/s",
                    None if name == "one node" else base,
                    target if name == "--workers 2" else "",
                    ratio,
                )
            )
        for name in setups:
            rows.append(Row(f"  gateway CPU per request, {name}", median(cpu[name]), "ms"))
    return rows


async def open_terminal(base: str, ws_base: str, token: str, connection_id: str) -> Any:
    import websockets

    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        response = await http.post(
            f"{API}/auth/ws-ticket", headers={"Authorization": f"Bearer {token}"}
        )
        ticket = response.json()["ticket"]
    url = f"{ws_base}/ws/ssh?ticket={ticket}&connectionId={connection_id}"
    socket = await websockets.connect(url, max_size=2**24)
    await socket.send(json.dumps({"type": "resize", "cols": 120, "rows": 40}))
    tail = b""
    while not tail.rstrip().endswith(b"$"):
        frame = await asyncio.wait_for(socket.recv(), 120)
        if isinstance(frame, bytes):
            tail = (tail + frame)[-256:]
        elif json.loads(frame).get("type") == "error":
            raise RuntimeError(frame)
    return socket


async def terminal_rows(
    args: argparse.Namespace, balancer: Any, nodes: list[GatewayProcess], sshd: Any
) -> list[Row]:
    token = login(balancer.url)
    headers = {"Authorization": f"Bearer {token}"}
    body = {
        "name": "bench sshd",
        "protocol": "ssh",
        "host": sshd.host,
        "port": sshd.port,
        "username": sshd.username,
        "password": sshd.password,
    }
    created = httpx.post(f"{balancer.url}{API}/connections", json=body, headers=headers)
    created.raise_for_status()
    connection_id = str(created.json()["id"])
    warm = [await open_terminal(balancer.url, balancer.ws_url, token, connection_id)]
    warm.append(await open_terminal(balancer.url, balancer.ws_url, token, connection_id))
    for socket in warm:
        await socket.close()
    await asyncio.sleep(2)
    before = [rss_mib(node.pid) for node in nodes]
    sockets: list[Any] = []
    started = time.monotonic()
    for start in range(0, args.terminals, 10):
        batch = [
            open_terminal(balancer.url, balancer.ws_url, token, connection_id)
            for _ in range(min(10, args.terminals - start))
        ]
        sockets.extend(await asyncio.gather(*batch))
    opened = time.monotonic() - started
    await asyncio.sleep(3)
    during = [rss_mib(node.pid) for node in nodes]
    active = httpx.get(f"{balancer.url}{API}/sessions/active", headers=headers, timeout=60)
    by_node: dict[str, int] = {}
    for entry in active.json()["sessions"]:
        by_node[entry["node"]] = by_node.get(entry["node"], 0) + 1
    for socket in sockets:
        await socket.close()
    counts = sorted(by_node.values())
    print(f"terminals per node (registry): {counts}", flush=True)
    rows = [Row(f"open {args.terminals} terminals through HAProxy", opened, "s")]
    for index in range(len(nodes)):
        name = f"node {index + 1}"
        rows.append(Row(f"RSS {name} idle", before[index], "MiB"))
        rows.append(Row(f"RSS {name} with its terminals", during[index], "MiB"))
        grown = (during[index] - before[index]) * 1024 * len(nodes) / args.terminals
        rows.append(Row(f"  per terminal on {name}", grown, "KiB"))
    total = args.terminals
    growth = sum(during) - sum(before)
    rows.append(Row(f"RSS per idle terminal (both nodes, {total})", growth * 1024 / total, "KiB"))
    rows.append(Row("fewest terminals on one node", min(counts) if counts else 0, ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--terminals", type=int, default=400)
    parser.add_argument("--skip", default="", help="api,terminals")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    directory = Path(tempfile.mkdtemp(prefix="hg-bench-cluster-"))
    started: list[GatewayProcess] = []
    rows: list[Row] = []
    print(f"load average before: {os.getloadavg()}", flush=True)
    try:
        with postgres() as database, redis(directory) as redis_url:
            env = {
                "HOSTGATE_DATABASE_URL": database,
                "HOSTGATE_REDIS_URL": redis_url,
                "HOSTGATE_ACCESS_LOG": "false",
            }
            recordings = directory / "recordings"

            def node(name: str, *serve_args: str) -> GatewayProcess:
                process = GatewayProcess(
                    directory / name, env, serve_args=serve_args, recordings=recordings
                )
                started.append(process.start(timeout=120))
                return process

            one = node("one")
            token = one.setup_admin()
            httpx.put(
                f"{one.url}{API}/settings",
                json={
                    "security.max_sessions_per_user": 10_000,
                    "security.max_sessions_total": 10_000,
                },
                headers={"Authorization": f"Bearer {token}"},
            ).raise_for_status()
            seed_connections(one.url, token)
            workers = node("workers", "--workers", "2")
            first, second = node("node-a"), node("node-b")
            balancer = start_haproxy(directory / "haproxy", [first.port, second.port])
            try:
                if "api" not in skip:
                    setups = {
                        "one node": (one.url, [one]),
                        "--workers 2": (workers.url, [workers]),
                        "two nodes + HAProxy": (balancer.url, [first, second]),
                    }
                    rows += api_rows(args, setups)
                    print(f"load average after the API rounds: {os.getloadavg()}", flush=True)
                if "terminals" not in skip:
                    for idle in (one, workers):  # only the two balanced nodes stay
                        idle.stop()
                    from testsupport.sshd import start_sshd

                    sshd = start_sshd()
                    try:
                        rows += asyncio.run(terminal_rows(args, balancer, [first, second], sshd))
                    finally:
                        sshd.stop()
                    print(f"load average after the terminals: {os.getloadavg()}", flush=True)
            finally:
                balancer.stop()
                for process in reversed(started):
                    process.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print_table([r for r in rows if r.name])


if __name__ == "__main__":
    main()
