"""The SSH front door in the browser: a key added in the profile, the command on a
connection's page run by the real OpenSSH client against the real sshd through the
gateway, and the key deleted again (ssh refused)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.peers import peer_unavailable

from .conftest import Gateway, Screens

pytestmark = pytest.mark.peer("chromium")
PRIVATE_KEY_START = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n"


@pytest.fixture
def gateway_env() -> dict[str, str]:
    """The front door listening on a free loopback port (the root conftest turns it off)."""
    return {"HOSTGATE_SSHD_LISTEN": "127.0.0.1:0"}


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        peer_unavailable(name, "the OpenSSH client tools are not installed")
    assert found is not None
    return found


def make_key(directory: Path) -> Path:
    """A fresh ed25519 key pair without a passphrase; the private key's path."""
    path = directory / "id_ed25519"
    subprocess.run(
        [tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", "me@laptop", "-f", str(path)],
        check=True,
    )
    return path


def fingerprint(path: Path) -> str:
    """The ``SHA256:`` fingerprint ``ssh-keygen -lf`` prints for a key file's first key."""
    listed = subprocess.run(
        [tool("ssh-keygen"), "-lf", str(path)], capture_output=True, text=True, check=True
    )
    return listed.stdout.split()[1]


def run_shown_command(
    command: str, key: Path, home: Path, *remote: str
) -> subprocess.CompletedProcess[str]:
    """The command line the page shows, as a person pastes it, plus batch-mode options."""
    words = shlex.split(command)
    assert words[0] == "ssh"
    options = [
        "-F", "/dev/null",
        "-o", "BatchMode=yes",
        "-o", f"UserKnownHostsFile={home / 'known_hosts'}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=accept-new",
        "-o", "IdentitiesOnly=yes",
        "-o", "IdentityAgent=none",
        "-o", "ConnectTimeout=20",
        "-i", str(key),
    ]  # fmt: skip
    return subprocess.run(
        [tool("ssh"), *options, *words[1:], *remote],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )


def test_a_key_added_in_the_profile_signs_in_with_the_shown_command_until_deleted(
    page: Any, gateway: Gateway, admin_token: str, lab_ssh: str, screens: Screens, tmp_path: Path
) -> None:
    key = make_key(tmp_path)
    public_line = key.with_suffix(".pub").read_text().strip()
    expected_fingerprint = fingerprint(key.with_suffix(".pub"))

    page.goto(f"{gateway.url}/profile")
    card = page.get_by_role("region", name="SSH keys")
    expect(card.get_by_text("You have no SSH keys.")).to_be_visible()
    card.get_by_role("button", name="Add SSH key").click()
    dialog = page.get_by_role("dialog", name="Add an SSH key")

    # a pasted private key and a line that is not a key: a sentence each, nothing stored
    dialog.get_by_label("Public key").fill(PRIVATE_KEY_START)
    dialog.get_by_role("button", name="Add key").click()
    expect(dialog.get_by_text("never a private key.")).to_be_visible()
    dialog.get_by_label("Public key").fill("ssh-ed25519 not-base64 me")
    dialog.get_by_role("button", name="Add key").click()
    expect(dialog.get_by_text("That is not an OpenSSH public key line.")).to_be_visible()
    assert gateway.api("GET", "/profile/ssh-keys", admin_token).json()["keys"] == []

    dialog.get_by_label("Public key").fill(public_line)
    dialog.get_by_label("Name", exact=True).fill("laptop")
    screens.check(page, "profile-add-ssh-key")
    dialog.get_by_role("button", name="Add key").click()
    expect(dialog).to_be_hidden()
    item = card.get_by_role("listitem").filter(has_text="laptop")
    expect(item).to_contain_text(expected_fingerprint)
    expect(item).to_contain_text("ssh-ed25519")
    expect(item).to_contain_text("never used")
    screens.check(page, "profile-ssh-keys", scroll_to=card)

    # the same key again: the gateway's 409 as a sentence
    card.get_by_role("button", name="Add SSH key").click()
    dialog.get_by_label("Public key").fill(public_line)
    dialog.get_by_role("button", name="Add key").click()
    expect(dialog.get_by_role("alert")).to_contain_text("This SSH key is already registered.")
    dialog.get_by_role("button", name="Cancel").click()

    page.goto(f"{gateway.url}/connections/{lab_ssh}")
    door = page.get_by_role("region", name="Connect with ssh")
    command = door.get_by_test_id("ssh-command").inner_text().strip()
    port = gateway.api("GET", "/sshd/host-keys", admin_token).json()["port"]
    assert command == f"ssh -p {port} admin:lab-ssh@127.0.0.1"
    shown = door.get_by_role("definition").all_inner_texts()
    assert len(shown) == 2 and all(text.startswith("SHA256:") for text in shown)
    door.get_by_role("button", name="Copy").first.click()
    expect(door.get_by_role("button", name="Copied")).to_be_visible()
    screens.check(page, "connection-ssh-door", scroll_to=door)

    home = tmp_path / "home"
    home.mkdir()
    done = run_shown_command(command, key, home, "echo door-$((6*7))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "door-42"
    # the host key ssh accepted is one of the fingerprints the page asked to check
    assert fingerprint(home / "known_hosts") in shown

    page.goto(f"{gateway.url}/profile")
    card = page.get_by_role("region", name="SSH keys")
    item = card.get_by_role("listitem").filter(has_text="laptop")
    expect(item).not_to_contain_text("never used")
    item.get_by_role("button", name="Delete laptop").click()
    confirm = page.get_by_role("dialog", name="Delete the SSH key laptop?")
    confirm.get_by_role("button", name="Delete key").click()
    expect(card.get_by_text("You have no SSH keys.")).to_be_visible()
    assert gateway.api("GET", "/profile/ssh-keys", admin_token).json()["keys"] == []

    refused = run_shown_command(command, key, home, "echo door-$((6*7))")
    assert refused.returncode == 255
    assert "Permission denied" in refused.stderr
    assert "door-42" not in refused.stdout


def test_an_admin_revokes_a_users_key_and_ssh_is_refused(
    page: Any, gateway: Gateway, admin_token: str, lab_ssh: str, screens: Screens, tmp_path: Path
) -> None:
    key = make_key(tmp_path)
    body = {"publicKey": key.with_suffix(".pub").read_text(), "name": "build box"}
    added = gateway.api("POST", "/profile/ssh-keys", admin_token, json=body)
    assert added.status_code == 200, added.text
    port = gateway.api("GET", "/sshd/host-keys", admin_token).json()["port"]
    command = f"ssh -p {port} admin:lab-ssh@127.0.0.1"
    home = tmp_path / "home"
    home.mkdir()
    assert run_shown_command(command, key, home, "echo before").stdout.strip() == "before"

    page.goto(f"{gateway.url}/admin/users")
    page.get_by_label("Actions for admin").click()
    page.get_by_role("button", name="SSH keys", exact=True).click()
    dialog = page.get_by_role("dialog", name="SSH keys of admin")
    keys = dialog.get_by_role("list", name="SSH keys of admin")
    expect(keys).to_contain_text("build box")
    expect(keys).to_contain_text(fingerprint(key.with_suffix(".pub")))
    expect(keys).to_contain_text("last used")
    screens.check(page, "admin-user-ssh-keys")
    dialog.get_by_role("button", name="Revoke build box").click()
    # one click only asks: the key is still there
    assert len(gateway.api("GET", "/profile/ssh-keys", admin_token).json()["keys"]) == 1
    dialog.get_by_role("button", name="Revoke build box now").click()
    expect(dialog.get_by_text("admin has no SSH keys.")).to_be_visible()
    assert gateway.api("GET", "/profile/ssh-keys", admin_token).json()["keys"] == []

    refused = run_shown_command(command, key, home, "echo after")
    assert refused.returncode == 255
    assert "Permission denied" in refused.stderr
