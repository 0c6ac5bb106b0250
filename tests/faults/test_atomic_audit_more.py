"""More audited changes whose change and audit entry are stored together, or neither is.

The same fault as ``test_atomic_audit.py`` (every ``INSERT INTO audit_log`` fails
with SQLITE_FULL), over the changes moved onto ``audit.atomic()`` after users,
roles, connections, groups and shares: the profile (profile, password, MFA),
login sessions (revoke, revoke others, logout), host keys, connection import,
notifications (rules, channels, retention, the delivery log), the session history
purge, successful logins (the session, the reset failure count) and failed logins
(the failure count and the account lock).

Changes without an HTTP path short of a real SSH, LDAP or OIDC server (host keys
trusted or changed on connect, users created at their first external login) and
background jobs (recordings retention, the delivery log's retention purge) are made
through the kernel. Where files go with the change (recordings), they must still be
there after a refused change: files are deleted only after the commit.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import hostgate_chat.plugin
import hostgate_notifications.plugin
import pyotp
import pytest
from hostgate.config import Config
from hostgate.db.models.connections import Connection, HostKey
from hostgate.db.models.identity import LoginSession, User
from hostgate.db.models.sessions import RemoteSession
from hostgate.db.models.settings import SettingValue
from hostgate.errors import Conflict
from hostgate.kernel import Kernel
from hostgate.services.connections.hostkeys import fingerprint
from hostgate.services.identity.identity import ClientInfo
from hostgate.timefmt import utcnow
from hostgate_notifications.models import (
    NotificationChannel,
    NotificationLogEntry,
    NotificationRule,
)
from hostgate_notifications.service import service as notifications_of
from sqlmodel import select

from tests.faults.atomic_support import (
    Case,
    KernelCase,
    World,
    check_http_case,
    check_kernel_case,
    nothing,
)
from tests.services.connections.conftest import FakeProtocols
from tests.services.identity.helpers import API, enable_mfa, next_code
from testsupport.fixtures import PASSWORD

RETENTION_KEY = "notifications.log_retention_days"
OLD_KEY = b"the host key the server showed first"
NEW_KEY = b"the host key the server shows now"


@pytest.fixture
def plugins() -> list[object]:
    return [FakeProtocols(), hostgate_chat.plugin, hostgate_notifications.plugin]


@pytest.fixture
def config(config: Config) -> Config:
    """The delivery log's purge job stays out of the way: the cases purge on their own."""
    return config.with_overrides(
        plugin_options={"notifications": {"first_housekeeping_delay": 3600.0}}
    )


# -- what each case prepares (before the fault) ------------------------------------


async def admin_hash(world: World) -> None:
    world.ids["hash"] = (await world.get(User, world.admin.id)).password_hash


async def mfa_started(world: World) -> None:
    started = await world.client.post(f"{API}/profile/mfa/setup", headers=world.admin.headers)
    world.ids["totp"] = pyotp.TOTP((await started.get_json())["secret"])
    world.ids["steps"] = iter(range(2))


async def mfa_on(world: World) -> None:
    await enable_mfa(world.client, world.admin.token)


async def admin_session(world: World) -> None:
    login = await world.find(LoginSession, user_id=world.admin.id)
    world.ids["session"] = login.id


async def a_second_session(world: World) -> None:
    user = await world.get(User, world.admin.id)
    issued = await world.kernel.identity.issue_session(user, ClientInfo(ip_address="10.0.0.9"))
    world.ids["session"] = issued.session.id


async def a_connection(world: World) -> None:
    connection = await world.make_connection(world.admin, "fakedesk")
    world.ids["connection"] = connection.id
    world.ids["row"] = connection


def _key(connection_id: str, state: str, blob: bytes) -> HostKey:
    return HostKey(
        connection_id=connection_id,
        state=state,
        algorithm="ssh-ed25519",
        fingerprint=fingerprint(blob),
        public_key=base64.b64encode(blob).decode(),
    )


async def a_trusted_key(world: World) -> None:
    await a_connection(world)
    await world.add(_key(world.ids["connection"], "trusted", OLD_KEY))


async def a_changed_key(world: World) -> None:
    await a_trusted_key(world)
    await world.add(_key(world.ids["connection"], "pending", NEW_KEY))


async def a_rule(world: World) -> None:
    created = await world.client.post(
        f"{API}/notifications/rules",
        headers=world.admin.headers,
        json={"name": "deletions", "events": ["user.deleted"], "actions": [{"channel": "slack"}]},
    )
    world.ids["rule"] = (await created.get_json())["rule"]["id"]


async def _log_entry(world: World, age: timedelta) -> None:
    entry = NotificationLogEntry(
        rule_id="r1",
        rule_name="rule r1",
        channel="webhook",
        status="failed",
        error="boom",
        payload={"subject": "s", "text": "t", "event": {}},
        sent_at=utcnow() - age,
        created_at=utcnow() - age,
    )
    world.ids["entry"] = (await world.add(entry)).id


async def a_log_entry(world: World) -> None:
    await _log_entry(world, timedelta(0))


async def a_60_day_old_log_entry(world: World) -> None:
    await _log_entry(world, timedelta(days=60))


async def a_100_day_old_log_entry(world: World) -> None:
    await _log_entry(world, timedelta(days=100))


async def _recorded_session(world: World, age: timedelta) -> None:
    directory = world.kernel.recordings.directory
    directory.mkdir(parents=True, exist_ok=True)
    name = "fault-test.cast"
    (directory / name).write_bytes(b"recorded bytes")
    row = RemoteSession(
        user_id=world.admin.id,
        username=world.admin.username,
        connection_name="desk",
        protocol="fakedesk",
        started_at=utcnow() - age,
        ended_at=utcnow() - age + timedelta(minutes=5),
        recording_state="complete",
        recording_format="cast",
        recording_file=name,
    )
    world.ids["session"] = (await world.add(row)).id
    world.ids["file"] = directory / name


async def a_recorded_session(world: World) -> None:
    await _recorded_session(world, timedelta(hours=1))


async def an_old_recording_and_a_2_day_retention(world: World) -> None:
    await _recorded_session(world, timedelta(days=10))
    await world.kernel.settings.update({"recordings.retention_days": 2})


async def _failures(world: World, count: int) -> None:
    bob = await world.make_user("bob")
    user = await world.get(User, bob.id)
    user.failed_login_count = count
    await world.add(user)
    world.ids["user"] = bob.id
    world.ids["failures"] = count


async def a_user_one_failure_from_the_lock(world: World) -> None:
    attempts = int(world.kernel.settings.get("security.max_login_attempts"))
    await _failures(world, attempts - 1)


async def a_user_without_failures(world: World) -> None:
    await _failures(world, 0)


async def a_user_with_two_failures(world: World) -> None:
    await _failures(world, 2)
    world.ids["sessions"] = len(await _login_sessions(world))


async def _login_sessions(world: World) -> list[LoginSession]:
    async with world.kernel.db.session() as session:
        query = select(LoginSession).where(LoginSession.user_id == world.ids["user"])
        return list((await session.exec(query)).all())


# -- request bodies computed per attempt ---------------------------------------------


async def a_fresh_code(world: World) -> dict[str, Any]:
    # the refused attempt used its time step up (that is stored on its own): the next
    # attempt sends the following step's code, still inside the drift window
    return {"token": next_code(world.ids["totp"], next(world.ids["steps"]))}


# -- whether the change is stored --------------------------------------------------


async def admin_renamed(world: World) -> bool:
    return bool((await world.get(User, world.admin.id)).display_name == "Chief")


async def admin_password_changed(world: World) -> bool:
    return bool((await world.get(User, world.admin.id)).password_hash != world.ids["hash"])


async def mfa_enabled(world: World) -> bool:
    return bool((await world.get(User, world.admin.id)).mfa_enabled)


async def mfa_disabled(world: World) -> bool:
    return not (await world.get(User, world.admin.id)).mfa_enabled


async def session_revoked(world: World) -> bool:
    return (await world.get(LoginSession, world.ids["session"])).revoked_at is not None


async def key_accepted(world: World) -> bool:
    pending = await world.find(HostKey, connection_id=world.ids["connection"], state="pending")
    return pending is None


async def keys_forgotten(world: World) -> bool:
    return await world.find(HostKey, connection_id=world.ids["connection"]) is None


async def key_trusted(world: World) -> bool:
    return await world.find(HostKey, connection_id=world.ids["connection"]) is not None


async def new_key_pending(world: World) -> bool:
    pending = await world.find(HostKey, connection_id=world.ids["connection"], state="pending")
    return pending is not None


async def connections_imported(world: World) -> bool:
    return await world.find(Connection, name="imported box") is not None


def _cached(world: World) -> dict[str, NotificationRule]:
    return notifications_of(world.kernel).rules.cache


async def rule_created(world: World) -> bool:
    row = await world.find(NotificationRule, name="fresh rule")
    cached = any(rule.name == "fresh rule" for rule in _cached(world).values())
    assert cached == (row is not None), "the rule cache and the database disagree"
    return row is not None


async def rule_renamed(world: World) -> bool:
    renamed = (await world.get(NotificationRule, world.ids["rule"])).name == "renamed rule"
    cached = _cached(world)[world.ids["rule"]].name == "renamed rule"
    assert cached == renamed, "the rule cache and the database disagree"
    return bool(renamed)


async def rule_disabled(world: World) -> bool:
    disabled = not (await world.get(NotificationRule, world.ids["rule"])).enabled
    assert (not _cached(world)[world.ids["rule"]].enabled) == disabled, "cache and database"
    return disabled


async def rule_gone(world: World) -> bool:
    gone = await world.get(NotificationRule, world.ids["rule"]) is None
    assert (world.ids["rule"] not in _cached(world)) == gone, "cache and database disagree"
    return gone


async def webhook_enabled(world: World) -> bool:
    row = await world.get(NotificationChannel, "webhook")
    return row is not None and bool(row.enabled)


async def log_entry_gone(world: World) -> bool:
    return await world.get(NotificationLogEntry, world.ids["entry"]) is None


async def retention_shortened(world: World) -> bool:
    purged = await log_entry_gone(world)
    row = await world.get(SettingValue, RETENTION_KEY)
    assert (row is not None and row.value == 30) == purged, "setting and purge disagree"
    assert (notifications_of(world.kernel).retention_days() == 30) == purged, "memory and database"
    return purged


def _file_matches_row(world: World, row_says_gone: bool) -> None:
    path: Path = world.ids["file"]
    assert path.exists() != row_says_gone, "the recording file and its row disagree"


async def history_purged(world: World) -> bool:
    gone = await world.get(RemoteSession, world.ids["session"]) is None
    _file_matches_row(world, gone)
    return gone


async def recording_purged(world: World) -> bool:
    row = await world.get(RemoteSession, world.ids["session"])
    purged = row.recording_file is None
    assert (row.recording_state == "purged") == purged
    _file_matches_row(world, purged)
    return purged


async def failure_counted(world: World) -> bool:
    user = await world.get(User, world.ids["user"])
    counted = user.failed_login_count != world.ids["failures"]
    attempts = int(world.kernel.settings.get("security.max_login_attempts"))
    locks = world.ids["failures"] + 1 >= attempts
    assert (user.locked_until is not None) == (counted and locks), "count and lock disagree"
    return bool(counted)


async def logged_in(world: World) -> bool:
    opened = len(await _login_sessions(world)) > world.ids["sessions"]
    user = await world.get(User, world.ids["user"])
    reset = user.failed_login_count == 0
    assert reset == opened, "the failure count and the login sessions disagree"
    return reset


async def carol_created(world: World) -> bool:
    return await world.find(User, username_key="carol") is not None


async def dave_created(world: World) -> bool:
    return await world.find(User, username_key="dave") is not None


# -- kernel-level changes --------------------------------------------------------------


async def connect_first_time(world: World) -> None:
    await world.kernel.connections.host_keys.check(world.ids["row"], "ssh-ed25519", OLD_KEY)


async def connect_with_a_new_key(world: World) -> None:
    with pytest.raises(Conflict) as refused:
        await world.kernel.connections.host_keys.check(world.ids["row"], "ssh-ed25519", NEW_KEY)
    assert refused.value.code == "host_key_changed"


async def first_ldap_login(world: World) -> None:
    await world.kernel.logins.provision_external(
        "ldap", "uid=carol,ou=people,dc=example,dc=org", "carol", "Carol", "carol@example.org"
    )


async def first_oidc_login(world: World) -> None:
    await world.kernel.logins.provision_external(
        "oidc", "subject-4711", "dave", "Dave", "dave@example.org"
    )


async def apply_recordings_retention(world: World) -> None:
    assert await world.kernel.recordings.apply_retention() == 1


async def purge_the_delivery_log(world: World) -> None:
    assert await notifications_of(world.kernel).purge() == 1


IMPORT = {
    "format": "hostgate-connections",
    "version": 1,
    "groups": [{"id": "g1", "name": "imported group"}],
    "connections": [
        {"id": "c1", "name": "imported box", "protocol": "fakedesk", "host": "127.0.0.1",
         "groupId": "g1"},
    ],
}  # fmt: skip
NEW_RULE = {"name": "fresh rule", "events": ["user.deleted"], "actions": [{"channel": "slack"}]}
WEBHOOK = {"enabled": True, "config": {"url": "https://hooks.example.org/hostgate"}}
WRONG_LOGIN = {"username": "bob", "password": "not the password"}


CASES = [
    Case("profile.updated", nothing, "PUT", "/profile", {"displayName": "Chief"}, 200,
         admin_renamed),
    Case("auth.password_changed", admin_hash, "PUT", "/profile/password",
         {"currentPassword": PASSWORD, "newPassword": "another-long-one"}, 200,
         admin_password_changed),
    Case("auth.mfa_enabled", mfa_started, "POST", "/profile/mfa/verify", a_fresh_code, 200,
         mfa_enabled),
    Case("auth.mfa_disabled", mfa_on, "POST", "/profile/mfa/disable", {"password": PASSWORD},
         200, mfa_disabled),
    Case("auth.session_revoked", a_second_session, "DELETE",
         "/profile/login-sessions/{session}", None, 200, session_revoked, label="one"),
    Case("auth.session_revoked", a_second_session, "DELETE", "/profile/login-sessions", None,
         200, session_revoked, label="others"),
    Case("auth.logout", admin_session, "POST", "/auth/logout", None, 200, session_revoked),
    Case("auth.login", a_user_with_two_failures, "POST", "/auth/login",
         {"username": "bob", "password": PASSWORD}, 200, logged_in),
    Case("auth.login_failed", a_user_without_failures, "POST", "/auth/login", WRONG_LOGIN,
         401, failure_counted),
    Case("auth.account_locked", a_user_one_failure_from_the_lock, "POST", "/auth/login",
         WRONG_LOGIN, 401, failure_counted,
         entries=("auth.login_failed", "auth.account_locked")),
    Case("connection.host_key_accepted", a_changed_key, "POST",
         "/connections/{connection}/host-key/accept", {}, 200, key_accepted),
    Case("connection.host_key_forgotten", a_changed_key, "DELETE",
         "/connections/{connection}/host-key", None, 200, keys_forgotten),
    Case("connections.imported", nothing, "POST", "/connections/import", IMPORT, 200,
         connections_imported),
    Case("notifications.rule_created", nothing, "POST", "/notifications/rules", NEW_RULE, 201,
         rule_created),
    Case("notifications.rule_updated", a_rule, "PUT", "/notifications/rules/{rule}",
         {"name": "renamed rule"}, 200, rule_renamed),
    Case("notifications.rule_disabled", a_rule, "PATCH", "/notifications/rules/{rule}/toggle",
         None, 200, rule_disabled),
    Case("notifications.rule_deleted", a_rule, "DELETE", "/notifications/rules/{rule}", None,
         200, rule_gone),
    Case("notifications.channel_updated", nothing, "PUT", "/notifications/channels/webhook",
         WEBHOOK, 200, webhook_enabled),
    Case("notifications.log_entry_deleted", a_log_entry, "DELETE",
         "/notifications/log/{entry}", None, 200, log_entry_gone),
    Case("notifications.log_cleared", a_log_entry, "DELETE", "/notifications/log?status=failed",
         None, 200, log_entry_gone),
    Case("notifications.retention_changed", a_60_day_old_log_entry, "PUT",
         "/notifications/settings", {"retentionDays": 30}, 200, retention_shortened,
         entries=("notifications.log_purged", "notifications.retention_changed")),
    Case("sessions.purged", a_recorded_session, "DELETE", "/sessions", None, 200,
         history_purged),
]  # fmt: skip

KERNEL_CASES = [
    KernelCase("connection.host_key_trusted", a_connection, connect_first_time, key_trusted),
    KernelCase("connection.host_key_changed", a_trusted_key, connect_with_a_new_key,
               new_key_pending),
    KernelCase("user.created", nothing, first_ldap_login, carol_created, label="ldap"),
    KernelCase("user.created", nothing, first_oidc_login, dave_created, label="oidc"),
    KernelCase("recordings.retention_purged", an_old_recording_and_a_2_day_retention,
               apply_recordings_retention, recording_purged),
    KernelCase("notifications.log_purged", a_100_day_old_log_entry, purge_the_delivery_log,
               log_entry_gone),
]  # fmt: skip


@pytest.fixture
def world(
    kernel: Kernel,
    admin: Any,
    make_user: Callable[..., Awaitable[Any]],
    make_connection: Callable[..., Awaitable[Connection]],
    client: Any,
) -> World:
    return World(kernel, admin, make_user, make_connection, client=client)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_a_failed_audit_write_stores_neither_the_change_nor_the_entry(
    case: Case, world: World, client: Any
) -> None:
    await check_http_case(case, world, client)


@pytest.mark.parametrize("case", KERNEL_CASES, ids=[case.id for case in KERNEL_CASES])
async def test_a_change_made_by_the_kernel_is_stored_with_its_entry_or_not_at_all(
    case: KernelCase, world: World
) -> None:
    await check_kernel_case(case, world)
