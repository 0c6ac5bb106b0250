"""Nobody locks everyone out: ``PUT /settings`` refuses a change after which no
administrator (a user with ``settings.manage``) could sign in with any login method,
counting only the methods each administrator can use; ``hostgate settings get/set``
repairs it from the command line, audited."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import hostgate_ldap.plugin as ldap_plugin
import hostgate_oidc.plugin as oidc_plugin
import hostgate_passkey.plugin as passkey_plugin
import pytest
from hostgate.db.models.identity import User
from sqlmodel import select

from tests.services.connections.support import audit_entries

API = "/api/v1"
KEY = "5a" * 32


@pytest.fixture
def plugins() -> list[object]:
    """Every bundled login pack."""
    return [ldap_plugin, oidc_plugin, passkey_plugin]


async def put_settings(client: Any, user: Any, body: dict[str, Any]) -> Any:
    return await client.put(f"{API}/settings", headers=user.headers, json=body)


async def set_provider(kernel: Any, user: Any, provider: str) -> None:
    """Make ``user`` an account ``provider`` created (no local password)."""
    async with kernel.db.session() as session:
        row = (await session.exec(select(User).where(User.id == user.id))).one()
        row.auth_provider, row.provider_id, row.password_hash = provider, f"{provider}-1", None
        session.add(row)
        await session.commit()


async def add_passkey(kernel: Any, user: Any) -> None:
    async with kernel.audit.atomic() as batch:
        await kernel.credentials.add(
            batch, user_id=user.id, kind="passkey", name="key", credential_id="c1", data={}
        )


async def test_switching_off_the_only_way_in_is_refused_and_changes_nothing(
    client, kernel, admin, make_user
):
    # an ordinary user who could still sign in does not count: they cannot repair it
    await make_user("bob")
    response = await put_settings(
        client, admin, {"auth.local_enabled": False, "app.name": "Locked"}
    )
    assert response.status_code == 409
    body = await response.get_json()
    assert body["code"] == "would_lock_out"
    assert "auth.local_enabled" in body["error"] and "local" in body["error"]
    assert kernel.settings.get("auth.local_enabled") is True
    assert kernel.settings.get("app.name") != "Locked"
    assert await audit_entries(kernel, "settings.updated") == []


async def test_each_admin_counts_only_the_methods_they_can_use(client, kernel, admin, make_user):
    # LDAP on, but no administrator has an LDAP account: still no way in
    ldap_user = await make_user("dirk")
    await set_provider(kernel, ldap_user, "ldap")
    assert (await put_settings(client, admin, {"auth.ldap_enabled": True})).status_code == 200
    response = await put_settings(client, admin, {"auth.local_enabled": False})
    assert response.status_code == 409

    # passkey login on, but the admin has none yet
    await put_settings(client, admin, {"security.passkey_enabled": True})
    assert (await put_settings(client, admin, {"auth.local_enabled": False})).status_code == 409
    await add_passkey(kernel, admin)
    assert (await put_settings(client, admin, {"auth.local_enabled": False})).status_code == 200
    # now the passkey is the only way in: switching it off is refused, naming it
    response = await put_settings(client, admin, {"security.passkey_enabled": False})
    assert response.status_code == 409
    error = (await response.get_json())["error"]
    assert "security.passkey_enabled" in error and "passkey" in error


async def test_an_oidc_administrator_keeps_a_way_in(client, kernel, admin, make_user):
    sso = await make_user("sso-admin", role="admin")
    await set_provider(kernel, sso, "oidc")
    response = await put_settings(
        client, admin, {"auth.oidc_enabled": True, "auth.local_enabled": False}
    )
    assert response.status_code == 200, await response.get_json()
    response = await put_settings(client, sso, {"auth.oidc_enabled": False})
    assert response.status_code == 409
    assert "auth.oidc_enabled" in (await response.get_json())["error"]


async def test_a_change_made_while_nobody_could_sign_in_is_not_refused(client, kernel, admin):
    # the state a database edit (or an older release) can leave behind
    async with kernel.db.session() as session:
        await kernel.settings.write(session, {"auth.local_enabled": False})
        await session.commit()
    kernel.settings.remember({"auth.local_enabled": False})
    before, after = await kernel.settings.update({"app.name": "Still locked"})
    assert after == {"app.name": "Still locked"}


def test_the_cli_reads_and_repairs_settings(run_cli, tmp_path, monkeypatch, capsys):
    """Set and get through the installed entry point, as a locked-out operator would."""
    from hostgate.cli import main

    env = {"HOSTGATE_DATA_DIR": str(tmp_path), "HOSTGATE_ENCRYPTION_KEY": KEY}
    for name, value in {**env, "HOSTGATE_ADMIN_PASSWORD": "root-password"}.items():
        monkeypatch.setenv(name, value)
    assert main(["setup", "--username", "root"]) == 0
    # the same guard as the API: the only administrator is local
    assert main(["settings", "set", "auth.local_enabled=false"]) == 1
    err = capsys.readouterr().err
    assert "auth.local_enabled" in err and "could sign in" in err

    # as if the API had let it through once: the CLI turns it back on
    with sqlite3.connect(tmp_path / "hostgate.db") as db:
        db.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES "
            "('auth.local_enabled', 'false', '2026-01-01 00:00:00')"
        )
    code, out, err = run_cli(
        "settings", "set", "auth.local_enabled=true", "app.name=Recovered gate", env=env
    )
    assert code == 0, err
    assert "auth.local_enabled: false -> true" in out
    code, out, err = run_cli("settings", "get", env=env)
    assert code == 0, err
    assert "auth.local_enabled = true" in out.splitlines()
    assert 'app.name = "Recovered gate"' in out.splitlines()

    with sqlite3.connect(tmp_path / "hostgate.db") as db:
        rows = db.execute(
            "SELECT username, target, details FROM audit_log "
            "WHERE event_type = 'settings.updated' ORDER BY seq"
        ).fetchall()
    [(username, target, details)] = rows
    assert username == "cli"
    assert target == "app.name, auth.local_enabled"
    assert json.loads(details)["after"]["auth.local_enabled"] is True


def test_the_cli_refuses_bad_assignments_and_stores_nothing(tmp_path, monkeypatch, capsys):
    """The same entry point in-process (no new interpreter per command)."""
    from hostgate.cli import main

    monkeypatch.setenv("HOSTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", KEY)
    for args, status in (
        (["no-equals-sign"], 2),
        (["no.such_key=1"], 1),
        (["security.max_login_attempts=many"], 1),
        (["auth.local_enabled=maybe"], 1),
        (["security.max_login_attempts=5", "app.name=" + "x" * 5000], 1),
    ):
        assert main(["settings", "set", *args]) == status, args
        assert capsys.readouterr().err.startswith("hostgate: "), args
    assert main(["settings", "get", "no.such_key"]) == 2
    assert "unknown setting key" in capsys.readouterr().err
    assert main(["settings", "set", "security.max_login_attempts=7"]) == 0
    assert main(["settings", "get", "security.max_login_attempts"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "7"
    with sqlite3.connect(tmp_path / "hostgate.db") as db:
        stored = db.execute("SELECT key FROM settings").fetchall()
    assert stored == [("security.max_login_attempts",)]


async def test_two_changes_at_once_cannot_together_lock_everyone_out(client, kernel, admin):
    await put_settings(client, admin, {"security.passkey_enabled": True})
    await add_passkey(kernel, admin)
    # each change alone leaves a way in; both together would leave none
    answers = await asyncio.gather(
        put_settings(client, admin, {"auth.local_enabled": False}),
        put_settings(client, admin, {"security.passkey_enabled": False}),
    )
    assert sorted(a.status_code for a in answers) == [200, 409]
    assert kernel.settings.get("auth.local_enabled") or kernel.settings.get(
        "security.passkey_enabled"
    )
