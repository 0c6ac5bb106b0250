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
import time
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

if TYPE_CHECKING:
    from .services.sessions.live_sessions import LiveSessions


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


REQUESTS = ("hostgate_http_requests", "HTTP requests by method, route template and status")
LATENCY = (
    "hostgate_http_request_duration_seconds",
    "Time to the response head, by method and route template",
)
LATENCY_BOUNDS = tuple(float(bound) for bound in Histogram.DEFAULT_BUCKETS)
"""prometheus_client's default buckets (the last is +Inf)."""


class _Latency:
    """One (method, route)'s latency histogram: a count per bucket and the sum."""

    __slots__ = ("buckets", "created", "total")

    def __init__(self) -> None:
        self.buckets = [0] * len(LATENCY_BOUNDS)
        self.total = 0.0
        self.created = time.time()


class _RequestCollector(Collector):
    """The HTTP request counter and latency histogram, counted in plain Python.

    prometheus_client's ``Counter.inc`` and ``Histogram.observe`` (a lock and a
    value object per bucket) cost about 16 k instructions per request; here a
    request adds to two ints and a float, and the families are built when
    scraped, sample for sample what the ``Counter`` and ``Histogram`` gave
    (``_total``, ``_bucket``, ``_count``, ``_sum`` and ``_created``, series in
    the order they were first seen). Requests are counted on the event loop's
    thread; a scrape on the separate listener's thread reads a value at a time,
    as prometheus_client's per-value locks did.
    """

    def __init__(self) -> None:
        # (method, route, status) -> [count, created]; (method, route) -> _Latency
        self.counts: dict[tuple[str, str, str], list[Any]] = {}
        self.latency: dict[tuple[str, str], _Latency] = {}

    def describe(self) -> Iterator[Metric]:
        """The two families without samples."""
        yield Metric(REQUESTS[0], REQUESTS[1], "counter")
        yield Metric(LATENCY[0], LATENCY[1], "histogram")

    def collect(self) -> Iterator[Metric]:
        requests = Metric(REQUESTS[0], REQUESTS[1], "counter")
        total, created = f"{REQUESTS[0]}_total", f"{REQUESTS[0]}_created"
        for (method, route, status), (count, since) in list(self.counts.items()):
            labels = {"method": method, "route": route, "status": status}
            requests.samples.append(Sample(total, labels, float(count)))
            requests.samples.append(Sample(created, dict(labels), since))
        yield requests

        latency = Metric(LATENCY[0], LATENCY[1], "histogram")
        name = LATENCY[0]
        samples = latency.samples
        for (method, route), histogram in list(self.latency.items()):
            labels = {"method": method, "route": route}
            accumulated = 0.0
            for bound, count in zip(LATENCY_BOUNDS, list(histogram.buckets), strict=True):
                accumulated += count
                bucket = {**labels, "le": floatToGoString(bound)}
                samples.append(Sample(f"{name}_bucket", bucket, accumulated))
            samples.append(Sample(f"{name}_count", dict(labels), accumulated))
            samples.append(Sample(f"{name}_sum", dict(labels), histogram.total))
            samples.append(Sample(f"{name}_created", dict(labels), histogram.created))
        yield latency


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
        self._requests = _RequestCollector()
        self.registry.register(self._requests)
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
        self._request_series: dict[tuple[str, str | None, int], tuple[list[Any], _Latency]] = {}
        self._lock = threading.Lock()
        self._ended_bytes: dict[tuple[str, str], int] = defaultdict(int)
        self.registry.register(_SessionCollector(self))
        self._server: Any = None

    def observe_request(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """One HTTP request answered."""
        series = self._request_series.get((method, route, status))
        if series is None:
            series = self._new_series(method, route, status)
        count, latency = series
        count[0] += 1
        # the first bucket whose bound is >= seconds, as Histogram.observe picks it
        latency.buckets[bisect_left(LATENCY_BOUNDS, seconds)] += 1
        latency.total += seconds

    def _new_series(
        self, method: str, route: str | None, status: int
    ) -> tuple[list[Any], _Latency]:
        """The counter and histogram of a (method, route, status) not seen before.

        The set is bounded by the app's routes (a request no route matched is
        counted as ``UNMATCHED_ROUTE``).
        """
        label = route or UNMATCHED_ROUTE
        collector = self._requests
        count = collector.counts.setdefault((method, label, str(status)), [0, time.time()])
        latency = collector.latency.get((method, label))
        if latency is None:
            latency = collector.latency[(method, label)] = _Latency()
        series = (count, latency)
        self._request_series[(method, route, status)] = series
        return series

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
