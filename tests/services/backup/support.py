"""Helpers for the backup tests: instances, marker data, and the checks that it all came back."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostgate import SettingSpec, hookimpl
from hostgate.app import create_app, kernel_of
from hostgate.config import Config
from hostgate.db.models.audit import AuditCount, AuditEntry
from hostgate.db.models.connections import Connection, ConnectionGroup
from hostgate.db.models.identity import LoginSession, Role, User
from hostgate.db.models.sessions import RemoteSession
from hostgate.kernel import Kernel
from hostgate.pagination import Page
from hostgate.security.passwords import hash_password_sync
from hostgate.services.backup import KdfCost
from hostgate.services.identity.identity import ClientInfo
from hostgate.timefmt import utcnow
from hostgate_recsearch import plugin as recsearch
from hostgate_recsearch.models import SearchEntry
from quart import Quart
from sqlmodel import col, func, select

from testsupport import TEST_SETTING_DEFAULTS

API = "/api/v1"
PASSWORD = "backup password 1"
USER_PASSWORD = "marker user pw 1"
MFA_SECRET = "JBSWY3DPEHPK3PXP"
SECRET_SETTING = "backup_test.token"
KEY_A = "a1" * 32
KEY_B = "b2" * 32
CHEAP = KdfCost(time_cost=1, memory_kib=1024, lanes=1)
"""A cheap argon2 cost for test archives (the format is the same)."""


class SecretSettings:
    """A pack-style secret setting, so settings envelopes are part of every round trip."""

    @hookimpl
    def register_settings(self) -> list[SettingSpec]:
        return [SettingSpec(SECRET_SETTING, str, "", secret=True, description="test secret")]


def make_config(
    root: Path,
    name: str,
    key: str,
    database_url: str | None = None,
    template: Path | None = None,
) -> Config:
    """A config for one instance under ``root/name`` (SQLite: a copy of ``template``)."""
    data = root / name
    data.mkdir(parents=True, exist_ok=True)
    if database_url is None and template is not None and not (data / "hostgate.db").exists():
        shutil.copy(template, data / "hostgate.db")
    return Config(
        data_dir=data,
        database_url=database_url,
        encryption_key=key,
        load_entry_points=False,
        version_timeout_seconds=1.0,
        setting_defaults=TEST_SETTING_DEFAULTS,
    )


@dataclass
class Instance:
    """A started app."""

    app: Quart
    kernel: Kernel
    client: Any

    @property
    def recordings(self) -> Path:
        return self.kernel.config.resolved_recordings_dir


@asynccontextmanager
async def running(config: Config) -> AsyncIterator[Instance]:
    """Start an app on ``config`` (start-up and shut-down hooks run)."""
    app = create_app(config, plugins=[SecretSettings(), recsearch])
    async with app.test_app() as test_app:
        started = test_app.app  # type: ignore[attr-defined]
        yield Instance(started, kernel_of(started), started.test_client())


@dataclass
class Markers:
    """What ``populate`` stored, to compare after a restore."""

    recording_bytes: dict[str, bytes]
    recording_key: str
    admin_id: str


async def populate(kernel: Kernel, *, audit_rows: int = 3, recording_size: int = 50_000) -> Markers:
    """Store marker users, connections with secrets, nested groups, settings, audit, a recording."""
    box = kernel.secrets
    async with kernel.db.session() as session:
        roles = {r.name: r for r in (await session.exec(select(Role))).all()}
        alice = User(
            username="marker-alice",
            username_key="marker-alice",
            display_name="Alice Marker",
            password_hash=hash_password_sync(USER_PASSWORD),
            role_id=roles["admin"].id,
            mfa_enabled=True,
            mfa_secret=box.seal(MFA_SECRET),
            ssh_prefs={"theme": "marker-theme", "fontSize": 15},
        )
        bob = User(
            username="marker-bob",
            username_key="marker-bob",
            password_hash=hash_password_sync(USER_PASSWORD),
            role_id=roles["user"].id,
        )
        session.add(alice)
        session.add(bob)
        await session.flush()
        parent = ConnectionGroup(owner_id=alice.id, name="marker-parent")
        session.add(parent)
        await session.flush()
        child = ConnectionGroup(owner_id=alice.id, name="marker-child", parent_id=parent.id)
        session.add(child)
        await session.flush()
        session.add(
            Connection(
                owner_id=alice.id,
                group_id=child.id,
                name="marker-ssh",
                protocol="ssh",
                host="10.1.2.3",
                port=2222,
                username="root",
                password=box.seal("conn-pw-secret"),
                private_key=box.seal("KEY-secret-body"),
                extra_secrets=box.seal(json.dumps({"passphrase": "pp-secret"})),
                extra_config={"marker": True},
                tags=["marker"],
                approval_required=True,
                moderation="required",
                actions={"upload": False, "paste": False},
            )
        )
        recording_key = os.urandom(32).hex()
        recorded = RemoteSession(
            user_id=alice.id,
            username="marker-alice",
            protocol="ssh",
            recording_state="complete",
            recording_format="cast",
            recording_file="marker-recording.cast",
            recording_key=box.seal(recording_key),
            recording_size=recording_size,
            ended_at=utcnow(),
        )
        session.add(recorded)
        await session.flush()
        # the recording search index: its rows travel, the full-text part is rebuilt (a
        # command: output entries are purged while recordings.index_output is off)
        session.add(
            SearchEntry(
                session_id=recorded.id, kind="command", offset_ms=4_200, text="marker search text"
            )
        )
        await session.commit()
    await kernel.settings.update({"app.name": "Marker Instance", SECRET_SETTING: "tok-secret-7"})
    for number in range(audit_rows):
        await kernel.audit.record("marker.event", target=f"marker-target-{number}")
    recordings = kernel.config.resolved_recordings_dir
    (recordings / "nested").mkdir(parents=True, exist_ok=True)
    data = {
        "marker-recording.cast": os.urandom(recording_size),
        "nested/second.webm": os.urandom(1234),
    }
    for name, content in data.items():
        (recordings / name).write_bytes(content)
    return Markers(recording_bytes=data, recording_key=recording_key, admin_id=alice.id)


async def user_named(kernel: Kernel, username: str) -> User | None:
    """A user by name."""
    async with kernel.db.session() as session:
        return (await session.exec(select(User).where(User.username == username))).first()


async def check_restored(kernel: Kernel, markers: Markers, *, with_recordings: bool = True) -> None:
    """Every marker is back, and every secret opens with ``kernel``'s own key."""
    box = kernel.secrets
    alice = await user_named(kernel, "marker-alice")
    assert alice is not None and await user_named(kernel, "marker-bob") is not None
    assert alice.ssh_prefs == {"theme": "marker-theme", "fontSize": 15}
    assert alice.mfa_enabled and box.open(alice.mfa_secret or "") == MFA_SECRET
    async with kernel.db.session() as session:
        conn = (await session.exec(select(Connection).where(Connection.name == "marker-ssh"))).one()
        # the guard rails come back with the connection
        assert conn.approval_required is True and conn.moderation == "required"
        assert conn.actions == {"upload": False, "paste": False}
        group = await session.get(ConnectionGroup, conn.group_id)
        assert group is not None and group.name == "marker-child"
        parent = await session.get(ConnectionGroup, group.parent_id)
        assert parent is not None and parent.name == "marker-parent"
        recorded = (
            await session.exec(
                select(RemoteSession).where(RemoteSession.username == "marker-alice")
            )
        ).one()
        live = await session.exec(
            select(func.count())
            .select_from(LoginSession)
            .where(col(LoginSession.revoked_at).is_(None))
        )
        assert live.one() == 0, "every restored login session is revoked"
        markers_logged = (
            await session.exec(select(func.count()).where(AuditEntry.event_type == "marker.event"))
        ).one()
    assert box.open(conn.password or "") == "conn-pw-secret"
    assert box.open(conn.private_key or "") == "KEY-secret-body"
    assert json.loads(box.open(conn.extra_secrets or "")) == {"passphrase": "pp-secret"}
    assert conn.extra_config == {"marker": True} and conn.tags == ["marker"] and conn.port == 2222
    assert box.open(recorded.recording_key or "") == markers.recording_key
    assert markers_logged >= 3
    assert kernel.settings.get("app.name") == "Marker Instance"
    assert kernel.settings.get(SECRET_SETTING) == "tok-secret-7"
    chain = await kernel.audit.verify_chain()
    assert chain.ok, chain.problem
    # The restored signing key works: a restored user gets a session that authenticates.
    issued = await kernel.identity.issue_session(alice, ClientInfo(ip_address="127.0.0.1"))
    caller = await kernel.identity.authenticate(issued.token, ClientInfo(ip_address="127.0.0.1"))
    assert caller.username == "marker-alice" and caller.can("settings.backup")
    every_session = kernel.session_history.filter_from({})
    found = await recsearch.service(kernel).search(
        caller, "search text", Page(1, 25), every_session
    )
    assert found.total == 1 and [(h.session["id"], h.offset_ms) for h in found.hits] == [
        (recorded.id, 4_200)
    ]
    await kernel.audit.record("after.restore", actor=caller)
    assert (await kernel.audit.verify_chain()).ok
    assert await audit_counts(kernel) == [await counted_entries(kernel)]
    if with_recordings:
        recordings = kernel.config.resolved_recordings_dir
        for name, content in markers.recording_bytes.items():
            assert (recordings / name).read_bytes() == content, name


async def audit_counts(kernel: Kernel) -> list[int]:
    """The counter rows' ``entries`` (one row when all is well)."""
    async with kernel.db.session() as session:
        return list((await session.exec(select(AuditCount.entries))).all())


async def counted_entries(kernel: Kernel) -> int:
    """The audit entries present, counted."""
    async with kernel.db.session() as session:
        return int((await session.exec(select(func.count()).select_from(AuditEntry))).one())


async def export_to(kernel: Kernel, path: Path, *, include_recordings: bool = True) -> Path:
    """Write an archive of ``kernel`` to ``path``."""
    with path.open("wb") as handle:
        async for chunk in kernel.backups.export(PASSWORD, include_recordings=include_recordings):
            handle.write(chunk)
    return path


async def restore_from(kernel: Kernel, path: Path, password: str = PASSWORD) -> Any:
    """Restore ``path`` into ``kernel``."""
    async with kernel.backups.import_slot() as slot:
        return await kernel.backups.restore(path, password, slot)


def rewrite(
    source: Path,
    target: Path,
    *,
    password: str = PASSWORD,
    edit_meta: Any = None,
    edit_rows: Any = None,
    drop_parts: tuple[str, ...] = (),
) -> Path:
    """Re-seal an archive with changed content (a properly encrypted, "valid" archive).

    ``edit_meta(meta)`` changes the metadata in place; ``edit_rows(table, rows)``
    returns the new list of rows (each a list of values) for a table.
    """
    from hostgate.services.backup.archive import FrameReader, FrameWriter, Header, derive_key
    from hostgate.services.backup.records import (
        META,
        Begin,
        Chunk,
        End,
        Finished,
        PartSealer,
        read_parts,
    )

    parts: list[tuple[str, str, bytes]] = []
    with source.open("rb") as handle:
        header = Header.parse(handle.read(64))
        key = derive_key(password, header)
        current: Begin | None = None
        data = bytearray()
        for item in read_parts(FrameReader(handle, header, key)):
            if isinstance(item, Begin):
                current, data = item, bytearray()
            elif isinstance(item, Chunk):
                data += item.data
            elif isinstance(item, End):
                assert current is not None
                parts.append((current.name, current.kind, bytes(data)))
            elif isinstance(item, Finished):
                summary = {k: v for k, v in item.manifest.items() if k != "parts"}
    sealer = PartSealer(FrameWriter(header, key))
    with target.open("wb") as out:
        out.write(sealer.frames.start())
        for name, kind, content in parts:
            if name in drop_parts:
                continue
            if name == META and edit_meta is not None:
                meta = json.loads(content)
                edit_meta(meta)
                content = json.dumps(meta).encode()
            if kind == "table" and edit_rows is not None:
                table = name[3:].removesuffix(".jsonl")
                rows = [json.loads(line) for line in content.splitlines()]
                rows = edit_rows(table, rows)
                content = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
            for frame in sealer.whole(name, kind, content):
                out.write(frame)
        for frame in sealer.finish(summary):
            out.write(frame)
    return target


def column_index(meta: dict[str, Any], table: str, column: str) -> int:
    """Where a column sits in a table's rows."""
    for entry in meta["schema"]["tables"]:
        if entry["name"] == table:
            return [name for name, _ in entry["columns"]].index(column)
    raise KeyError(table)


def read_meta(source: Path, password: str = PASSWORD) -> dict[str, Any]:
    """An archive's metadata."""
    from hostgate.services.backup.archive import FrameReader, Header, derive_key
    from hostgate.services.backup.records import Chunk, End, read_parts

    with source.open("rb") as handle:
        header = Header.parse(handle.read(64))
        data = bytearray()
        for item in read_parts(FrameReader(handle, header, derive_key(password, header))):
            if isinstance(item, Chunk):
                data += item.data
            elif isinstance(item, End):
                return json.loads(bytes(data))  # type: ignore[no-any-return]
    raise AssertionError("no metadata")
