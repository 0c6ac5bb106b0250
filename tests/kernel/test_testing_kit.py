"""The pack author's test kit starts its app with the patient harness the suite uses too."""

from __future__ import annotations

import gc
import os

import pytest
from hostgate.config import Config
from hostgate.services.sessions.file_transfers import takes_size
from hostgate.testing import (
    HARNESS_SECONDS,
    SERVED_PIECE,
    LoggedInClient,
    MakeConnection,
    MakeUser,
    PatientTestApp,
    audit_entries,
    session_entries,
)
from quart import Quart
from quart.testing.app import DEFAULT_TIMEOUT
from quart.testing.app import TestApp as QuartTestApp

from tests.services.sessions.files import memfs


@pytest.fixture
def hostgate_config(hostgate_config: Config, monkeypatch: pytest.MonkeyPatch) -> Config:
    """As in a pack's own suite: Quart's default harness, not this suite's patched one."""
    monkeypatch.setattr(Quart, "test_app_class", QuartTestApp)
    return hostgate_config


async def test_the_kit_app_runs_under_the_patient_harness(hostgate_app: Quart) -> None:
    running = [o for o in gc.get_objects() if isinstance(o, QuartTestApp) and o.app is hostgate_app]
    assert [type(harness) for harness in running] == [PatientTestApp]
    assert running[0].startup_timeout == running[0].shutdown_timeout == HARNESS_SECONDS
    assert HARNESS_SECONDS > DEFAULT_TIMEOUT


def test_the_suite_uses_the_kit_harness() -> None:
    """One implementation: every ``app.test_app()`` of the suite is the kit's harness."""
    assert Quart.test_app_class is PatientTestApp


class TestAFilePackUnderTheKit:
    """An upload through the kit's client reaches a pack's ``write`` as the served
    gateway hands it on: in 1 MiB pieces, with the declared size."""

    @pytest.fixture
    def hostgate_packs(self) -> list[object]:
        memfs.STATE.reset()
        return [memfs]

    async def test_write_gets_served_pieces_and_the_declared_size(
        self, hostgate_client: LoggedInClient, hostgate_connection: MakeConnection
    ) -> None:
        connection = await hostgate_connection("memfs", 1)
        body = os.urandom(2 * SERVED_PIECE + 12345)
        response = await hostgate_client.post(
            f"/api/v1/memfs/{connection['id']}/upload",
            query_string={"path": "/up.bin"},
            data=body,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert response.status_code == 200, await response.get_json()
        assert memfs.STATE.files[connection["id"]]["/up.bin"] == body
        assert memfs.STATE.declared == [len(body)]
        assert memfs.STATE.pieces == [SERVED_PIECE, SERVED_PIECE, 12345]

    async def test_a_write_without_size_still_works_with_a_deprecation_warning(
        self, hostgate_client: LoggedInClient, hostgate_connection: MakeConnection
    ) -> None:
        connection = await hostgate_connection("memold", 1)
        takes_size.cache_clear()
        with pytest.warns(DeprecationWarning, match=r"LegacyFiles\.write\(\) takes no 'size'"):
            response = await hostgate_client.post(
                f"/api/v1/memold/{connection['id']}/upload",
                query_string={"path": "/old.txt"},
                data=b"written the old way",
                headers={"Content-Type": "application/octet-stream"},
            )
        assert response.status_code == 200, await response.get_json()
        assert memfs.STATE.files[connection["id"]]["/old.txt"] == b"written the old way"
        assert memfs.STATE.declared == []

    async def test_a_connection_to_a_loopback_server_is_usable(
        self, hostgate_client: LoggedInClient, hostgate_connection: MakeConnection
    ) -> None:
        connection = await hostgate_connection("memfs", 2121, username="alice")
        assert (connection["host"], connection["port"]) == ("127.0.0.1", 2121)
        response = await hostgate_client.post(
            f"/api/v1/memfs/{connection['id']}/list", json={"path": "/"}
        )
        assert response.status_code == 200, await response.get_json()


class TestUsersAuditAndSessionsThroughTheKit:
    """A pack's tests make users and read the audit log and sessions without kernel tables."""

    async def test_users_with_a_role_or_exact_permissions(
        self, hostgate_client: LoggedInClient, hostgate_user: MakeUser
    ) -> None:
        bob = await hostgate_user("bob")
        assert bob.user["username"] == "bob"
        me = (await (await bob.get("/api/v1/auth/me")).get_json())["user"]
        assert me["username"] == "bob" and "users.manage" not in me["permissions"]
        carol = await hostgate_user("carol", permissions=["users.manage"])
        assert (await carol.get("/api/v1/users")).status_code == 200
        assert (await bob.get("/api/v1/users")).status_code == 403
        created = await audit_entries(hostgate_client, "user.created")
        assert [entry["target"] for entry in created] == ["carol", "bob"]
        # a user sees only their own entries
        assert {entry["username"] for entry in await audit_entries(bob)} == {"bob"}

    async def test_sessions_are_read_through_the_api(
        self, hostgate_client: LoggedInClient, hostgate_user: MakeUser
    ) -> None:
        assert await session_entries(hostgate_client) == []
        bob = await hostgate_user("bob")
        assert await session_entries(bob, protocol="ssh") == []
