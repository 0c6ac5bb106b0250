"""API throughput at 32 clients (vs a bare Quart endpoint), login latency, idle RSS.

.venv/bin/python bench/api.py [--seconds 5] [--clients 32] [--rounds 7]
    [--against DIR] [--profile DIR]

Each figure is the median of ``--rounds`` runs of ``--seconds``, taken in turns
with the baseline while both servers run; each ratio is the median of the
rounds' ratios (each against the baseline measured just before it); the rows
name the lowest and highest round's ratio. Besides
requests/s, the gateway's CPU microseconds per request (user + system of its
process over the run, divided by the requests wrk counted) are printed: on a
shared machine they move far less than the rate.

Two baselines run: the bare app as a plain Quart program runs it, and the same
app with ``hostgate serve``'s process set-up (``bare_app.py --gateway-gc``:
start-up objects frozen, the collector's thresholds): the gateway's ratio against
the second is its requests' work alone, without what it does to its process at start.

``--against DIR``: a second gateway runs the kernel of another checkout (for
example ``git worktree add /tmp/before integrate``) and is measured in the same
rounds, so a change is compared on and off in one run. ``--profile DIR``: after
the rounds, py-spy (when installed) records the gateway under load on each
endpoint and writes flame graphs (SVG) into DIR.

``--instructions N``: instead of loading servers, count the CPU instructions of
one request with ``valgrind --tool=callgrind``, in-process (the app called
through ASGI, no network): the gateway's ``/auth/me``, ``/connections`` and
``/health`` and the bare endpoint, each warmed and then counted over N requests
with instrumentation switched on only around them (a few lines of C with
``valgrind/callgrind.h``, built with ``cc`` and called through ctypes). The
counts do not depend on the load of the machine (the kernel's clock-driven
work, periodic tasks and the login session's touch, is stopped in that process:
how much of it fell into a counted window depended on how long valgrind took);
with ``--against`` the other checkout's kernel is counted too.

``--served N``: count the instructions of the **served** processes instead: the
gateway (its app built and served as ``hostgate serve`` does, under hypercorn on
the configured event loop) and ``bare_app.py``, each under callgrind with the
instrumentation off; after 300 warm requests of an endpoint it is switched on
with ``callgrind_control -i on``, N requests go over 8 keep-alive connections,
then it is switched off and dumped. The kernel's clock-driven work is stopped in
the served gateway as above. ``--variant NAME=@COMMIT`` (repeatable) serves
another gateway running that commit's kernel and packs in the same run: a
change counted on and off; ``--variant NAME=VAR=VALUE`` serves one with that
variable in its environment (``HOSTGATE_COMPAT_PATCHES=off:h11``: a compat module
counted on and off).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    BENCH_KEY,
    Row,
    checkout,
    cpu_seconds,
    free_port,
    hostgate_server,
    median,
    percentile,
    print_table,
    rss_mib,
    wait_http,
    write_test_config,
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


def seeded_connection(g: int, c: int, group_id: str) -> dict[str, Any]:
    """The ``c``-th SSH connection of the ``g``-th seeded group (every fourth one outside it)."""
    return {
        "name": f"host {g}-{c}",
        "protocol": "ssh",
        "host": f"10.0.{g}.{c + 1}",
        "port": 22,
        "username": "ops",
        "password": "not used",
        "tags": ["bench"],
        "groupId": group_id if c % 4 else None,
    }


def seed_connections(url: str, token: str, groups: int = 3, per_group: int = 6) -> int:
    """A realistic tree for ``GET /connections``: a few groups of SSH connections."""
    headers = {"Authorization": f"Bearer {token}"}
    made = 0
    with httpx.Client(base_url=url, headers=headers) as http:
        for g in range(groups):
            group = http.post("/api/v1/connections/groups", json={"name": f"group {g}"})
            group.raise_for_status()
            for c in range(per_group + (2 if g == 0 else 0)):
                body = seeded_connection(g, c, group.json()["id"])
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
    rounds: int = 7,
    *,
    against: Path | None = None,
    profile_dir: Path | None = None,
) -> list[Row]:
    rows: list[Row] = []
    port, tuned_port = free_port(), free_port()
    bare_app = str(Path(__file__).parent / "bare_app.py")
    bare = subprocess.Popen([sys.executable, bare_app, str(port)])
    tuned = subprocess.Popen([sys.executable, bare_app, str(tuned_port), "--gateway-gc"])
    with ExitStack() as stack:
        for process in (bare, tuned):
            stack.callback(process.wait, 10)
            stack.callback(process.terminate)
        server = stack.enter_context(hostgate_server())
        other = None
        if against is not None:
            source = str(against.resolve() / "kernel" / "src")
            other = stack.enter_context(hostgate_server({"PYTHONPATH": source}))
        wait_http(f"http://127.0.0.1:{port}/ping")
        wait_http(f"http://127.0.0.1:{tuned_port}/ping")
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
            "bare, gateway set-up": Target(f"http://127.0.0.1:{tuned_port}/ping", tuned.pid),
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

    def against_baseline(name: str, base: str = "bare") -> float:
        pairs = zip(rates[name], rates[base], strict=True)
        return median([value / other for value, other in pairs])

    def spread(name: str, base: str = "bare") -> str:
        """The rounds' lowest and highest ratio: how far one round's figure can be trusted."""
        ratios = [value / other for value, other in zip(rates[name], rates[base], strict=True)]
        return f"rounds {min(ratios):.2f}-{max(ratios):.2f}x"

    def cpu_row(name: str, label: str) -> Row:
        pairs = zip(costs[name], costs["bare"], strict=True)
        return Row(
            f"{label}: CPU per request",
            median(costs[name]),
            "µs",
            median(costs["bare"]),
            measured_ratio=median([value / base for value, base in pairs]),
        )

    def rate_row(name: str, label: str, target: str = "", base: str = "bare") -> Row:
        return Row(
            label,
            median(rates[name]),
            "/s",
            median(rates[base]),
            target,
            measured_ratio=against_baseline(name, base),
        )

    tuned = "bare, gateway set-up"

    def against_tuned(name: str, label: str) -> Row:
        return rate_row(
            name,
            f"  {label} vs bare with the gateway's set-up ({spread(name, tuned)})",
            base=tuned,
        )

    rows += [
        Row("bare Quart /ping (baseline)", baseline, "/s"),
        Row("bare Quart /ping: CPU per request", median(costs["bare"]), "µs"),
        rate_row(tuned, "bare Quart /ping, hostgate serve's set-up (GC)"),
        cpu_row(tuned, "  the same"),
        rate_row("health", "GET /api/v1/health"),
        rate_row("me", f"GET /api/v1/auth/me @{clients} ({spread('me')})", ">= 0.85x"),
        cpu_row("me", "GET /api/v1/auth/me"),
        against_tuned("me", "/auth/me"),
        rate_row(
            "connections",
            f"GET /api/v1/connections @{clients} ({listed} in 3 groups, {spread('connections')})",
            ">= 0.85x",
        ),
        cpu_row("connections", "GET /api/v1/connections"),
        against_tuned("connections", "/connections"),
    ]
    if other is not None:
        for name in ("me", "connections"):
            rows += [
                rate_row(f"{name} (against)", f"  {name} on {against}"),
                cpu_row(f"{name} (against)", f"  {name} on {against}"),
            ]
    rows += [
        Row("login latency p50 (argon2id)", median(timings), "ms", None, "< 100 ms"),
        Row("login latency p95", percentile(timings, 95), "ms"),
        Row("gateway RSS idle", idle, "Mi"),
        Row("gateway RSS after load", loaded, "Mi"),
    ]
    return rows


CALLGRIND_C = """
#include <valgrind/callgrind.h>
void hg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void hg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void hg_zero(void) { CALLGRIND_ZERO_STATS; }
void hg_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
"""
COUNTED = ("bare", "health", "me", "connections")


def bench_gateway(data: Path) -> tuple[Any, Any]:
    """The gateway's config and app on ``data`` as the counted runs use them (WARNING logs)."""
    from hostgate.app import create_app
    from hostgate.config import load_config

    config = load_config(
        config_file=write_test_config(data / "bench.toml"),
        data_dir=data,
        encryption_key=BENCH_KEY,
        log_level="WARNING",
    )
    logging.getLogger("hostgate").setLevel(logging.WARNING)
    return config, create_app(config)


async def quiet_background() -> None:
    """Stop what the kernel does by the clock, so the counts are the requests' alone.

    The kernel's periodic tasks (the access-request sweep every 15 s, idle file
    sessions, housekeeping) and the login session's touch (a database write once
    a minute per session, which empties the read cache) run by wall-clock time;
    under valgrind a counted window lasts tens of seconds, so how many of them
    land in it (tens of thousands of instructions per request) depended on the
    machine's load.
    """
    from hostgate.services.identity import identity

    identity.TOUCH_INTERVAL = timedelta(days=1)
    current = asyncio.current_task()
    background = [task for task in asyncio.all_tasks() if task is not current]
    for task in background:
        task.cancel()
    await asyncio.gather(*background, return_exceptions=True)


def callgrind_library(directory: Path) -> Path:
    """The instrumentation switch, compiled from ``callgrind.h`` (valgrind's header)."""
    source = directory / "hgcallgrind.c"
    source.write_text(CALLGRIND_C)
    library = directory / "hgcallgrind.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", library, source], check=True)
    return library


async def count_inside(requests: int, library: Path) -> None:
    """Run under callgrind: each endpoint warmed, then ``requests`` of it counted and dumped."""
    import ctypes
    import tempfile

    from hostgate.commands.serve import tune_garbage_collector
    from quart import Quart

    switch = ctypes.CDLL(str(library))
    data = Path(tempfile.mkdtemp(prefix="hg-bench-cg-"))
    config, app = bench_gateway(data)
    bare = Quart("bare")

    @bare.get("/ping")
    async def ping() -> dict[str, bool]:
        return {"ok": True}

    async def call(
        target: Any, method: str, path: str, token: str | None = None, body: bytes = b""
    ) -> tuple[int, bytes]:
        headers = [(b"host", b"127.0.0.1"), (b"user-agent", b"wrk")]
        if token:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        if body:
            headers += [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8080),
            "extensions": {},
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await target(scope, receive, send)
        return status, b"".join(chunks)

    import json as jsonlib

    await app.startup()
    try:
        status, answer = await call(
            app,
            "POST",
            "/api/v1/auth/setup",
            body=jsonlib.dumps(
                {"username": "bench", "password": PASSWORD, "displayName": "Bench"}
            ).encode(),
        )
        assert status == 200, answer
        token = jsonlib.loads(answer)["token"]
        for g in range(3):
            status, answer = await call(
                app,
                "POST",
                "/api/v1/connections/groups",
                token,
                jsonlib.dumps({"name": f"group {g}"}).encode(),
            )
            group = jsonlib.loads(answer)["id"]
            for c in range(6 + (2 if g == 0 else 0)):
                item = seeded_connection(g, c, group)
                status, answer = await call(
                    app, "POST", "/api/v1/connections", token, jsonlib.dumps(item).encode()
                )
                assert status == 201, answer
        targets = {
            "bare": (bare, "/ping", None),
            "health": (app, "/api/v1/health", None),
            "me": (app, "/api/v1/auth/me", token),
            "connections": (app, "/api/v1/connections", token),
        }
        tune_garbage_collector()  # as ``hostgate serve`` does before it listens
        await quiet_background()
        if os.environ.get("HOSTGATE_BENCH_NO_GC"):
            # where collections fall varies between runs: off, a lever's count is exact
            import gc

            gc.disable()
        for name in COUNTED:
            target, path, auth = targets[name]
            for _ in range(200):
                status, answer = await call(target, "GET", path, auth)
                assert status == 200, answer
            switch.hg_zero()
            switch.hg_start()
            for _ in range(requests):
                await call(target, "GET", path, auth)
            switch.hg_stop()
            switch.hg_dump(name.encode())
    finally:
        await app.shutdown()
        shutil.rmtree(data, ignore_errors=True)


def count_instructions(requests: int, against: Path | None) -> list[Row]:
    """Instructions per request of each endpoint (and of ``against``'s kernel), by callgrind."""
    import tempfile

    if not shutil.which("valgrind") or not shutil.which("cc"):
        raise SystemExit("--instructions needs valgrind and a C compiler (cc)")
    work = Path(tempfile.mkdtemp(prefix="hg-callgrind-"))
    library = callgrind_library(work)
    kernels: dict[str, str | None] = {"": None}
    if against is not None:
        kernels[f" on {against}"] = str(against.resolve() / "kernel" / "src")
    counts: dict[str, dict[str, int]] = {}
    for label, source in kernels.items():
        env = {**os.environ, "HOSTGATE_LOG_LEVEL": "WARNING", "PYTHONHASHSEED": "0"}
        if source is not None:
            env["PYTHONPATH"] = source
        out = work / f"callgrind{len(counts)}.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--count-inside",
                str(requests),
                "--library",
                str(library),
            ],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        found: dict[str, int] = {}
        for dump in work.glob(f"{out.name}.*"):
            text = dump.read_text(errors="replace")
            trigger = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
            total = re.search(r"^totals: (\d+)", text, re.M)
            if trigger and total and trigger.group(1) in COUNTED:
                found[trigger.group(1)] = int(total.group(1))
            dump.unlink()
        counts[label] = found
    shutil.rmtree(work, ignore_errors=True)
    bare = counts[""]["bare"] / requests
    rows = [Row("bare Quart /ping: instructions per request", bare / 1000, "k")]
    for label, found in counts.items():
        for name in ("me", "connections", "health"):
            per = found[name] / requests
            rows.append(
                Row(
                    f"{name}{label}: instructions per request",
                    per / 1000,
                    "k",
                    measured_ratio=bare / per,
                )
            )
    return rows


SERVED_WARM = 300
SERVED_CONNECTIONS = 8


def _stop_clock_work(app: Any) -> None:
    """Stop the kernel's clock-driven work once it has started (see ``quiet_background``).

    Only the tasks the kernel's start-up made are cancelled: the server's own stay.
    """
    from hostgate.services.identity import identity

    identity.TOUCH_INTERVAL = timedelta(days=1)
    before: set[asyncio.Task[Any]] = set()

    async def snapshot() -> None:
        before.update(asyncio.all_tasks())

    async def stop() -> None:
        made = [task for task in asyncio.all_tasks() if task not in before]
        for task in made:
            task.cancel()
        await asyncio.gather(*made, return_exceptions=True)

    app.before_serving_funcs.insert(0, snapshot)
    app.before_serving_funcs.append(stop)


def serve_inside(port: int) -> None:
    """Run under callgrind: the gateway served as ``hostgate serve`` serves it, clock work off."""
    from hostgate.commands.serve import hypercorn_config, loop_factory, tune_garbage_collector
    from hypercorn.asyncio import serve

    data = Path(os.environ["HG_SERVED_DATA"])
    config, app = bench_gateway(data)
    _stop_clock_work(app)
    hyper = hypercorn_config(config, bind=f"127.0.0.1:{port}")

    async def main() -> None:
        tune_garbage_collector()
        await serve(app, hyper)  # type: ignore[arg-type]

    with asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
        runner.run(main())


async def keep_alive_gets(port: int, path: str, token: str | None, requests: int) -> None:
    """``requests`` GETs of ``path`` over ``SERVED_CONNECTIONS`` keep-alive connections."""
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def connection(count: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in range(count):
                writer.write(head)
                answer = await reader.readuntil(b"\r\n\r\n")
                status = answer.split(b" ", 2)[1]
                if status != b"200":
                    raise RuntimeError(f"{path}: {answer!r}")
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", answer)
                assert length is not None, answer
                await reader.readexactly(int(length.group(1)))
        finally:
            writer.close()

    share, extra = divmod(requests, SERVED_CONNECTIONS)
    await asyncio.gather(
        *(connection(share + (1 if n < extra else 0)) for n in range(SERVED_CONNECTIONS))
    )


def _callgrind_total(out: Path, before: set[Path]) -> tuple[Path, int]:
    """The dump ``callgrind_control -d`` just wrote, and its instruction total."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        made = set(out.parent.glob(f"{out.name}.*")) - before
        for dump in made:
            text = dump.read_text(errors="replace")
            total = re.search(r"^totals: (\d+)", text, re.M)
            if total:
                return dump, int(total.group(1))
        time.sleep(0.5)
    raise RuntimeError(f"no callgrind dump beside {out}")


def count_served(requests: int, variants: dict[str, Any], keep: Path | None = None) -> list[Row]:
    """Instructions per served request: bare ``/ping``, and each endpoint of each variant.

    ``keep``: a directory the callgrind dumps are moved to (for ``callgrind_annotate``).
    """
    import tempfile

    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        raise SystemExit("--served needs valgrind (callgrind_control)")
    work = Path(tempfile.mkdtemp(prefix="hg-served-"))
    counts: dict[str, dict[str, float]] = {}
    with ExitStack() as stack:
        processes: dict[str, tuple[subprocess.Popen[bytes], int, Path]] = {}
        env = {**os.environ, "HOSTGATE_LOG_LEVEL": "WARNING", "PYTHONHASHSEED": "0"}
        for name, commit in {"bare": None, **variants}.items():
            port = free_port()
            out = work / f"{name}.out"
            if name == "bare":
                inside = [str(Path(__file__).parent / "bare_app.py"), str(port)]
                child_env = env
            else:
                data = work / f"data-{name}"
                data.mkdir()
                inside = [__file__, "--serve-inside", str(port)]
                child_env = {**env, "HG_SERVED_DATA": str(data)}
                if commit is not None and "=" in commit:  # VAR=VALUE: an environment
                    variable, _, value = commit.partition("=")
                    child_env = {**child_env, variable: value}
                elif commit is not None:  # "@commit": that commit's kernel and packs
                    source = stack.enter_context(checkout(commit))
                    paths = [source / "kernel" / "src", *sorted((source / "plugins").glob("*/src"))]
                    child_env["PYTHONPATH"] = os.pathsep.join(str(path) for path in paths)
            process = subprocess.Popen(
                [
                    "valgrind",
                    "--tool=callgrind",
                    "--instr-atstart=no",
                    f"--callgrind-out-file={out}",
                    sys.executable,
                    *inside,
                ],
                env=child_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            stack.callback(process.wait, 60)
            stack.callback(process.terminate)
            processes[name] = (process, port, out)
        for name, (process, port, out) in processes.items():
            probe = "/ping" if name == "bare" else "/health"
            wait_http(f"http://127.0.0.1:{port}{probe}", timeout=600)
            if name == "bare":
                targets = {"bare": ("/ping", None)}
            else:
                url = f"http://127.0.0.1:{port}"
                token = sign_up(url)
                seed_connections(url, token)
                targets = {
                    "health": ("/api/v1/health", None),
                    "me": ("/api/v1/auth/me", token),
                    "connections": ("/api/v1/connections", token),
                }
            found: dict[str, float] = {}
            for endpoint, (path, auth) in targets.items():
                asyncio.run(keep_alive_gets(port, path, auth, SERVED_WARM))
                before = set(work.glob(f"{out.name}.*"))
                control = ["callgrind_control"]
                subprocess.run(
                    [*control, "-i", "on", str(process.pid)], check=True, capture_output=True
                )
                asyncio.run(keep_alive_gets(port, path, auth, requests))
                subprocess.run(
                    [*control, "-i", "off", str(process.pid)], check=True, capture_output=True
                )
                subprocess.run([*control, "-d", str(process.pid)], check=True, capture_output=True)
                dump, total = _callgrind_total(out, before)
                found[endpoint] = total / requests
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    shutil.move(dump, keep / f"callgrind.{name.replace(' ', '-')}.{endpoint}")
            counts[name] = found
    shutil.rmtree(work, ignore_errors=True)
    bare = counts["bare"]["bare"]
    rows = [Row("bare Quart /ping: instructions per served request", bare / 1000, "k")]
    for name in variants:
        for endpoint in ("health", "me", "connections"):
            per = counts[name][endpoint]
            rows.append(
                Row(f"{endpoint} ({name}): served", per / 1000, "k", measured_ratio=bare / per)
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7, help="alternating measurements")
    parser.add_argument("--against", type=Path, help="a checkout whose kernel runs alongside")
    parser.add_argument("--profile", type=Path, help="write py-spy flame graphs here")
    parser.add_argument(
        "--instructions",
        type=int,
        metavar="N",
        help="count instructions of N requests each with callgrind instead",
    )
    parser.add_argument(
        "--served",
        type=int,
        metavar="N",
        help="count instructions of N served requests each (callgrind on the servers)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=@COMMIT|NAME=VAR=VALUE",
        help="with --served: another gateway running COMMIT's code, or with VAR=VALUE set",
    )
    parser.add_argument(
        "--keep", type=Path, help="with --served: keep the callgrind dumps in this directory"
    )
    parser.add_argument("--serve-inside", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--count-inside", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--library", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_inside:
        serve_inside(args.serve_inside)
        return
    if args.served:
        variants: dict[str, str | None] = {"this tree": None}
        for given in args.variant:
            name, _, commit = given.partition("=")
            if commit.startswith("@"):
                variants[name] = commit[1:]
            elif "=" in commit:
                variants[name] = commit
            else:
                raise SystemExit(f"--variant wants NAME=@COMMIT or NAME=VAR=VALUE, not {given!r}")
        print(f"load average at the start: {os.getloadavg()}")
        print_table(count_served(args.served, variants, args.keep))
        print(f"load average at the end: {os.getloadavg()}")
        return
    if args.count_inside:
        asyncio.run(count_inside(args.count_inside, args.library))
        return
    if args.instructions:
        print_table(count_instructions(args.instructions, args.against))
        return
    print(f"load average at the start: {os.getloadavg()}")
    if not shutil.which("wrk"):
        print(
            "wrk is not installed (python3 scripts/dev.py setup installs it): the httpx fallback"
            " saturates before the servers do, so the ratios below are not meaningful",
            file=sys.stderr,
        )
    rows = run(
        args.seconds, args.clients, args.rounds, against=args.against, profile_dir=args.profile
    )
    print_table(rows)
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
