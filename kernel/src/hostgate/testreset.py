"""A test gateway put back to its first state, so that tests can share one ``hostgate serve``.

Off unless the process was started with ``HOSTGATE_TEST_RESET_SNAPSHOT`` naming a
SQLite copy of its database (the browser tests' fixture takes it right after the
start). Then, on ``SIGUSR1``, the gateway:

- closes every live session (terminals, desktops, file sessions), as a restore does;
- replaces every row of its database with the snapshot's, in one transaction (the
  restore's own swap), and empties the recordings directory, and the recordings
  bucket's prefix when one is configured (its objects and unfinished uploads);
- re-reads what it keeps in memory, as after a restore (settings, the audit chain's
  head, identity, roles, packs' ``database_replaced`` hooks), and forgets the in-memory
  login-rate and unknown-username lockout counters;
- writes ``<count> ok`` (or ``<count> failed: <why>``) to ``<snapshot>.done``.

It is a signal, not a route: nothing on the network reaches it, and the API, its
contract and the OpenAPI document are the same with it on. A gateway started
without the variable keeps the default action of ``SIGUSR1`` (it ends).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from .closereasons import CloseReason
from .security.ratelimit import MemoryRateLimiter
from .services.database_swap import KEEP_PREFIX, swap_database
from .services.sessions.recording_store import S3Store

if TYPE_CHECKING:
    from .kernel import Kernel

log = logging.getLogger("hostgate.testreset")

SNAPSHOT_ENV = "HOSTGATE_TEST_RESET_SNAPSHOT"
SESSIONS_GONE_SECONDS = 10.0


def done_path(snapshot: Path) -> Path:
    """Where the outcome of each reset is written: ``<snapshot>.done``."""
    return snapshot.with_name(snapshot.name + ".done")


async def reset(kernel: Kernel, snapshot: Path) -> None:
    """Put ``kernel``'s gateway back to ``snapshot`` (see the module docstring)."""
    await kernel.live.close_everywhere("the test gateway is being reset", CloseReason.RESTORING)
    # a closed session writes its end (rows, audit) on its own task: let it land first
    for _ in range(int(SESSIONS_GONE_SECONDS / 0.05)):
        if not kernel.live.all() and not kernel.terminal_sessions.all():
            break
        await asyncio.sleep(0.05)
    await swap_database(kernel.db.engine, snapshot, 0)
    await asyncio.to_thread(_empty, kernel.config.resolved_recordings_dir)
    if isinstance(kernel.recordings.store, S3Store):
        await kernel.recordings.store.empty()
    await kernel.reload_state()
    if isinstance(kernel.limits, MemoryRateLimiter):
        kernel.limits.forget_all()
    kernel.logins.forget_phantoms()


def _empty(directory: Path) -> None:
    """Remove what the recordings directory holds (its dot entries stay, as in a restore)."""
    if not directory.is_dir():
        return
    for entry in directory.iterdir():
        if entry.name.startswith(KEEP_PREFIX):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def install(kernel: Kernel, loop: asyncio.AbstractEventLoop) -> bool:
    """Reset on ``SIGUSR1`` when ``HOSTGATE_TEST_RESET_SNAPSHOT`` is set; True if installed."""
    name = os.environ.get(SNAPSHOT_ENV, "")
    if not name:
        return False
    snapshot = Path(name)
    done = done_path(snapshot)
    log.warning(
        "%s is set: SIGUSR1 resets this gateway to %s (a test gateway; never set it in production)",
        SNAPSHOT_ENV,
        snapshot,
    )
    lock = asyncio.Lock()
    count = 0
    tasks: set[asyncio.Task[None]] = set()

    async def run() -> None:
        nonlocal count
        async with lock:
            try:
                await reset(kernel, snapshot)
                outcome = "ok"
            except Exception as exc:  # noqa: BLE001 - the test reads why, then fails
                log.exception("the test reset failed")
                outcome = f"failed: {type(exc).__name__}: {exc}"
            count += 1
            temporary = done.with_name(done.name + ".tmp")
            temporary.write_text(f"{count} {outcome}\n")
            os.replace(temporary, done)  # the reader never sees half a line

    def signalled() -> None:
        task = loop.create_task(run(), name="test-reset")
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    loop.add_signal_handler(signal.SIGUSR1, signalled)
    return True
