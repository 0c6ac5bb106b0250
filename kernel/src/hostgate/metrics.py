"""Prometheus metrics (``prometheus-client``), one registry per kernel.

Counted as things happen: HTTP requests by route template and status (and their
latency), recordings written, notification deliveries by channel and outcome.
Read at scrape time: live sessions by protocol and kind, and relay bytes (the
ended sessions' totals plus what the live ones moved so far). Served by
``GET /api/v1/metrics`` to callers holding ``system.metrics``, and, when
``HOSTGATE_METRICS_ADDRESS`` is set, without authentication on that address.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from .services.sessions.live import LiveSessions


class RelayCounts(Protocol):
    """What a terminal or desktop session counts (``TerminalSessions.all()`` items)."""

    @property
    def protocol(self) -> str:
        """The session's protocol."""

    @property
    def bytes_in(self) -> int:
        """Bytes from the browser so far."""

    @property
    def bytes_out(self) -> int:
        """Bytes from the remote server so far."""


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UNMATCHED_ROUTE = "unmatched"
"""The route label of a request no route matched (its path is never a label: unbounded)."""


class _SessionCollector(Collector):
    """Live sessions and relay bytes, read from the kernel when scraped."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def describe(self) -> Iterator[Metric]:
        """The families without samples: registering needs no session yet."""
        yield GaugeMetricFamily("hostgate_sessions_live", "", labels=["protocol", "kind"])
        yield CounterMetricFamily("hostgate_relay_bytes", "", labels=["protocol", "direction"])

    def collect(self) -> Iterator[Metric]:
        metrics = self.metrics
        live = GaugeMetricFamily(
            "hostgate_sessions_live",
            "Sessions open now, by protocol and kind (terminal, stream, files)",
            labels=["protocol", "kind"],
        )
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for entry in list(metrics.live.all()):
            counts[(entry.protocol, entry.kind)] += 1
        for (protocol, kind), count in sorted(counts.items()):
            live.add_metric([protocol, kind], count)
        yield live

        relayed = CounterMetricFamily(
            "hostgate_relay_bytes",
            "Bytes relayed by terminal and desktop sessions: in (from the browser), "
            "out (from the remote server)",
            labels=["protocol", "direction"],
        )
        totals = self.metrics.ended_bytes()
        for session in list(metrics.relays()):
            totals[(session.protocol, "in")] += session.bytes_in
            totals[(session.protocol, "out")] += session.bytes_out
        for (protocol, direction), value in sorted(totals.items()):
            relayed.add_metric([protocol, direction], value)
        yield relayed


class Metrics:
    """The kernel's figures and the registry that exports them."""

    def __init__(self, *, live: LiveSessions, relays: Callable[[], Iterable[RelayCounts]]) -> None:
        self.live = live
        # the open terminal and desktop sessions, read when scraped
        self.relays = relays
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "hostgate_http_requests",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "hostgate_http_request_duration_seconds",
            "Time to the response head, by method and route template",
            ["method", "route"],
            registry=self.registry,
        )
        self.recordings = Counter(
            "hostgate_recordings_written",
            "Recordings finished (complete, or stopped early) by format",
            ["format"],
            registry=self.registry,
        )
        self.deliveries = Counter(
            "hostgate_notification_deliveries",
            "Notification delivery attempts by channel and outcome (sent, failed)",
            ["channel", "outcome"],
            registry=self.registry,
        )
        self._request_series: dict[tuple[str, str | None, int], tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._ended_bytes: dict[tuple[str, str], int] = defaultdict(int)
        self.registry.register(_SessionCollector(self))
        self._server: Any = None

    def observe_request(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """One HTTP request answered."""
        key = (method, route, status)
        series = self._request_series.get(key)
        if series is None:
            # labels() validates and looks the series up under a lock each time; the
            # set of (method, route, status) is bounded by the app's routes
            label = route or UNMATCHED_ROUTE
            series = (
                self.requests.labels(method, label, str(status)),
                self.latency.labels(method, label),
            )
            self._request_series[key] = series
        series[0].inc()
        series[1].observe(seconds)

    def session_ended(self, protocol: str, bytes_in: int, bytes_out: int) -> None:
        """A terminal or relay session ended: keep its bytes in the totals."""
        with self._lock:
            self._ended_bytes[(protocol, "in")] += bytes_in
            self._ended_bytes[(protocol, "out")] += bytes_out

    def ended_bytes(self) -> dict[tuple[str, str], int]:
        """A copy of the ended sessions' byte totals."""
        with self._lock:
            return defaultdict(int, self._ended_bytes)

    def recording_written(self, fmt: str) -> None:
        """A recording was finished."""
        self.recordings.labels(fmt or "unknown").inc()

    def delivery(self, channel: str, outcome: str) -> None:
        """A notification delivery attempt ended ``sent`` or ``failed``."""
        self.deliveries.labels(channel, outcome).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every figure."""
        return generate_latest(self.registry)

    def serve(self, address: str) -> None:
        """Serve ``/metrics`` without authentication on ``host:port`` (a private address)."""
        from prometheus_client import start_http_server

        host, _, port = address.rpartition(":")
        self._server, _ = start_http_server(
            int(port), addr=host.strip("[]") or "127.0.0.1", registry=self.registry
        )

    def stop(self) -> None:
        """Stop the separate metrics listener, if any."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
