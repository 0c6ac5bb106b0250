"""Start-up rows made on a new database, by several workers starting at the same moment."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.db.models.settings import SystemValue
from hostgate.services.identity.identity import SIGNING_KEY_NAME
from sqlmodel import delete


async def test_a_signing_key_another_worker_made_at_the_same_moment_is_used(
    kernel: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both workers find no token-signing key; the other one stores its key first. This
    one's insert then fails on the unique name, and instead of dying at start-up (the
    supervisor stops everything then) it reads and uses the other worker's key."""
    async with kernel.db.session() as session:
        await session.exec(delete(SystemValue).where(SystemValue.name == SIGNING_KEY_NAME))  # type: ignore[call-overload]
        await session.commit()
    theirs = "ab" * 32
    async with kernel.db.session() as session:
        session_class = type(session)
    original_get = session_class.get
    raced: list[str] = []

    async def get(self: Any, model: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
        row = await original_get(self, model, key, *args, **kwargs)
        if model is SystemValue and key == SIGNING_KEY_NAME and not raced:
            raced.append(key)  # the other worker's insert lands right after this read
            async with kernel.db.session() as other:
                other.add(SystemValue(name=SIGNING_KEY_NAME, value=kernel.secrets.seal(theirs)))
                await other.commit()
        return row

    monkeypatch.setattr(session_class, "get", get)
    await kernel._first_start_step(kernel.identity.start)
    assert raced == [SIGNING_KEY_NAME]
    assert kernel.identity._signing_key == theirs
