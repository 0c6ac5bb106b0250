"""Keyboard-interactive sign-in: the web's local password check, then its TOTP step."""

from __future__ import annotations

from collections.abc import Sequence

import asyncssh
import pytest

from plugins.sshd.tests.door import audit_entries, door_of
from tests.services.identity.helpers import enable_mfa, next_code


class Answers(asyncssh.SSHClient):
    """Answers each keyboard-interactive prompt from a list, and notes the prompts."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.prompts: list[str] = []

    def kbdint_auth_requested(self) -> str:
        return ""

    def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Sequence[tuple[str, bool]]
    ) -> list[str]:
        self.prompts.extend(prompt for prompt, _ in prompts)
        return [self.answers.pop(0) for _ in prompts] if self.answers else []


async def connect(
    port: int, login: str, answers: list[str]
) -> tuple[asyncssh.SSHClientConnection, Answers]:
    client = Answers(answers)
    conn, _ = await asyncssh.create_connection(
        lambda: client,
        "127.0.0.1",
        port,
        username=login,
        known_hosts=None,
        agent_path=None,
        client_keys=None,
        password_auth=False,
        kbdint_auth=True,
    )
    return conn, client


async def box(make_connection, user, sshd):
    await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )


async def test_password_then_a_command(client, kernel, make_user, make_connection, sshd):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    conn, answered = await connect(door_of(kernel).port, "alice:box", [user.password])
    async with conn:
        result = await conn.run("echo by-password", check=False)
    assert result.exit_status == 0 and "by-password" in result.stdout
    assert answered.prompts == ["Password: "]
    [login] = await audit_entries(client, user, "auth.login")
    assert login["details"]["method"] == "local" and login["details"]["via"] == "ssh"


async def test_wrong_password_is_refused_and_counted(client, kernel, make_user):
    user = await make_user("alice")
    with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
        await connect(door_of(kernel).port, "alice:box", ["wrong-password"])
    [failed] = await audit_entries(client, user, "auth.login_failed")
    assert failed["details"]["reason"] == "invalid_password"


async def test_password_then_totp(client, kernel, make_user, make_connection, sshd):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    totp = await enable_mfa(client, user.token)
    port = door_of(kernel).port

    with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
        await connect(
            port, "alice:box", [user.password, "000000" if totp.now() != "000000" else "111111"]
        )

    conn, answered = await connect(port, "alice:box", [user.password, next_code(totp)])
    async with conn:
        result = await conn.run("echo with-totp", check=False)
    assert result.exit_status == 0 and "with-totp" in result.stdout
    assert answered.prompts == ["Password: ", "Verification code: "]
    logins = await audit_entries(client, user, "auth.login")
    assert logins[0]["details"]["mfa"] is True and logins[0]["details"]["via"] == "ssh"
    failures = await audit_entries(client, user, "auth.login_failed")
    assert [f["details"]["reason"] for f in failures] == ["invalid_mfa_code"]


class Banners(Answers):
    """Answers prompts and notes the authentication banners the door sends."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__(answers)
        self.banners: list[str] = []

    def auth_banner_received(self, msg: str, lang: str) -> None:
        self.banners.append(msg)


async def test_a_suspended_account_is_told_so_after_its_password(client, kernel, admin, make_user):
    user = await make_user("alice")
    suspended = await client.post(f"/api/v1/users/{user.id}/suspend", headers=admin.headers)
    assert suspended.status_code == 200
    port = door_of(kernel).port
    for password, told in (("wrong-password", False), (user.password, True)):
        answers = Banners([password])
        with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
            await asyncssh.create_connection(
                lambda answers=answers: answers,
                "127.0.0.1",
                port,
                username="alice:box",
                known_hosts=None,
                agent_path=None,
                client_keys=None,
                password_auth=False,
                kbdint_auth=True,
            )
        assert any("This account is suspended" in b for b in answers.banners) is told


async def test_an_account_that_must_set_up_two_step_is_sent_to_the_browser(
    client, kernel, admin, make_user
):
    user = await make_user("bea")
    saved = await client.put(
        "/api/v1/settings",
        headers=admin.headers,
        json={"security.require_mfa": "roles", "security.require_mfa_roles": "user"},
    )
    assert saved.status_code == 200
    answers = Banners([user.password])
    with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
        await asyncssh.create_connection(
            lambda: answers,
            "127.0.0.1",
            door_of(kernel).port,
            username="bea:box",
            known_hosts=None,
            agent_path=None,
            client_keys=None,
            password_auth=False,
            kbdint_auth=True,
        )
    told = [b for b in answers.banners if "two-step verification" in b]
    assert told and "browser app" in told[0]
    # no session was issued: the refusal came before it
    assert await audit_entries(client, admin, "auth.login") == []
