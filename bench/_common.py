"""Shared by the bench scripts: start servers, measure, print one table."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from testsupport.gateway import write_test_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BENCH_KEY = "be" * 32


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1, verify=False).status_code < 500:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    data_dir: Path

    @property
    def pid(self) -> int:
        return self.process.pid


BENCH_LOG = "HG_BENCH_LOG"
"""Environment variable: a file the bench gateways' stderr (their log) is appended to."""


def bench_log(path: Path | None = None) -> Any:
    """Where a bench gateway's stderr goes: ``path`` or ``$HG_BENCH_LOG`` opened to append,
    else nowhere."""
    chosen = path or os.environ.get(BENCH_LOG)
    if not chosen:
        return subprocess.DEVNULL
    return open(chosen, "ab")  # noqa: SIM115 - handed to the child, closed by the caller


SOURCE_VARIABLE = "HG_BENCH_SOURCE"
"""A checkout whose kernel and packs every ``hostgate_server()`` runs (``run_all.py``)."""


@contextmanager
def hostgate_server(
    extra_env: dict[str, str] | None = None,
    source: Path | None = None,
    log: Path | None = None,
    wrapper: list[str] | None = None,
    start_timeout: float = 60,
) -> Iterator[Server]:
    """A real `hostgate serve` on a free port with a throwaway data dir.

    ``log`` keeps the server's output (warnings and errors) in that file.

    ``source`` runs the kernel and packs of another checkout (``checkout()``)
    in front of the installed ones: the same bench against older code; without
    it, ``$HG_BENCH_SOURCE`` names that checkout when set (``run_all.py --variant-at``).
    Without ``log``, its log (stderr, at ``WARNING``) is appended to ``$HG_BENCH_LOG`` when set.
    ``wrapper`` runs the interpreter under another program (e.g. valgrind), which then
    needs ``start_timeout`` seconds to come up.
    """
    data = Path(tempfile.mkdtemp(prefix="hg-bench-"))
    port = free_port()
    env = {**os.environ, "HOSTGATE_ENCRYPTION_KEY": BENCH_KEY, "HOSTGATE_LOG_LEVEL": "WARNING"}
    env.update(extra_env or {})
    launcher = ["-m", "hostgate"]
    if source is None and os.environ.get(SOURCE_VARIABLE):
        source = Path(os.environ[SOURCE_VARIABLE])
    if source is not None:
        paths = [source / "kernel" / "src", *sorted((source / "plugins").glob("*/src"))]
        env["PYTHONPATH"] = os.pathsep.join(str(path) for path in paths)
    # the peers run on loopback, which network.protected refuses by default
    config = write_test_config(data / "bench.toml")
    output = bench_log(log)
    try:
        process = subprocess.Popen(
            [
                *(wrapper or []),
                sys.executable,
                *launcher,
                "--data-dir",
                str(data),
                "--config",
                str(config),
                "serve",
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=output,
        )
    finally:
        if output is not subprocess.DEVNULL:
            output.close()  # the server has its own copy
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/health", start_timeout)
        yield Server(url, process, data)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(data, ignore_errors=True)


@contextmanager
def checkout(commit: str) -> Iterator[Path]:
    """The kernel and packs of ``commit`` in a temporary directory (``git archive``)."""
    target = Path(tempfile.mkdtemp(prefix="hg-bench-src-"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "kernel/src", "plugins"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        yield target
    finally:
        shutil.rmtree(target, ignore_errors=True)


def rss_mib(pid: int) -> float:
    import psutil

    proc = psutil.Process(pid)
    total = proc.memory_info().rss
    for child in proc.children(recursive=True):
        total += child.memory_info().rss
    return total / 2**20


def percentile(values: Iterable[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``; NaN when there are none.

    The one percentile of the bench scripts: every p50/p95/p99 they print comes from here.
    """
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: Iterable[float]) -> float:
    """The median of ``values`` (the mean of the middle two for an even count); NaN when empty.

    The one median of the bench scripts (figures and the per-round ratios alike).
    """
    listed = list(values)
    return statistics.median(listed) if listed else float("nan")


@dataclass
class Row:
    name: str
    value: float
    unit: str
    baseline: float | None = None
    target: str = ""
    # when measured in rounds, the median of the per-round ratios (steadier than
    # the ratio of the medians when the machine's speed drifts between rounds)
    measured_ratio: float | None = None

    @property
    def ratio_value(self) -> float | None:
        if self.measured_ratio is not None:
            return self.measured_ratio
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline  # type: ignore[operator]

    @property
    def ratio(self) -> str:
        value = self.ratio_value
        return "" if value is None else f"{value:.2f}x"


def print_table(rows: list[Row]) -> None:
    width = max(len(r.name) for r in rows) if rows else 10
    print(f"{'figure':<{width}}  {'value':>12}  {'baseline':>12}  {'ratio':>7}  target")
    for row in rows:
        base = "" if row.baseline is None else f"{row.baseline:,.1f}"
        print(
            f"{row.name:<{width}}  {row.value:>10,.1f} {row.unit:<2}"
            f"{base:>12}  {row.ratio:>7}  {row.target}"
        )


def text_file(path: Path, mib: int) -> int:
    """Random base64 lines (like log output) of about ``mib`` MiB."""
    line_bytes = 57
    with path.open("w") as handle:
        written = 0
        while written < mib * 2**20:
            block = "".join(
                base64.b64encode(os.urandom(line_bytes)).decode() + "\n" for _ in range(2048)
            )
            handle.write(block)
            written += len(block)
    return path.stat().st_size


# -- CPU seconds of processes: the load-robust figures of the bench scripts

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, *, tree: bool = False) -> float:
    """User + system CPU seconds of a process so far (every thread); with ``tree``, plus
    those of its living descendants."""
    import psutil

    process = psutil.Process(pid)
    total = sum(process.cpu_times()[:2])
    if tree:
        for child in process.children(recursive=True):
            total += sum(child.cpu_times()[:2])
    return float(total)


class TreeCpu:
    """CPU seconds a server's process tree spends while the block runs.

    Servers that fork per session (vsftpd, sshd, smbd) defeat one reading of a
    pid before and after: a session process that is already running counts
    its earlier CPU, and one that exits inside the block takes its CPU away
    with it unless its own parent waited for it (vsftpd's session processes
    are reaped by init, not by the listener). So the tree is walked every
    ``INTERVAL`` seconds (``/proc/<pid>/task/*/children``) and each process's
    own user + system time is kept at its latest reading, per (pid, start
    time); the block's figure is the sum of what each process added after
    the first reading (all of it for a process forked inside the block). What
    a process spends in its last ``INTERVAL`` before exiting is lost: a
    closing session's tail, not its transfer. ``overhead`` is the sampling
    thread's own CPU, which lands on this process.
    """

    INTERVAL = 0.02

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.seen: dict[tuple[int, int], float] = {}
        self.first: dict[tuple[int, int], float] = {}
        self.seconds = 0.0
        self.overhead = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _read(self) -> None:
        pending = [self.pid]
        while pending:
            pid = pending.pop()
            try:
                with open(f"/proc/{pid}/stat") as handle:
                    fields = handle.read().rpartition(")")[2].split()
                children: list[int] = []
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as handle:
                        children += [int(child) for child in handle.read().split()]
            except (OSError, ValueError):
                continue  # exited meanwhile
            # after the command: state, ppid, ... utime (14th field), stime (15th), starttime (22nd)
            key = (pid, int(fields[19]))
            self.seen[key] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            pending += children

    def _sample(self) -> None:
        started = time.thread_time()
        while not self._stop.wait(self.INTERVAL):
            self._read()
        self.overhead = time.thread_time() - started

    def __enter__(self) -> TreeCpu:
        self._read()
        self.first = dict(self.seen)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()
        self.seconds = sum(cpu - self.first.get(key, 0.0) for key, cpu in self.seen.items())


def children_cpu() -> float:
    """CPU seconds of this process's finished children: the curl clients."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- a gateway terminal socket (``/ws/ssh``) driven the way the bench scripts drive it


async def terminal_socket(url: str, *, deflate: bool = True) -> Any:
    """The terminal socket at ``url`` (ticket included), 120x40, resting at the prompt."""
    socket = await websockets.connect(
        url, max_size=2**24, compression="deflate" if deflate else None
    )
    await socket.send(json.dumps({"type": "resize", "cols": 120, "rows": 40}))
    tail = b""
    while not tail.rstrip().endswith(b"$"):
        frame = await asyncio.wait_for(socket.recv(), 60)
        if isinstance(frame, bytes):
            tail = (tail + frame)[-256:]
        elif json.loads(frame).get("type") == "error":
            raise RuntimeError(frame)
    return socket


async def socket_cat(socket: Any, path: Path, marker: int | None = None) -> tuple[int, float]:
    """Bytes and seconds for ``cat path`` at the prompt of ``socket``.

    With ``marker`` the shell then echoes ``END-<marker>`` (computed by the shell, so
    the echo of the command line does not match) and the time runs until it is read;
    without, the shell exits and the time runs until the socket closes.
    """
    then = f"echo END-$(({marker}))" if marker is not None else "exit"
    expected = f"END-{marker}".encode()
    start = time.perf_counter()
    await socket.send(json.dumps({"type": "data", "data": f"cat {path}; {then}\r"}))
    moved, seen = 0, b""
    try:
        while marker is None or expected not in seen:
            frame = await socket.recv()
            if isinstance(frame, bytes):
                moved += len(frame)
                seen = seen[-16:] + frame  # the marker may straddle two frames
    except websockets.ConnectionClosed:
        if marker is not None:
            raise
    return moved, time.perf_counter() - start


async def socket_keystrokes(socket: Any, count: int) -> list[float]:
    """Milliseconds from each of ``count`` keys sent to its echo read; closes the socket."""
    samples = []
    for index in range(count):
        key = "abcdefghij"[index % 10]
        start = time.perf_counter()
        await socket.send(json.dumps({"type": "data", "data": key}))
        while True:
            frame = await socket.recv()
            if isinstance(frame, bytes) and key.encode() in frame:
                break
        samples.append((time.perf_counter() - start) * 1000)
        if index % 50 == 49:
            await socket.send(json.dumps({"type": "data", "data": "\x15"}))
            await asyncio.sleep(0.05)
    await socket.close()
    return samples


@contextmanager
def postgres() -> Iterator[str | None]:
    """A throwaway PostgreSQL server (the test suite's), or None when it cannot start."""
    from testsupport.postgres import create_database, postgres_server

    server = postgres_server.__wrapped__()  # type: ignore[attr-defined]
    try:
        address = next(server)
    except BaseException as exc:  # the suite's "peer unavailable" is a pytest skip
        print(f"PostgreSQL unavailable: {exc}")
        yield None
        return
    try:
        yield create_database(address, prefix="hg_bench_")
    finally:
        next(server, None)
