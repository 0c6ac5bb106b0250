"""Control messages between gateway nodes: ``publish`` here, handlers run on the others.

One node needs none: ``LocalBus`` delivers nowhere (the caller has already acted
on its own node). Several nodes share ``RedisBus``, Redis pub/sub on one channel
per topic. Delivery is at most once: a node whose subscription is down while
Redis restarts misses what was published meanwhile (it subscribes again by
itself), so a message must never be the only safeguard. The live sessions'
periodic access check is the backstop for the closes sent this way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..tasks import cancel_and_wait
from .shared import KEY_PREFIX, reaching

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import PubSub

log = logging.getLogger("hostgate.cluster.bus")

Handler = Callable[[dict[str, Any]], Awaitable[None]]
"""``await handler(message)``: act on a message another node published."""

CHANNEL_PREFIX = f"{KEY_PREFIX}bus:"
RECONNECT_SECONDS = (0.1, 0.2, 0.5, 1.0, 2.0)


class Bus(Protocol):
    """Messages to the other nodes of the gateway."""

    node_id: str

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Run ``handler`` for every message another node publishes on ``topic``."""

    async def publish(self, topic: str, message: dict[str, Any]) -> None:
        """Send ``message`` (JSON-able) to every other node; 503 when it cannot be sent."""

    async def start(self) -> None:
        """Start listening (subscribed when this returns)."""

    async def stop(self) -> None:
        """Stop listening."""


class LocalBus(Bus):
    """One node: there is nobody else to tell."""

    def __init__(self) -> None:
        self.node_id = uuid.uuid4().hex

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Nothing ever arrives from another node."""

    async def publish(self, topic: str, message: dict[str, Any]) -> None:
        """No other node to deliver to."""

    async def start(self) -> None:
        """Nothing to listen to."""

    async def stop(self) -> None:
        """Nothing to stop."""


class RedisBus(Bus):
    """Redis pub/sub: one channel per topic, each message tagged with its sender."""

    def __init__(self, client: Redis) -> None:
        self.node_id = uuid.uuid4().hex
        self._client = client
        self._handlers: dict[str, list[Handler]] = {}
        self._task: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()
        self._pubsub: PubSub | None = None
        self._started = False
        self.ready = asyncio.Event()
        """Set while subscribed (tests wait for it after Redis comes back)."""

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Run ``handler`` for ``topic``; after ``start`` (a pack's startup hook) too."""
        new = topic not in self._handlers
        self._handlers.setdefault(topic, []).append(handler)
        if new and self._started:
            # already listening: subscribe the running connection too (a lost one
            # re-subscribes every topic of _handlers when it comes back)
            task = asyncio.create_task(self._subscribe_late(topic))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _subscribe_late(self, topic: str) -> None:
        if self._task is None:  # nothing was subscribed at start: listen now
            self._task = asyncio.create_task(self._listen(None), name="hostgate-bus")
            return
        pubsub = self._pubsub
        if pubsub is None:  # reconnecting: the new subscription includes the topic
            return
        try:
            with reaching():
                await pubsub.subscribe(CHANNEL_PREFIX + topic)
        except Exception as exc:
            log.warning("control bus could not subscribe to %s yet: %s", topic, exc)

    async def publish(self, topic: str, message: dict[str, Any]) -> None:
        """Publish to every subscribed node (this one ignores its own)."""
        payload = json.dumps({"from": self.node_id, "message": message})
        with reaching():
            await self._client.publish(CHANNEL_PREFIX + topic, payload)

    async def start(self) -> None:
        """Subscribe now, then listen in the background (re-subscribing after failures)."""
        self._started = True
        if self._task is not None or not self._handlers:
            return
        pubsub = await self._subscribed()
        self._task = asyncio.create_task(self._listen(pubsub), name="hostgate-bus")

    async def stop(self) -> None:
        """Cancel the listener and the handlers still running; return once they ended."""
        self._started = False
        task, self._task = self._task, None
        # cancel_and_wait cancels again a task that swallowed its cancellation: with
        # one cancel and an await, a cancellation lost inside a library (as
        # SQLAlchemy's pool loses one) left the node's shut-down waiting forever
        await cancel_and_wait(task, *self._running)
        self.ready.clear()

    async def _subscribed(self) -> PubSub:
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            with reaching():
                await pubsub.subscribe(*(CHANNEL_PREFIX + t for t in self._handlers))
        except BaseException:
            await pubsub.aclose()
            raise
        self._pubsub = pubsub
        self.ready.set()
        return pubsub

    async def _listen(self, pubsub: PubSub | None) -> None:
        failures = 0
        while True:
            try:
                if pubsub is None:
                    pubsub = await self._subscribed()
                    log.info("control bus subscribed again")
                    failures = 0
                raw = await pubsub.get_message(timeout=5.0)
                if raw is not None:
                    await self._deliver(raw)
            except asyncio.CancelledError:
                self._pubsub = None
                if pubsub is not None:
                    await pubsub.aclose()
                raise
            except Exception as exc:
                self.ready.clear()
                self._pubsub = None
                if pubsub is not None:
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()
                    pubsub = None
                    log.warning("control bus lost its Redis subscription: %s", exc)
                await asyncio.sleep(RECONNECT_SECONDS[min(failures, len(RECONNECT_SECONDS) - 1)])
                failures += 1

    async def _deliver(self, raw: dict[str, Any]) -> None:
        channel = raw.get("channel", b"")
        topic = (channel.decode() if isinstance(channel, bytes) else str(channel))[
            len(CHANNEL_PREFIX) :
        ]
        try:
            envelope = json.loads(raw.get("data") or b"")
        except (TypeError, ValueError):
            log.warning("control bus: a message on %s is not JSON", topic)
            return
        if not isinstance(envelope, dict) or envelope.get("from") == self.node_id:
            return
        message = envelope.get("message")
        if not isinstance(message, dict):
            return
        for handler in self._handlers.get(topic, []):
            # handlers run beside the listener: a slow one delays no other message
            task = asyncio.create_task(self._handle(topic, handler, message))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    @staticmethod
    async def _handle(topic: str, handler: Handler, message: dict[str, Any]) -> None:
        try:
            await handler(message)
        except Exception:
            log.exception("control bus: handling a %s message failed", topic)
