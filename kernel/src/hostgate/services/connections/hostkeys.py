"""SSH host-key trust per connection.

The first key a server presents is remembered as ``trusted``. The same key later
passes; a different key is stored as ``pending`` and the connection is refused
(409, code ``host_key_changed``) with both fingerprints in the message, until a
user who may edit the connection accepts the pending key (or forgets the trusted
one). Fingerprints are OpenSSH's: ``SHA256:`` and unpadded base64 of the SHA-256
of the public-key blob.

A scan (``observe``) reads the server's key before any session: a key never seen is
kept as ``pending`` (not trusted) so that someone who may edit the connection can
accept exactly that fingerprint; a changed key is handled as on connect.

The setting ``security.host_key_first_use`` decides what a connect does with a first
key: ``trust`` (the default, SPEC's trust on first use) trusts it; ``confirm`` keeps it
pending and refuses the session (409, code ``host_key_unconfirmed``) until someone who
may edit the connection accepts it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from ...adapters import HostKeyCheck
from ...db.models.connections import Connection, HostKey
from ...errors import Conflict, NotFound
from ...timefmt import utcnow

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..audit.audit import AuditBatch, AuditLog
    from ..identity.identity import Caller
    from ..settings import Settings

TRUSTED = "trusted"
PENDING = "pending"

FIRST_USE_SETTING = "security.host_key_first_use"
FIRST_USE_CHOICES = ("trust", "confirm")
"""``trust``: a connect trusts a first key (SPEC); ``confirm``: it waits for an accept."""


def fingerprint(blob: bytes) -> str:
    """The OpenSSH SHA-256 fingerprint of a public-key blob."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


@dataclass(frozen=True)
class HostKeyInfo:
    """A remembered (or just presented) host key; ``api/connections.py`` shapes its JSON."""

    state: str
    algorithm: str
    fingerprint: str
    public_key: str
    seen_at: datetime


@dataclass(frozen=True)
class HostKeyScan:
    """What a scan found: ``trusted`` (the remembered key), ``new`` or ``changed``."""

    state: str
    presented: HostKeyInfo
    trusted: HostKeyInfo | None


def _info(row: HostKey) -> HostKeyInfo:
    return HostKeyInfo(row.state, row.algorithm, row.fingerprint, row.public_key, row.seen_at)


def _label(connection: Connection) -> str:
    return f"{connection.name} ({connection.host}:{connection.port})"


async def _store(
    session: AsyncSession, connection_id: str, state: str, algorithm: str, fp: str, encoded: str
) -> None:
    """Remember a key as ``state`` in ``session``; a key a concurrent connect stored raises here."""
    query = select(HostKey).where(HostKey.connection_id == connection_id, HostKey.state == state)
    row = (await session.exec(query)).first()
    if row is None:
        row = HostKey(
            connection_id=connection_id,
            state=state,
            algorithm=algorithm,
            fingerprint=fp,
            public_key=encoded,
        )
    else:
        row.algorithm, row.fingerprint, row.public_key = algorithm, fp, encoded
        row.seen_at = utcnow()
    session.add(row)
    await session.flush()


async def _rows_in(session: AsyncSession, connection_id: str) -> dict[str, HostKey]:
    """A connection's remembered keys by state (``trusted``, ``pending``)."""
    query = select(HostKey).where(HostKey.connection_id == connection_id)
    return {row.state: row for row in (await session.exec(query)).all()}


def _record(
    batch: AuditBatch,
    event_type: str,
    connection: Connection,
    actor: Caller | None,
    details: dict[str, Any],
) -> None:
    """Add a host-key event about ``connection`` to ``batch``."""
    batch.record(
        event_type,
        actor=actor,
        target=connection.id,
        details={"connectionId": connection.id, "name": connection.name, **details},
    )


async def delete_all(session: AsyncSession, connection_id: str) -> list[str]:
    """Delete a connection's remembered keys in ``session``; the fingerprints removed.

    Not committed: a change that forgets keys as part of something larger (a new
    address) calls this inside its own ``audit.atomic()`` block.
    """
    rows = list((await _rows_in(session, connection_id)).values())
    for row in rows:
        await session.delete(row)
    return [row.fingerprint for row in rows]


class HostKeys:
    """Remembered host keys: check on connect, view, accept, forget."""

    def __init__(self, *, db: Database, audit: AuditLog, settings: Settings) -> None:
        self.db = db
        self.audit = audit
        self.settings = settings

    def confirm_first_use(self) -> bool:
        """Whether a first key waits for an explicit accept (``security.host_key_first_use``)."""
        return bool(self.settings.get(FIRST_USE_SETTING) == "confirm")

    def checker(self, connection: Connection, actor: Caller | None = None) -> HostKeyCheck:
        """The ``check_host_key`` callable handed to adapters in a ConnectionTarget."""

        async def check(algorithm: str, public_key: bytes) -> None:
            await self.check(connection, algorithm, public_key, actor=actor)

        return check

    async def _rows(self, connection_id: str) -> dict[str, HostKey]:
        async with self.db.session() as session:
            return await _rows_in(session, connection_id)

    async def _remember(
        self,
        connection: Connection,
        state: str,
        key: tuple[str, str, str],
        event_type: str,
        actor: Caller | None,
        details: dict[str, Any],
    ) -> None:
        """Store ``(algorithm, fingerprint, encoded key)`` as ``state`` with its audit entry."""
        async with self.audit.atomic() as batch:
            await _store(batch.session, connection.id, state, *key)
            _record(batch, event_type, connection, actor, details)

    async def _trust_first(
        self, connection: Connection, key: tuple[str, str, str], actor: Caller | None
    ) -> None:
        """Trust a first key on connect; a key a scan left pending is dropped with it."""
        algorithm, presented, _ = key
        async with self.audit.atomic() as batch:
            rows = await _rows_in(batch.session, connection.id)
            if PENDING in rows:
                await batch.session.delete(rows[PENDING])
                await batch.session.flush()
            await _store(batch.session, connection.id, TRUSTED, *key)
            _record(
                batch,
                "connection.host_key_trusted",
                connection,
                actor,
                {"algorithm": algorithm, "fingerprint": presented},
            )

    async def _hold_first(
        self, connection: Connection, key: tuple[str, str, str], pending: HostKey | None
    ) -> None:
        """Keep a first key pending and refuse the session until it is accepted."""
        algorithm, presented, encoded = key
        if pending is None or pending.public_key != encoded:
            async with self.db.session() as session:
                await _store(session, connection.id, PENDING, *key)
                await session.commit()
        raise Conflict(
            f"The SSH host key of {_label(connection)} is not trusted yet: it presents "
            f"{presented} ({algorithm}). This gateway connects only once someone who may "
            "edit the connection has checked and accepted its first key.",
            code="host_key_unconfirmed",
            extra={"presentedFingerprint": presented},
        )

    async def observe(
        self,
        connection: Connection,
        algorithm: str,
        public_key: bytes,
        *,
        actor: Caller | None = None,
    ) -> HostKeyScan:
        """Compare a scanned key with the remembered ones; keep a new or changed one pending.

        Nothing becomes trusted here: a first key waits for ``accept`` (or for the
        first connection, which trusts it as ever).
        """
        presented = fingerprint(public_key)
        encoded = base64.b64encode(public_key).decode()
        key = (algorithm, presented, encoded)
        for _attempt in range(3):
            rows = await self._rows(connection.id)
            trusted = rows.get(TRUSTED)
            if trusted is not None and trusted.public_key == encoded:
                return HostKeyScan("trusted", _info(trusted), _info(trusted))
            pending = rows.get(PENDING)
            if pending is not None and pending.public_key == encoded:
                state = "new" if trusted is None else "changed"
                return HostKeyScan(state, _info(pending), _info(trusted) if trusted else None)
            try:
                if trusted is None:
                    async with self.db.session() as session:
                        await _store(session, connection.id, PENDING, *key)
                        await session.commit()
                else:
                    await self._remember(
                        connection,
                        PENDING,
                        key,
                        "connection.host_key_changed",
                        actor,
                        {
                            "trustedFingerprint": trusted.fingerprint,
                            "presentedFingerprint": presented,
                        },
                    )
            except IntegrityError:
                pass  # a concurrent connect or scan stored a key first
            # look again: the key just stored is answered from its row
        raise Conflict(
            "The host key changed while it was being checked; try again", code="host_key_changed"
        )

    async def check(
        self,
        connection: Connection,
        algorithm: str,
        public_key: bytes,
        *,
        actor: Caller | None = None,
    ) -> None:
        """Trust a first key; pass the trusted key; refuse (and remember) a changed one.

        With ``security.host_key_first_use`` at ``confirm``, a first key is kept pending
        (as a scan keeps it) and refused until someone who may edit the connection
        accepts it.
        """
        presented = fingerprint(public_key)
        encoded = base64.b64encode(public_key).decode()
        key = (algorithm, presented, encoded)
        for _attempt in range(3):
            rows = await self._rows(connection.id)
            trusted = rows.get(TRUSTED)
            try:
                if trusted is None and self.confirm_first_use():
                    await self._hold_first(connection, key, rows.get(PENDING))
                if trusted is None:
                    await self._trust_first(connection, key, actor)
                    return
                if trusted.public_key == encoded:
                    return
                pending = rows.get(PENDING)
                if pending is None or pending.public_key != encoded:
                    await self._remember(
                        connection,
                        PENDING,
                        key,
                        "connection.host_key_changed",
                        actor,
                        {
                            "trustedFingerprint": trusted.fingerprint,
                            "presentedFingerprint": presented,
                        },
                    )
            except IntegrityError:
                continue  # a concurrent connect stored a key first: look again
            raise Conflict(
                f"The SSH host key of {_label(connection)} has changed: trusted "
                f"{trusted.fingerprint} ({trusted.algorithm}), presented {presented} "
                f"({algorithm}). Refusing to connect until someone who may edit the "
                "connection accepts the new key.",
                code="host_key_changed",
                extra={
                    "trustedFingerprint": trusted.fingerprint,
                    "presentedFingerprint": presented,
                },
            )
        raise Conflict(
            "The host key changed while it was being checked; try again", code="host_key_changed"
        )

    async def view(self, connection_id: str) -> dict[str, HostKeyInfo | None]:
        """``{"trusted": ..., "pending": ...}``."""
        rows = await self._rows(connection_id)
        return {
            TRUSTED: _info(rows[TRUSTED]) if TRUSTED in rows else None,
            PENDING: _info(rows[PENDING]) if PENDING in rows else None,
        }

    async def accept(
        self, connection: Connection, *, expected: str | None, actor: Caller
    ) -> HostKeyInfo:
        """Promote the pending key to trusted; ``expected`` must match its fingerprint."""
        async with self.audit.atomic() as batch:
            session = batch.session
            rows = await _rows_in(session, connection.id)
            pending = rows.get(PENDING)
            if pending is None:
                raise NotFound(
                    "There is no changed host key waiting to be accepted",
                    code="no_pending_host_key",
                )
            if expected is not None and expected != pending.fingerprint:
                raise Conflict(
                    f"The pending host key is {pending.fingerprint}, not {expected}; "
                    "check it again before accepting",
                    code="host_key_mismatch",
                )
            previous = rows.get(TRUSTED)
            if previous is not None:
                await session.delete(previous)
                await session.flush()
            pending.state = TRUSTED
            pending.seen_at = utcnow()
            session.add(pending)
            _record(
                batch,
                "connection.host_key_accepted",
                connection,
                actor,
                {
                    "previousFingerprint": previous.fingerprint if previous else None,
                    "fingerprint": pending.fingerprint,
                },
            )
        return _info(pending)

    async def forget(self, connection: Connection, *, actor: Caller | None) -> int:
        """Forget every remembered key (the next connect trusts on first use again)."""
        async with self.audit.atomic() as batch:
            removed = await delete_all(batch.session, connection.id)
            if removed:
                _record(
                    batch,
                    "connection.host_key_forgotten",
                    connection,
                    actor,
                    {"fingerprints": removed},
                )
        return len(removed)
