"""The server log as ``hostgate serve --log-format json`` writes it, captured in-process."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hostgate.logging_setup import JsonFormatter, RequestIdFilter


class JsonLog:
    """What the JSON log handler wrote during the test."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self, logger: str | None = None) -> list[dict[str, Any]]:
        """The JSON objects written, optionally only those of one logger."""
        objects = [json.loads(line) for line in self.text().splitlines() if line.strip()]
        return [o for o in objects if logger is None or o["logger"] == logger]


@pytest.fixture
def json_log() -> Iterator[JsonLog]:
    """A JSON-format handler on the root logger for the test's duration (level INFO)."""
    captured = JsonLog()
    handler = logging.StreamHandler(captured.stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield captured
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
