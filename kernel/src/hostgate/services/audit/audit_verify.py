"""``hostgate audit verify``: walk the hash chain, report the first tampered entry."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlmodel import col, select

from ...db.models.audit import AuditEntry
from .audit import chain_hash

if TYPE_CHECKING:
    from ...db.engine import Database
    from .audit import AuditLog

BATCH = 5000


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of a chain walk."""

    ok: bool
    checked: int
    problem: str = ""
    seq: int | None = None
    entry_id: str | None = None
    head_seq: int | None = None
    head_hash: str = ""


async def _entries(db: Database) -> AsyncIterator[AuditEntry]:
    last = 0
    while True:
        query = (
            select(AuditEntry)
            .where(col(AuditEntry.seq) > last)
            .order_by(col(AuditEntry.seq))
            .limit(BATCH)
        )
        async with db.session() as session:
            rows = (await session.exec(query)).all()
        if not rows:
            return
        for row in rows:
            yield row
        last = int(rows[-1].seq or 0)


async def verify_chain(audit: AuditLog) -> VerifyResult:
    """Check every entry's hash and link; stop at the first problem.

    - a stored hash that does not match the entry's content: the entry was edited
      (or, when the next entry links past it, inserted);
    - a link to a hash that is not the previous entry's: entries were deleted (a
      gap in ``seq`` alone is not a deletion: PostgreSQL skips the values of
      inserts that were rolled back, e.g. an audit write that failed).
    """
    key = await audit.chain_key()
    checked = 0
    prev: AuditEntry | None = None
    suspect: AuditEntry | None = None
    suspect_prev_hash = ""

    def fail(problem: str, entry: AuditEntry) -> VerifyResult:
        return VerifyResult(False, checked, problem, entry.seq, entry.id)

    async for entry in _entries(audit.db):
        seq = int(entry.seq or 0)
        if suspect is not None:
            # The previous entry did not hash correctly: if this one links to the
            # entry before it, the suspect was slipped in; otherwise it was edited.
            kind = "inserted" if entry.prev_hash == suspect_prev_hash else "edited"
            return VerifyResult(
                False,
                checked,
                f"entry seq {suspect.seq} ({suspect.event_type}) was {kind}",
                suspect.seq,
                suspect.id,
            )
        expected_prev = prev.hash if prev is not None else ""
        # A gap in seq alone proves nothing: PostgreSQL spends a sequence value on an
        # insert that is rolled back (a failed audit write). Deletions break the links.
        gap = prev is not None and seq != int(prev.seq or 0) + 1
        if prev is None and entry.prev_hash != "":
            return fail(f"entries before seq {seq} were deleted", entry)
        if chain_hash(entry.prev_hash, entry, key) != entry.hash:
            suspect, suspect_prev_hash = entry, expected_prev
            checked += 1
            continue
        if entry.prev_hash != expected_prev:
            if gap and prev is not None:
                return fail(f"entries seq {int(prev.seq or 0) + 1}-{seq - 1} were deleted", entry)
            return fail(
                f"entry seq {seq} does not link to the entry before it "
                "(entries were deleted or inserted there)",
                entry,
            )
        checked += 1
        prev = entry
    if suspect is not None:
        return VerifyResult(
            False,
            checked,
            f"entry seq {suspect.seq} ({suspect.event_type}) was edited or appended",
            suspect.seq,
            suspect.id,
        )
    return VerifyResult(
        True,
        checked,
        head_seq=int(prev.seq or 0) if prev else None,
        head_hash=prev.hash if prev else "",
    )
