"""A few control connections per adapter, so a listing need not wait for a download.

FTP runs one command at a time per control connection; the pool hands each
operation a connection of its own (up to ``MAX_CONNECTIONS``), keeps healthy
ones for the next operation, probes long-idle ones with ``NOOP`` and drops any
connection an operation left in an unknown state (aborted transfer, timeout).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from hostgate import (
    Conflict,
    ConnectionTarget,
    InvalidInput,
    RemoteNotFound,
    RemotePermissionDenied,
    RemoteUnreachable,
)

from .client import DataCheck, FtpClient, connect

MAX_CONNECTIONS = 4
IDLE_PROBE_SECONDS = 15.0
NOOP_TIMEOUT = 10.0
QUIT_TIMEOUT = 3.0

# Errors that are a clean answer from the server: the connection is still in sync.
_CLEAN = (RemoteNotFound, RemotePermissionDenied, InvalidInput, Conflict)


class Pool:
    """Control connections to one target."""

    def __init__(self, target: ConnectionTarget, check_data: DataCheck | None = None) -> None:
        self.target = target
        self.check_data = check_data
        self._idle: list[FtpClient] = []
        self._count = 0
        self._changed = asyncio.Condition()
        self._closed = False

    async def start(self) -> str:
        """Open the first connection now (bad credentials fail at open time).

        Returns the directory the login lands in, where relative paths start.
        """
        client = await self._acquire()
        try:
            async with asyncio.timeout(NOOP_TIMEOUT):
                home = str(await client.get_current_directory())
        except Exception:  # noqa: BLE001 - a server without PWD: paths start at the root
            home = "/"
        await self._release(client, healthy=True)
        return home if home.startswith("/") else "/"

    @asynccontextmanager
    async def client(self) -> AsyncIterator[FtpClient]:
        """A logged-in control connection for the duration of one operation."""
        client = await self._acquire()
        healthy = False
        try:
            yield client
            healthy = True
        except _CLEAN:
            healthy = True
            raise
        finally:
            await self._release(client, healthy=healthy)

    async def _acquire(self) -> FtpClient:
        loop = asyncio.get_running_loop()
        async with self._changed:
            while True:
                if self._closed:
                    raise RemoteUnreachable("This FTP file session was closed")
                if self._idle:
                    client: FtpClient | None = self._idle.pop()
                    break
                if self._count < MAX_CONNECTIONS:
                    self._count += 1
                    client = None
                    break
                await self._changed.wait()
        try:
            if client is not None and loop.time() - client.last_used > IDLE_PROBE_SECONDS:
                try:
                    async with asyncio.timeout(NOOP_TIMEOUT):
                        await client.command("NOOP", "2xx")
                except Exception:  # noqa: BLE001 - a stale connection is simply replaced
                    client.close()
                    client = None
            if client is None:
                client = await connect(self.target, self.check_data)
        except BaseException:
            async with self._changed:
                self._count -= 1
                self._changed.notify()
            raise
        return client

    async def _release(self, client: FtpClient, *, healthy: bool) -> None:
        async with self._changed:
            if healthy and not client.broken and not self._closed:
                client.last_used = asyncio.get_running_loop().time()
                self._idle.append(client)
            else:
                client.close()
                self._count -= 1
            self._changed.notify()

    async def close(self) -> None:
        """Say QUIT on idle connections and close them; busy ones close when released."""
        async with self._changed:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._changed.notify_all()
        for client in idle:
            try:
                async with asyncio.timeout(QUIT_TIMEOUT):
                    await client.quit()
            except Exception:  # noqa: BLE001 - the server may already be gone
                pass
            finally:
                client.close()
