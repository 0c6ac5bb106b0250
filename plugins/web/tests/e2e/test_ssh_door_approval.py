"""The SSH front door in the browser: an ``ssh`` sign-in approved on its link's page, the
door's settings, host keys and revoked-keys KRL in Administration, and front-door sessions
marked in history.

The real OpenSSH client asks (its askpass answers the password prompt with an empty line,
which asks for a browser approval), against a real ``hostgate serve`` and the suite's sshd.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.peers import peer_unavailable

from .conftest import Gateway, Screens

pytestmark = pytest.mark.peer("chromium")
REVOKED_FINGERPRINT = "SHA256:" + "k" * 43
CODE = re.compile(r"(http://\S+/ssh-approve/([A-Z0-9]{4}-[A-Z0-9]{4}))")


@pytest.fixture
def gateway_env() -> dict[str, str]:
    """The front door listening on a free loopback port (the root conftest turns it off)."""
    return {"HOSTGATE_SSHD_LISTEN": "127.0.0.1:0"}


def ssh_asking_for_approval(
    port: int, login: str, home: Path, *remote: str
) -> subprocess.Popen[str]:
    """``ssh`` with no key; its askpass answers the password prompt with an empty line."""
    ssh = shutil.which("ssh")
    if ssh is None:
        peer_unavailable("ssh", "the OpenSSH client is not installed")
    assert ssh is not None
    askpass = home / "askpass"
    askpass.write_text("#!/bin/sh\necho\n")
    askpass.chmod(0o700)
    options = [
        "-F", "/dev/null",
        "-o", f"UserKnownHostsFile={home / 'known_hosts'}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=accept-new",
        "-o", "PubkeyAuthentication=no",
        "-o", "IdentityAgent=none",
        "-o", "PreferredAuthentications=keyboard-interactive",
        "-o", "ConnectTimeout=20",
    ]  # fmt: skip
    return subprocess.Popen(
        [ssh, *options, "-p", str(port), "-l", login, "127.0.0.1", *remote],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "HOME": str(home), "SSH_ASKPASS": str(askpass),
             "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"},
    )  # fmt: skip


def printed_link(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The link and code ``ssh`` printed on stderr."""
    assert proc.stderr is not None
    seen = ""
    while (found := CODE.search(seen)) is None:
        line = proc.stderr.readline()
        assert line, seen
        seen += line
    return found.group(1), found.group(2)


def test_the_door_is_set_up_in_administration_and_a_sign_in_approved_on_its_page(
    page: Any, gateway: Gateway, admin_token: str, lab_ssh: str, screens: Screens, tmp_path: Path
) -> None:
    """One gateway for both halves (a module with its own ``gateway_env`` starts one per test)."""
    door = gateway.api("GET", "/sshd/host-keys", admin_token).json()
    port = door["port"]

    # Administration -> Settings -> SSH front door: its settings, where it listens, its keys
    page.goto(f"{gateway.url}/admin/settings/sshd")
    form = page.get_by_role("form", name="SSH front door")
    expect(form.get_by_label("Listen address")).to_have_value("127.0.0.1:2222")
    status = page.get_by_role("region", name="Listener and host keys")
    expect(status.get_by_test_id("door-listening")).to_contain_text(f"127.0.0.1:{port}")
    shown = status.get_by_role("definition")
    expect(shown).to_have_count(2)
    assert shown.all_inner_texts() == [key["fingerprint"] for key in door["hostKeys"]]
    form.get_by_label("Trusted user CA keys").fill("not a key")
    form.get_by_role("button", name="Save changes").click()
    expect(form.get_by_text("line 1 is not an OpenSSH public key line")).to_be_visible()
    form.get_by_label("Trusted user CA keys").fill("")
    form.get_by_label("Revoked keys").fill("serial: 17")
    form.get_by_role("button", name="Save changes").click()
    expect(form.get_by_text("line 1: serial: needs a ca: line before it")).to_be_visible()
    form.get_by_label("Web URL").fill(gateway.url)
    form.get_by_label("Revoked keys").fill(f"# a lost laptop\nhash: {REVOKED_FINGERPRINT}\n")
    form.get_by_role("button", name="Save changes").click()
    expect(form.get_by_role("status")).to_be_visible()
    with page.expect_download() as download:
        status.get_by_test_id("door-krl").click()
    krl = Path(download.value.path()).read_bytes()
    assert krl.startswith(b"SSHKRL\n\0")  # OpenSSH's KRL magic
    screens.check(page, "admin-settings-sshd", scroll_to=status)
    saved = gateway.api("GET", "/settings", admin_token).json()["settings"]
    assert saved["sshd.web_url"] == gateway.url
    indexed = gateway.api("PUT", "/settings", admin_token, json={"recordings.index_output": True})
    assert indexed.status_code == 200, indexed.text

    # refused: the client is told, nobody signs in
    proc = ssh_asking_for_approval(port, "admin:lab-ssh", tmp_path, "echo never")
    link, code = printed_link(proc)
    page.goto(link)
    screen = page.get_by_role("main")
    expect(screen.get_by_role("heading", name="Approve an SSH sign-in")).to_be_visible()
    facts = screen.get_by_role("definition")
    expect(screen.get_by_test_id("approval-code")).to_have_text(code)
    expect(facts.nth(1)).to_have_text("127.0.0.1")
    screens.check(page, "ssh-approval")
    screen.get_by_role("button", name="Refuse").click()
    expect(screen.get_by_text("Refused: the ssh client was told so")).to_be_visible()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 255 and "never" not in out
    assert "refused in the browser" in err

    # approved: the command runs, and a reload of the used link says it is gone
    proc = ssh_asking_for_approval(port, "admin:lab-ssh", tmp_path, "echo approved-$((6*7))")
    link, code = printed_link(proc)
    page.goto(link)
    page.get_by_role("button", name="Approve sign-in").click()
    expect(page.get_by_text("Approved: the ssh client is signed in as admin.")).to_be_visible()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.strip() == "approved-42"
    page.reload()
    expect(
        page.get_by_text(f"No SSH sign-in of yours is waiting under code {code}")
    ).to_be_visible()
    screens.check(page, "ssh-approval-gone")

    # history, the session's page (playback) and search mark the front-door session
    [session] = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
    assert session["via"] == "ssh"
    page.goto(f"{gateway.url}/sessions")
    row = page.get_by_role("row").filter(has_text="lab-ssh")
    expect(row.get_by_text("via ssh")).to_be_visible()
    screens.check(page, "sessions-history-via-ssh", scroll_to=row)
    row.get_by_role("link", name=re.compile("^Details of the SSH session on lab-ssh")).click()
    expect(page.get_by_role("heading", name="lab-ssh · SSH")).to_be_visible()
    expect(page.get_by_text("via ssh", exact=True)).to_be_visible()
    expect(page.get_by_text("the SSH front door (ssh)")).to_be_visible()
    screens.check(page, "session-detail-via-ssh")
    found = wait_for_hit(gateway, admin_token, "approved-42")
    assert found["session"]["via"] == "ssh"
    page.goto(f"{gateway.url}/sessions?q=approved-42&kind=output")
    results = page.get_by_role("list", name="Search results")
    expect(results.get_by_role("listitem")).to_have_count(1)
    expect(results.get_by_text("via ssh")).to_be_visible()


def wait_for_hit(gateway: Gateway, token: str, words: str) -> dict[str, Any]:
    """The one search hit of ``words``, once the output index has it (written in the background)."""
    for _ in range(100):
        hits = gateway.api("GET", f"/sessions/search?q={words}&kind=output", token).json()["hits"]
        if hits:
            [hit] = hits
            return hit  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"{words!r} was never indexed")
