"""Logging: text or JSON lines, each with the request id of the request that wrote it."""

from __future__ import annotations

import contextvars
import json
import logging
import sys

from .timefmt import iso, utcnow

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

QUIET_LOGGERS = ("aiosqlite",)
"""Libraries whose DEBUG records carry SQL parameters (password hashes, sealed secrets):
never below INFO, whatever the configured level."""

SILENT_LOGGERS = ("httpx", "httpcore")
"""HTTP clients that log every request with its full URL (webhook paths, ``?token=``,
Telegram bot tokens): warnings only. ``hostgate.outbound`` logs host and status instead."""


def silence_libraries() -> None:
    """Raise the HTTP clients' loggers to WARNING (idempotent; the app factory calls it)."""
    for name in SILENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


class RequestIdFilter(logging.Filter):
    """Stamp each record with the request id of the request that wrote it."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always keep the record."""
        record.request_id = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line.

    A record's ``fields`` dict (``extra={"fields": ...}``) adds keys of its own (the
    access log's method, path, status...).
    """

    def format(self, record: logging.LogRecord) -> str:
        """Render a record as JSON."""
        payload = {
            "time": iso(utcnow()),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            payload.update({k: v for k, v in fields.items() if k not in payload})
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload)


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Install the root handler once."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_hostgate", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._hostgate = True  # type: ignore[attr-defined]
    handler.addFilter(RequestIdFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
        )
    root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.INFO, root.level))
    silence_libraries()
