"""The audit log: record events (hash-chained), then hand them to ``event`` subscribers."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, text, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import select
from typing_extensions import Unpack

from ...db.models.audit import AUDIT_COUNT_ID, AuditCount, AuditEntry
from ...db.models.settings import SystemValue
from ...descriptors import AuditEvent
from ...timefmt import iso, utcnow

if TYPE_CHECKING:
    from ...contract import AuditFields
    from ...db.engine import Database
    from ...security.secretbox import SecretBox
    from .audit_verify import VerifyResult

log = logging.getLogger("hostgate.audit")

REDACTED = "[redacted]"
CHAIN_KEY_NAME = "audit_chain_key"
_SECRET_WORDS = ("password", "secret", "token", "privatekey", "private_key", "passphrase", "otp")


def _is_secret_key(name: str) -> bool:
    if name.endswith(("Id", "_id", "Ids", "_ids")):
        return False  # identifiers (``apiTokenId``, ``apiTokenIds``), never the secret they name
    lowered = name.lower().replace("-", "_")
    return any(word in lowered for word in _SECRET_WORDS)


def scrub(value: Any) -> Any:
    """Replace values under secret-looking keys, recursively: audit entries never hold secrets."""
    if isinstance(value, Mapping):
        return {
            str(k): (REDACTED if _is_secret_key(str(k)) and v not in (None, "") else scrub(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


_BOUNDED_COLUMNS = ("user_id", "username", "display_name", "event_type", "target", "ip_address")


def fit_columns(entry: AuditEntry) -> None:
    """Cut text fields to their column lengths (PostgreSQL refuses longer values).

    A long target, e.g. every setting key of a ``settings.updated``, must never make
    the audit write fail after the change it records was stored.
    """
    columns = AuditEntry.__table__.columns  # type: ignore[attr-defined]
    for name in _BOUNDED_COLUMNS:
        value = getattr(entry, name)
        limit = getattr(columns[name].type, "length", None)
        if isinstance(value, str) and limit and len(value) > limit:
            setattr(entry, name, value[: limit - 1] + "\u2026")


def chain_hash(prev_hash: str, entry: AuditEntry, key: bytes = b"") -> str:
    """The hash of an entry, chained to the previous entry's hash.

    With ``key`` (the instance's sealed audit chain key) it is an HMAC-SHA256, so
    someone who can write the database but not read the encryption key cannot
    forge a consistent chain.
    """
    body = json.dumps(
        [
            prev_hash,
            entry.id,
            entry.user_id,
            entry.username,
            entry.event_type,
            entry.target,
            entry.details,
            entry.ip_address,
            iso(entry.timestamp),
        ],
        separators=(",", ":"),
        sort_keys=True,
        default=str,
    )
    if key:
        return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return hashlib.sha256(body.encode()).hexdigest()


def to_event(entry: AuditEntry) -> AuditEvent:
    """The public form of a stored entry."""
    return AuditEvent(
        id=entry.id,
        event_type=entry.event_type,
        user_id=entry.user_id,
        username=entry.username,
        display_name=entry.display_name,
        target=entry.target,
        details=entry.details or {},
        ip_address=entry.ip_address,
        timestamp=entry.timestamp,
    )


CHAIN_LOCK = {
    # held until the transaction ends; the number is hostgate's own ("hgaudit" in hex)
    "postgresql": "SELECT pg_advisory_xact_lock(29387065856911732)",
    # a write statement (matching nothing) takes SQLite's one writer lock, waiting
    # for another process's writer under the busy timeout
    "sqlite": "UPDATE audit_log SET seq = seq WHERE 0 = 1",
}
"""What serializes the log's writers across processes, per database."""


def count_added(entries: int) -> Any:
    """The statement adding ``entries`` to the log's counter row (``audit_count``)."""
    column = AuditCount.entries
    return (
        update(AuditCount)
        .where(AuditCount.id == AUDIT_COUNT_ID)  # type: ignore[arg-type]
        .values(entries=column + entries)
    )


def recount_statements() -> list[Any]:
    """Statements that set the counter row to the entries present (after a restore)."""
    table = AuditCount.__table__  # type: ignore[attr-defined]
    counted = select(func.count()).select_from(AuditEntry).scalar_subquery()
    return [
        table.delete(),
        table.insert().values(id=AUDIT_COUNT_ID, entries=counted),
    ]


class AuditLog:
    """Writes audit entries and fans them out to the ``event`` hook."""

    def __init__(
        self,
        *,
        db: Database,
        secrets: SecretBox,
        announce: Callable[[AuditEvent], Awaitable[object]],
        shared: bool = False,
    ) -> None:
        self.db = db
        self.secrets = secrets
        # hands each committed entry to the packs (the kernel's ``track_event`` hook)
        self.announce = announce
        self.shared = shared
        """Other processes write to the same log (several nodes): see ``atomic``."""
        self._lock = asyncio.Lock()
        self._last_hash: str | None = None
        self._key: bytes | None = None

    async def chain_key(self) -> bytes:
        """The HMAC key of the hash chain (created sealed in the database on first use)."""
        if self._key is not None:
            return self._key
        async with self.db.session() as session:
            row = await session.get(SystemValue, CHAIN_KEY_NAME)
            if row is None:
                key = secrets.token_hex(32)
                session.add(SystemValue(name=CHAIN_KEY_NAME, value=self.secrets.seal(key)))
                try:
                    await session.commit()
                except IntegrityError:
                    await session.rollback()
                    row = await session.get(SystemValue, CHAIN_KEY_NAME)
                    if row is None:
                        raise
                    key = self.secrets.open(row.value)
            else:
                key = self.secrets.open(row.value)
        self._key = bytes.fromhex(key)
        return self._key

    async def record(self, event_type: str, **fields: Unpack[AuditFields]) -> AuditEvent:
        """Store one event and notify subscribers; returns the event.

        The actor (the caller) fills user and IP unless given explicitly, e.g. for a
        failed login where there is no caller yet.
        """
        async with self.atomic() as batch:
            entry = batch.record(event_type, **fields)
        return to_event(entry)

    @asynccontextmanager
    async def atomic(self) -> AsyncIterator[AuditBatch]:
        """A database session whose changes and audit entries commit together.

        ``async with kernel.audit.atomic() as batch:`` change rows in
        ``batch.session``, call ``batch.record(...)``; one commit at the end stores
        both or neither (a full disk or a locked database cannot leave a change
        without its audit entry). Subscribers hear of the entries after the commit,
        and after the callbacks given to ``batch.on_commit``.
        Other audited writes wait while the block runs (the chain has one head).
        """
        key = await self.chain_key()
        async with self._lock, self.db.session() as session:
            if self.shared:
                # other nodes append too: take the database's writer lock for the log
                # first, then read the head as it is now, so the chain never forks
                await session.exec(text(CHAIN_LOCK[self.db.dialect]))  # type: ignore[call-overload]
                self._last_hash = None
            if self._last_hash is None:
                newest = AuditEntry.seq.desc()  # type: ignore[union-attr]
                query = select(AuditEntry.hash).order_by(newest).limit(1)
                self._last_hash = (await session.exec(query)).first() or ""
            batch = AuditBatch(session, key, self._last_hash)
            yield batch
            if batch.entries:
                # the counter moves in the entries' own transaction: exact whoever else
                # writes (the row's lock orders concurrent writers on PostgreSQL)
                await session.exec(count_added(len(batch.entries)))  # type: ignore[call-overload]
            await session.commit()
            self._last_hash = batch.head
        for callback in batch.committed:
            callback()
        for entry in batch.entries:
            event = to_event(entry)
            await self.announce(event)

    async def verify_chain(self) -> VerifyResult:
        """Check every entry's hash and link (``hostgate audit verify``); the first problem."""
        from .audit_verify import verify_chain

        return await verify_chain(self)

    def forget_chain_head(self) -> None:
        """Re-read the chain head and key on the next write (after a restore)."""
        self._last_hash = None
        self._key = None


class AuditBatch:
    """Audit entries added to an open session (see ``AuditLog.atomic``)."""

    def __init__(self, session: Any, key: bytes, head: str) -> None:
        self.session = session
        self.head = head
        self.entries: list[AuditEntry] = []
        self.committed: list[Callable[[], object]] = []
        self._key = key

    def on_commit(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the block has committed, before subscribers are notified.

        For memory that mirrors the change and that subscribers read (e.g. the
        notification rules matched against the entry).
        """
        self.committed.append(callback)

    def record(self, event_type: str, **fields: Unpack[AuditFields]) -> AuditEntry:
        """Add one entry, chained to the previous one; stored by the block's commit.

        What a personal API token did names the token (``apiTokenId`` in the details).
        """
        actor = fields.get("actor")
        user_id = fields.get("user_id")
        username = fields.get("username")
        display_name = fields.get("display_name")
        ip_address = fields.get("ip_address")
        details = dict(fields.get("details") or {})
        token_id = actor.api_token_id if actor is not None else None
        if token_id is not None:
            details["apiTokenId"] = token_id
        entry = AuditEntry(
            user_id=user_id if user_id is not None else (actor.user_id if actor else None),
            username=username if username is not None else (actor.username if actor else ""),
            display_name=(
                display_name if display_name is not None else (actor.display_name if actor else "")
            ),
            event_type=event_type,
            target=str(fields.get("target") or ""),
            details=scrub(details),
            ip_address=(
                ip_address if ip_address is not None else (actor.ip_address if actor else "")
            ),
            timestamp=utcnow(),
        )
        fit_columns(entry)
        entry.prev_hash = self.head
        entry.hash = chain_hash(entry.prev_hash, entry, self._key)
        self.session.add(entry)
        self.entries.append(entry)
        self.head = entry.hash
        return entry
