"""``hostgate serve``: run the gateway on hypercorn."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import socket
from collections.abc import Callable
from typing import Any

from ..closereasons import CloseReason
from ..cluster.shared import sqlite_file
from ..config import EVENT_LOOPS, Config, ConfigError
from ..logging_setup import configure_logging
from .common import config_from

log = logging.getLogger("hostgate.serve")


def register(subparsers: Any) -> None:
    """Add ``serve``."""
    parser = subparsers.add_parser("serve", help="run the gateway")
    parser.add_argument("--host", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default 7443)")
    parser.add_argument("--tls-cert", help="TLS certificate (PEM)")
    parser.add_argument("--tls-key", help="TLS private key (PEM)")
    parser.add_argument(
        "--tls-self-signed", action="store_true", help="serve HTTPS with a generated certificate"
    )
    parser.add_argument("--log-format", choices=["text", "json"], help="log line format")
    parser.add_argument("--log-level", help="DEBUG, INFO, WARNING...")
    parser.add_argument(
        "--loop",
        choices=EVENT_LOOPS,
        help="event loop: auto (uvloop when installed, the default), uvloop or asyncio",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes sharing the port (default 1; more need HOSTGATE_REDIS_URL)",
    )
    parser.set_defaults(handler=run)


MAX_WORKERS = 64
GC_THRESHOLDS = (5000, 20, 100)
# one inbound WebSocket message: keystrokes, pastes and the input and clipboard
# PDUs of desktop clients are far smaller; hypercorn's own default is 16 MiB
WS_MAX_MESSAGE_BYTES = 4 * 1024 * 1024


def hypercorn_config(config: Config, *, bind: str | None = None) -> Any:
    """Hypercorn's settings for serving the gateway (``bind`` overrides host:port)."""
    from hypercorn.config import Config as HyperConfig

    from ..security.tls import ensure_self_signed

    hyper = HyperConfig()
    hyper.bind = [bind or f"{config.host}:{config.port}"]
    hyper.graceful_timeout = config.shutdown_grace_seconds
    hyper.accesslog = None
    hyper.errorlog = logging.getLogger("hypercorn.error")
    hyper.websocket_max_message_size = WS_MAX_MESSAGE_BYTES
    if config.tls_cert and config.tls_key:
        hyper.certfile, hyper.keyfile = str(config.tls_cert), str(config.tls_key)
    elif config.tls_self_signed:
        cert, key = ensure_self_signed(config.data_dir / "certs")
        hyper.certfile, hyper.keyfile = str(cert), str(key)
    return hyper


def loop_factory(choice: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """The event loop for ``choice``.

    uvloop (libuv: fewer CPU cycles per socket operation) when installed or asked
    for, else the standard asyncio loop.
    """
    if choice == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ConfigError(
                "HOSTGATE_EVENT_LOOP is uvloop but uvloop is not installed "
                "(pip install uvloop, or choose asyncio)"
            ) from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def tune_garbage_collector() -> None:
    """Freeze what start-up allocated and collect less often.

    Under load (hundreds of terminals and API clients) full collections of the
    start-up objects (every pack's modules, ~150,000 objects) paused the event
    loop for up to half a second every few seconds; frozen objects are never
    scanned again, and the higher thresholds make the remaining collections rarer.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT."""
    from pathlib import Path

    overrides: dict[str, Any] = {}
    if args.loop:
        overrides["event_loop"] = args.loop
    for name in ("host", "port", "log_format"):
        if getattr(args, name, None):
            overrides[name] = getattr(args, name)
    if args.log_level:
        overrides["log_level"] = args.log_level.upper()
    if args.tls_cert:
        overrides["tls_cert"] = Path(args.tls_cert)
    if args.tls_key:
        overrides["tls_key"] = Path(args.tls_key)
    if args.tls_self_signed:
        overrides["tls_self_signed"] = True
    config = config_from(args, **overrides)
    configure_logging(config.log_level, config.log_format)
    workers = int(getattr(args, "workers", 1) or 1)
    if workers != 1:
        return run_workers(config, workers)
    return serve_one(config)


def workers_refusal(config: Config, workers: int) -> str | None:
    """Why ``--workers`` cannot run with this configuration; None when it can."""
    if workers < 1 or workers > MAX_WORKERS:
        return f"--workers must be between 1 and {MAX_WORKERS}, not {workers}"
    if not config.redis_url:
        return (
            f"--workers {workers} needs HOSTGATE_REDIS_URL: the workers are separate "
            "processes and share WebSocket tickets, rate limits, live sessions and the "
            "once-only work through Redis (install redis-server and set "
            "HOSTGATE_REDIS_URL=redis://127.0.0.1:6379/0). See docs/cluster.md."
        )
    if config.is_sqlite and sqlite_file(config.resolved_database_url) is None:
        return f"--workers {workers} cannot share an in-memory SQLite database"
    return None


def listening_socket(host: str, port: int) -> socket.socket:
    """A listening socket with SO_REUSEPORT: each worker binds its own, the kernel balances."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def prepare_shared(config: Config) -> None:
    """Before the workers fork: the key file and the database schema, made once."""
    from ..datadir import prepare
    from ..db.engine import Database
    from ..security.secretbox import load_or_create_key

    prepare(config.data_dir, config.resolved_database_url)
    load_or_create_key(config.encryption_key, config.data_dir)

    async def migrate() -> None:
        database = Database(
            config.resolved_database_url, busy_timeout_ms=config.database_busy_timeout_ms
        )
        try:
            await database.migrate()
        finally:
            await database.close()

    asyncio.run(migrate())


def run_workers(config: Config, workers: int) -> int:
    """Fork ``workers`` processes serving the same port; restart one that dies."""
    import os
    import time

    why = workers_refusal(config, workers)
    if why:
        log.error("%s", why)
        return 2
    if config.is_sqlite:
        log.warning(
            "%d workers on SQLite (%s): supported on a local disk of this one machine; "
            "every write waits for the one SQLite writer lock, so busy gateways and "
            "nodes on several hosts need PostgreSQL (HOSTGATE_DATABASE_URL)",
            workers,
            sqlite_file(config.resolved_database_url),
        )
    prepare_shared(config)
    stopping = False
    children: dict[int, int] = {}  # pid -> worker number

    def spawn(number: int) -> None:
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                code = serve_one(config, worker=number)
            except BaseException:
                log.exception("worker %d failed", number)
            finally:
                os._exit(code)
        children[pid] = number

    def forward(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    log.info("hostgate starting %d workers on %s:%s", workers, config.host, config.port)
    for number in range(1, workers + 1):
        spawn(number)
    started: dict[int, float] = {number: time.monotonic() for number in children.values()}
    status = 0
    while children:
        try:
            pid, code = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid not in children or stopping:
            children.pop(pid, None)
            continue
        number = children.pop(pid)
        exit_code = os.waitstatus_to_exitcode(code)
        if time.monotonic() - started.get(number, 0.0) < 10:
            # it died during start-up (a refusal, a port in use): do not loop on it
            log.error("worker %d exited during start-up (%s); stopping", number, exit_code)
            status = 1
            forward(signal.SIGTERM, None)
            continue
        log.error("worker %d exited (%s); starting it again", number, exit_code)
        started[number] = time.monotonic()
        spawn(number)
    return status


def serve_one(config: Config, *, worker: int = 0) -> int:
    """Serve in this process until SIGTERM or SIGINT (``worker``: its number, 0 = alone)."""
    from hypercorn.asyncio import serve

    from .. import testreset
    from ..app import create_app, kernel_of
    from ..services.sessions.session_service import LIVE_KINDS as SOCKET_KINDS

    app = create_app(config)
    shared_socket = listening_socket(config.host, config.port) if worker else None
    bind = f"fd://{shared_socket.fileno()}" if shared_socket is not None else None
    hyper = hypercorn_config(config, bind=bind)
    scheme = "https" if hyper.ssl_enabled else "http"

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if not worker:  # a test gateway shared by several tests (one process only)
            testreset.install(kernel_of(app), loop)
        log.info(
            "hostgate %slistening on %s://%s:%s (%s event loop)",
            f"worker {worker} " if worker else "",
            scheme,
            config.host,
            config.port,
            type(loop).__module__.partition(".")[0],
        )
        tune_garbage_collector()

        async def shutdown_trigger() -> None:
            await stop.wait()
            # open sockets end first, with a close frame, so hypercorn need not cancel them;
            # file sessions stay open: an upload in flight finishes within the grace period
            # (or is cancelled and removes its temporary file), then kernel shutdown closes them
            live = kernel_of(app).live
            for kind in SOCKET_KINDS:
                await live.close_here(
                    "server shutting down", reason_code=CloseReason.SHUTTING_DOWN, kind=kind
                )

        await serve(app, hyper, shutdown_trigger=shutdown_trigger)  # type: ignore[arg-type]

    with asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
        runner.run(main())
    return 0
