"""``hostgate serve``: run the gateway on hypercorn."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
from collections.abc import Callable
from typing import Any

from ..config import EVENT_LOOPS, Config, ConfigError
from ..logs import configure_logging
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
    parser.set_defaults(handler=run)


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
    hyper.graceful_timeout = 10
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
    from hypercorn.asyncio import serve

    from ..app import create_app, kernel_of
    from ..services.sessions.terminal_sessions import LIVE_KINDS as SOCKET_KINDS

    app = create_app(config)
    hyper = hypercorn_config(config)
    scheme = "https" if hyper.ssl_enabled else "http"

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        log.info(
            "hostgate listening on %s://%s:%s (%s event loop)",
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
                await live.close_here("server shutting down", kind=kind)

        await serve(app, hyper, shutdown_trigger=shutdown_trigger)  # type: ignore[arg-type]

    with asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
        runner.run(main())
    return 0
