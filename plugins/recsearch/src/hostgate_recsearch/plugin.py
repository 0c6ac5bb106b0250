"""The recsearch pack's hooks: its setting, its route, and the session text it indexes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from hostgate import (
    AuditEvent,
    KernelAPI,
    SessionText,
    SettingSpec,
    cancel_and_wait,
    hookimpl,
)
from quart import Blueprint

from .index import INDEX_OUTPUT, RecordingSearch
from .routes import STATE_KEY, blueprint

log = logging.getLogger("hostgate.search")

FOLLOW_SECONDS = 1.0
"""How often a serving node checks ``recordings.index_output`` (another node may turn it
off, or a purge met a busy database); where it is changed, it is followed at once."""
TASK_KEY = "recsearch.follower"


def service(kernel: KernelAPI) -> RecordingSearch:
    """The pack's index of a started kernel."""
    found: RecordingSearch = kernel.state[STATE_KEY]
    return found


@hookimpl
def register_settings() -> list[SettingSpec]:
    """``recordings.index_output``: whether terminal output is searchable, not only commands."""
    return [
        SettingSpec(
            INDEX_OUTPUT,
            bool,
            False,
            public=True,  # the search screen says when output is not searched
            description=(
                "Make the text of terminal output searchable (stored unencrypted in the "
                "database); off purges what was indexed"
            ),
        )
    ]


@hookimpl
def register_blueprints() -> list[Blueprint]:
    """``GET /api/v1/sessions/search``."""
    return [blueprint]


async def _follow(search: RecordingSearch) -> None:
    """Purge indexed output within a second of ``recordings.index_output`` going off."""
    while True:
        try:
            await search.follow_setting()
        except Exception:  # a busy database: the next round retries
            log.exception("following recordings.index_output failed; retrying")
        await asyncio.sleep(FOLLOW_SECONDS)


@hookimpl
async def startup(kernel: KernelAPI) -> None:
    """Keep the index in ``kernel.state``; a serving node follows the setting."""
    search = RecordingSearch(kernel)
    kernel.state[STATE_KEY] = search
    if kernel.serving:
        kernel.state[TASK_KEY] = asyncio.create_task(_follow(search), name="recsearch-follow")


@hookimpl
async def shutdown(kernel: KernelAPI) -> None:
    """Stop following the setting."""
    task = kernel.state.pop(TASK_KEY, None)
    if isinstance(task, asyncio.Task):
        await cancel_and_wait(task)


@hookimpl
async def track_event(event: AuditEvent, kernel: KernelAPI) -> None:
    """``recordings.index_output`` changed here: follow it now (the purge is done on return)."""
    if event.event_type != "settings.updated":
        return
    after = event.details.get("after")
    search = kernel.state.get(STATE_KEY)
    if isinstance(after, dict) and INDEX_OUTPUT in after and isinstance(search, RecordingSearch):
        await search.follow_setting(bool(after[INDEX_OUTPUT]))


@hookimpl
def wants_session_output(kernel: KernelAPI) -> bool:
    """Yes while ``recordings.index_output`` is on."""
    return bool(kernel.settings.get(INDEX_OUTPUT))


@hookimpl
async def session_text(texts: Sequence[SessionText], kernel: KernelAPI) -> None:
    """Index the commands (and, while on, the output) of running sessions."""
    search = kernel.state.get(STATE_KEY)
    if isinstance(search, RecordingSearch):
        await search.add(texts)


@hookimpl
async def recordings_removed(session_ids: Sequence[str], kernel: KernelAPI) -> None:
    """A recording that is gone has nothing to jump into: its entries go."""
    search = kernel.state.get(STATE_KEY)
    if isinstance(search, RecordingSearch):
        await search.forget(session_ids)
