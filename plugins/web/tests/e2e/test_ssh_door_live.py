"""A front-door session in the browser: watched live while the real ``ssh`` types in it,
then played back from its recording (issue 31, Tests); the door's agent-forwarding
setting in Administration.

The real OpenSSH client (``ssh -tt``, a key registered in the admin's profile) goes
through the door of a real ``hostgate serve`` to the suite's sshd; Chromium watches
the session in the live view, then plays its recording and finds its output.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.peers import peer_unavailable

from .conftest import Gateway, Screens

pytestmark = pytest.mark.peer("chromium")
SECONDS = 60


@pytest.fixture
def gateway_env() -> dict[str, str]:
    """The front door listening on a free loopback port (the root conftest turns it off)."""
    return {"HOSTGATE_SSHD_LISTEN": "127.0.0.1:0"}


class DoorShell:
    """``ssh -tt admin:lab-ssh@door``: its input a pipe, its output read as it comes."""

    def __init__(self, port: int, key: Path, known_hosts: Path) -> None:
        ssh = shutil.which("ssh")
        if ssh is None:
            peer_unavailable("ssh", "the OpenSSH client is not installed")
        assert ssh is not None
        options = [
            "-F", "/dev/null", "-tt",
            "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={known_hosts}",
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "IdentitiesOnly=yes",
            "-o", "IdentityAgent=none",
            "-i", str(key),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            [ssh, *options, "-p", str(port), "-l", "admin:lab-ssh", "127.0.0.1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.output = b""
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while data := self.proc.stdout.read1(65536):
            with self._changed:
                self.output += data
                self._changed.notify_all()

    def run(self, command: str, answer: str) -> None:
        """Type ``command`` and wait until ``answer`` is in the output."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{command}\n".encode())
        self.proc.stdin.flush()
        with self._changed:
            found = self._changed.wait_for(lambda: answer.encode() in self.output, SECONDS)
        assert found, self.output[-500:]

    def exit(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"exit\n")
        self.proc.stdin.flush()
        code = self.proc.wait(SECONDS)
        self._reader.join(SECONDS)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(SECONDS)


def door_client(gateway: Gateway, token: str, home: Path) -> tuple[int, Path, Path]:
    """The door's port, a key registered in the admin's profile, and the door's host keys."""
    key = home / "door_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    public = key.with_suffix(".pub").read_text().strip()
    added = gateway.api(
        "POST", "/profile/ssh-keys", token, json={"publicKey": public, "name": "e2e"}
    )
    assert added.status_code == 200, added.text
    door = gateway.api("GET", "/sshd/host-keys", token).json()
    port = int(door["port"])
    known = home / "known_hosts"
    known.write_text("".join(f"[127.0.0.1]:{port} {k['publicKey']}\n" for k in door["hostKeys"]))
    return port, key, known


def test_a_front_door_session_is_watched_live_and_then_played_back(
    page: Any, gateway: Gateway, admin_token: str, lab_ssh: str, screens: Screens, tmp_path: Path
) -> None:
    # Administration -> Settings -> SSH front door: agent forwarding, off until allowed
    page.goto(f"{gateway.url}/admin/settings/sshd")
    form = page.get_by_role("form", name="SSH front door")
    agent = form.get_by_label("Agent forwarding")
    expect(agent).not_to_be_checked()
    agent.check()
    form.get_by_role("button", name="Save changes").click()
    expect(form.get_by_role("status")).to_be_visible()
    screens.check(page, "admin-settings-sshd-agent", scroll_to=agent)
    saved = gateway.api("GET", "/settings", admin_token).json()["settings"]
    assert saved["sshd.agent_forwarding"] is True
    assert "settings.updated" in gateway.audit_types(admin_token)

    port, key, known = door_client(gateway, admin_token, tmp_path)
    shell = DoorShell(port, key, known)
    try:
        shell.run("echo before-$((6*7))", "before-42")

        # the live list marks it, and the live view shows the screen as it is, then follows
        page.goto(f"{gateway.url}/sessions/live")
        rows = page.get_by_role("region", name="Live sessions")
        expect(rows.get_by_role("cell", name="admin", exact=True)).to_be_visible()
        rows.get_by_role("link", name="Watch admin's session on lab-ssh").click()
        expect(page.get_by_role("status").filter(has_text="Live · read-only")).to_be_visible()
        mirror = page.get_by_role("region", name="Live view of admin's session on lab-ssh")
        expect(mirror).to_contain_text("before-42")
        shell.run("echo door-live-$((7*6))-now", "door-live-42-now")
        expect(mirror).to_contain_text("door-live-42-now")
        screens.check(page, "sessions-watch-door")
        assert shell.exit() == 0
    finally:
        shell.stop()

    # the ended session: in history via ssh, and its recording plays what was typed
    [session] = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
    assert session["via"] == "ssh" and session["hasRecording"] is True, session
    page.goto(f"{gateway.url}/sessions/{session['id']}/play")
    player = page.get_by_role("region", name="Recording player")
    expect(page.get_by_role("slider", name="Position")).to_be_visible()
    page.get_by_label("Text to find in the output").fill("door-live-42-now")
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_role("status").filter(has_text="Match 1 of 1")).to_be_visible()
    expect(player).to_contain_text("door-live-42-now")
    expect(page.get_by_text("via ssh", exact=True)).to_be_visible()
    screens.check(page, "sessions-player-door")
    assert re.search(rb"door-live-42-now", shell.output)
