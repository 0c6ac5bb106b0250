"""Browser approval: an empty password prints a link; the user approves in the browser app.

The client is asyncssh's (keyboard-interactive, the instructions read as OpenSSH
prints them) and, last, the real OpenSSH ``ssh`` answering through ``SSH_ASKPASS``.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from hostgate_sshd import approval as approval_module
from hostgate_sshd import server as server_module

from plugins.sshd.tests.door import audit_entries, door_of, known_hosts, ssh_binary

WEB_URL = "https://gateway.example.org"
CODE = re.compile(r"/ssh-approve/([A-Z0-9]{4}-[A-Z0-9]{4})")


class Approver(asyncssh.SSHClient):
    """Answers the password prompt with nothing and notes the instructions it is shown."""

    def __init__(self) -> None:
        self.instructions: list[str] = []
        self.shown = asyncio.Event()

    def kbdint_auth_requested(self) -> str:
        return ""

    def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Sequence[tuple[str, bool]]
    ) -> list[str]:
        self.instructions.append(instructions)
        if CODE.search(instructions):
            self.shown.set()
        return ["" for _ in prompts]


async def start(port: int, login: str) -> tuple[asyncio.Task[Any], Approver]:
    """A client signing in by approval, and the code once the door printed it."""
    approver = Approver()
    task = asyncio.ensure_future(
        asyncssh.create_connection(
            lambda: approver,
            "127.0.0.1",
            port,
            username=login,
            known_hosts=None,
            agent_path=None,
            client_keys=None,
            password_auth=False,
            kbdint_auth=True,
        )
    )
    shown = asyncio.ensure_future(approver.shown.wait())
    await asyncio.wait({task, shown}, return_when=asyncio.FIRST_COMPLETED)
    assert approver.shown.is_set(), approver.instructions
    return task, approver


def code_of(approver: Approver) -> str:
    match = CODE.search(approver.instructions[-1])
    assert match is not None
    return match.group(1)


@pytest.fixture
async def web_url(kernel: Any) -> str:
    await kernel.settings.update({"sshd.web_url": WEB_URL})
    return WEB_URL


async def box(make_connection, user, sshd):
    await make_connection(
        user, "ssh", sshd.host, sshd.port, name="box", username=sshd.username,
        password=sshd.password,
    )  # fmt: skip


async def test_an_approved_sign_in_opens_the_session_once(
    client, kernel, make_user, make_connection, sshd, web_url
):
    user = await make_user("alice")
    other = await make_user("bob")
    await box(make_connection, user, sshd)
    task, approver = await start(door_of(kernel).port, "alice:box")
    code = code_of(approver)
    assert f"{WEB_URL}/ssh-approve/{code}" in approver.instructions[-1]
    assert "empty password" in approver.instructions[0]

    shown = await client.get(f"/api/v1/sshd/approvals/{code}", headers=user.headers)
    assert shown.status_code == 200
    body = await shown.get_json()
    assert body["username"] == "alice" and body["clientAddress"] == "127.0.0.1"
    assert body["lifetimeSeconds"] == 120
    typed = code.lower().replace("-", "")  # as a person may type it
    got = await client.get(f"/api/v1/sshd/approvals/{typed}", headers=user.headers)
    assert got.status_code == 200
    # another user does not see it; unknown and odd codes are the same 404
    got = await client.get(f"/api/v1/sshd/approvals/{code}", headers=other.headers)
    assert got.status_code == 404
    for odd in ("ABCD-EFGH", "x" * 500, "%2e%2e", "0OIl-0OIl"):
        got = await client.get(f"/api/v1/sshd/approvals/{odd}", headers=user.headers)
        assert got.status_code == 404, odd
        assert (await got.get_json())["code"] == "ssh_approval_not_found"
    refused = await client.post(
        f"/api/v1/sshd/approvals/{code}", json={"approve": True}, headers=other.headers
    )
    assert refused.status_code == 404
    bad = await client.post(
        f"/api/v1/sshd/approvals/{code}", json={"approve": "yes please"}, headers=user.headers
    )
    assert bad.status_code == 400

    approved = await client.post(
        f"/api/v1/sshd/approvals/{code.lower()}", json={"approve": True}, headers=user.headers
    )
    assert approved.status_code == 200, await approved.get_data()
    conn, _ = await asyncio.wait_for(task, 30)
    async with conn:
        result = await conn.run("echo approved-$((6*7))", check=False)
    assert result.exit_status == 0 and "approved-42" in str(result.stdout)

    again = await client.post(
        f"/api/v1/sshd/approvals/{code}", json={"approve": True}, headers=user.headers
    )
    assert again.status_code == 404  # single use
    [login] = await audit_entries(client, user, "auth.login")
    assert login["details"]["method"] == "ssh-approval" and login["details"]["via"] == "ssh"
    [decided] = await audit_entries(client, user, "sshd.login_approved")
    assert decided["details"]["code"] == code and decided["details"]["clientAddress"]


async def test_a_refused_sign_in_is_counted_and_told(client, kernel, make_user, web_url):
    user = await make_user("alice")
    task, approver = await start(door_of(kernel).port, "alice:box")
    response = await client.post(
        f"/api/v1/sshd/approvals/{code_of(approver)}",
        json={"approve": False},
        headers=user.headers,
    )
    assert response.status_code == 200
    with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
        await asyncio.wait_for(task, 30)
    assert await audit_entries(client, user, "auth.login") == []
    [failed] = await audit_entries(client, user, "auth.login_failed")
    assert failed["details"]["reason"] == "ssh_approval_refused"
    assert await audit_entries(client, user, "sshd.login_refused")


async def test_an_unanswered_request_expires(
    client, kernel, make_user, web_url, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(approval_module, "APPROVAL_SECONDS", 1)
    monkeypatch.setattr(server_module, "APPROVAL_SECONDS", 1)
    user = await make_user("alice")
    task, approver = await start(door_of(kernel).port, "alice:box")
    code = code_of(approver)
    with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
        await asyncio.wait_for(task, 30)
    late = await client.post(
        f"/api/v1/sshd/approvals/{code}", json={"approve": True}, headers=user.headers
    )
    assert late.status_code == 404
    [failed] = await audit_entries(client, user, "auth.login_failed")
    assert failed["details"]["reason"] == "ssh_approval_expired"


async def test_a_name_without_an_account_gets_a_link_nobody_can_approve(
    client, kernel, admin, web_url
):
    task, approver = await start(door_of(kernel).port, "nobody:box")
    code = code_of(approver)
    got = await client.get(f"/api/v1/sshd/approvals/{code}", headers=admin.headers)
    assert got.status_code == 404
    task.cancel()


async def test_the_openssh_client_prints_the_link_and_waits_for_the_browser(
    client, kernel, make_user, make_connection, sshd, web_url, tmp_path: Path
):
    """``ssh`` with no key: its askpass answers the password prompt with an empty line."""
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    hosts = await known_hosts(client, user, tmp_path)
    askpass = tmp_path / "askpass"
    askpass.write_text("#!/bin/sh\necho\n")
    askpass.chmod(0o700)
    proc = await asyncio.create_subprocess_exec(
        ssh_binary(), "-F", "/dev/null", "-o", f"UserKnownHostsFile={hosts}",
        "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
        "-o", "PubkeyAuthentication=no", "-o", "IdentityAgent=none",
        "-o", "PreferredAuthentications=keyboard-interactive",
        "-p", str(door_of(kernel).port), "-l", "alice:box", "127.0.0.1", "echo via-browser",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True,
        env={**os.environ, "HOME": str(tmp_path), "SSH_ASKPASS": str(askpass),
             "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"},
    )  # fmt: skip
    assert proc.stderr is not None and proc.stdout is not None
    seen = ""
    while not CODE.search(seen):
        line = await asyncio.wait_for(proc.stderr.readline(), 30)
        assert line, seen
        seen += line.decode(errors="replace")
    code = CODE.search(seen).group(1)  # type: ignore[union-attr]
    assert f"{WEB_URL}/ssh-approve/{code}" in seen
    response = await client.post(
        f"/api/v1/sshd/approvals/{code}", json={"approve": True}, headers=user.headers
    )
    assert response.status_code == 200
    out = await asyncio.wait_for(proc.stdout.read(), 30)
    assert await asyncio.wait_for(proc.wait(), 30) == 0
    assert out.decode().strip() == "via-browser"
