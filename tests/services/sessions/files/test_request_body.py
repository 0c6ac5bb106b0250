"""Request bodies are flow-controlled: a streaming view never lets unread bytes pile up."""

from __future__ import annotations

import asyncio

import pytest
from hostgate.requestbody import HIGH_WATER, FlowControlledBody
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_producer_waits_until_a_streaming_consumer_catches_up():
    body = FlowControlledBody(None, 16 * HIGH_WATER)
    aiter(body)
    body.append(b"x" * HIGH_WATER)
    producer = asyncio.ensure_future(body.wait_for_room())
    await settle()
    assert not producer.done()
    assert len(await anext(body)) == HIGH_WATER
    await settle()
    assert producer.done()


async def test_awaiting_the_whole_body_releases_the_producer_and_keeps_the_limit():
    body = FlowControlledBody(None, 2 * HIGH_WATER)
    body.append(b"x" * HIGH_WATER)
    producer = asyncio.ensure_future(body.wait_for_room())
    whole = asyncio.ensure_future(body)
    await settle()
    assert producer.done()
    body.append(b"y" * (HIGH_WATER + 1))
    with pytest.raises(RequestEntityTooLarge):
        await whole


async def test_a_declared_oversized_body_is_kept_for_a_view_that_lifts_the_limit():
    body = FlowControlledBody(10 * HIGH_WATER, HIGH_WATER)
    body.append(b"a" * 100)
    body.set_complete()
    with pytest.raises(RequestEntityTooLarge):
        await body
    body = FlowControlledBody(10 * HIGH_WATER, HIGH_WATER)
    body.append(b"a" * 100)
    body.set_complete()
    body.lift_size_limit()
    assert [chunk async for chunk in body] == [b"a" * 100]


async def test_after_a_disconnect_reading_fails_instead_of_waiting_forever():
    body = FlowControlledBody(None, None)
    body.append(b"partial")
    stream = aiter(body)
    assert await anext(stream) == b"partial"
    body.abort()
    with pytest.raises(ClientDisconnected):
        await anext(stream)


async def test_a_disconnect_after_the_whole_body_changes_nothing():
    body = FlowControlledBody(None, None)
    body.append(b"all")
    body.set_complete()
    body.abort()
    assert [chunk async for chunk in body] == [b"all"]


async def test_a_chunk_reaches_the_view_without_a_copy_and_waiting_chunks_are_joined_in_order():
    body = FlowControlledBody(None, None)
    stream = aiter(body)
    chunk = b"c" * 70_000
    body.append(chunk)
    assert await anext(stream) is chunk
    body.append(b"one ")
    body.append(bytearray(b"two "))
    body.append(b"three")
    assert await anext(stream) == b"one two three"
    body.set_complete()
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_large_chunks_that_waited_come_out_one_by_one_as_they_came(monkeypatch):
    """Several large chunks waiting (the view was behind) are handed over as the very
    objects received, in order, not joined into a copy; a run of small ones is joined,
    and a large one after them keeps its own turn."""

    body = FlowControlledBody(None, None)
    stream = aiter(body)
    large = [bytes([n]) * 200_000 for n in range(3)]
    for chunk in large:
        body.append(chunk)
    for chunk in large:
        assert await anext(stream) is chunk
    small = [b"a" * 30_000, b"b" * 30_000, b"c" * 30_000, b"d" * 10]
    for chunk in [*small, large[0]]:
        body.append(chunk)
    assert await anext(stream) == b"".join(small[:3])  # joined up to 64 KiB
    assert await anext(stream) == small[3]
    assert await anext(stream) is large[0]
    body.set_complete()
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_the_whole_body_is_every_chunk_in_order():
    body = FlowControlledBody(None, 1000)
    whole = asyncio.ensure_future(body)
    body.append(b"ab")
    body.append(b"cd")
    body.set_complete()
    assert await whole == b"abcd"
