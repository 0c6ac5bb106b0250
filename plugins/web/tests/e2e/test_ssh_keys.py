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


def client_config(home: Path, key: Path, checking: str, *blocks: str) -> Path:
    """An ssh_config for the real client: ``blocks`` first, then this key and batch mode.

    ``ssh -J`` runs a second ``ssh`` for the jump that reads ``-F``'s file but not ``-o``
    options, so the test's settings live in the file.
    """
    path = home / "ssh_config"
    defaults = f"""
Host *
    BatchMode yes
    UserKnownHostsFile {home / "known_hosts"}
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking {checking}
    IdentitiesOnly yes
    IdentityAgent none
    IdentityFile {key}
    ConnectTimeout 20
"""
    path.write_text("\n".join(blocks) + "\n" + defaults)
    return path


def run_shown_command(
    command: str, key: Path, home: Path, *remote: str, checking: str = "accept-new"
) -> subprocess.CompletedProcess[str]:
    """The command line the page shows, as a person pastes it, run in batch mode."""
    words = shlex.split(command)
    assert words[0] == "ssh"
    return run_ssh(client_config(home, key, checking), home, *words[1:], *remote)


def run_ssh(config: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``ssh -F config ARGS`` with ``HOME`` at ``home``."""
    return subprocess.run(
        [tool("ssh"), "-F", str(config), *args],
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

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{gateway.url}/connections/{lab_ssh}")
    door = page.get_by_role("region", name="Connect with ssh")
    command = door.get_by_test_id("ssh-command").inner_text().strip()
    host_keys = gateway.api("GET", "/sshd/host-keys", admin_token).json()
    port = host_keys["port"]
    assert command == f"ssh -p {port} admin:lab-ssh@127.0.0.1"
    shown = door.get_by_label("Gateway host keys").get_by_role("definition").all_inner_texts()
    assert len(shown) == 2 and all(text.startswith("SHA256:") for text in shown)
    door.get_by_role("button", name="Copy the ssh command").click()
    expect(door.get_by_role("button", name="Copied the ssh command")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == command

    # the ProxyJump form: its command, the key ssh files under the connection's name, the block
    jump = door.get_by_test_id("ssh-jump-command").inner_text().strip()
    assert jump == f"ssh -J admin@127.0.0.1:{port} lab-ssh"
    door.get_by_role("button", name="Copy the ProxyJump command").click()
    assert page.evaluate("navigator.clipboard.readText()") == jump
    jump_key = door.get_by_label("ProxyJump host key")
    [jump_shown] = jump_key.get_by_role("definition").all_inner_texts()
    assert jump_shown == host_keys["jumpHostKey"]["fingerprint"] and jump_shown not in shown
    door.get_by_text("For ~/.ssh/config").click()
    block = door.get_by_test_id("ssh-config").inner_text().strip()
    assert block == f"Host lab-ssh\n    ProxyJump admin@127.0.0.1:{port}"
    screens.check(page, "connection-ssh-door", scroll_to=door)

    home = tmp_path / "home"
    home.mkdir()
    done = run_shown_command(command, key, home, "echo door-$((6*7))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "door-42"
    # the host key ssh accepted is one of the fingerprints the page asked to check
    assert fingerprint(home / "known_hosts") in shown

    # the copied ProxyJump command and the block, trusting only the keys the page shows
    jump_home = tmp_path / "jump"
    jump_home.mkdir()
    trusted = [k for k in host_keys["hostKeys"] if k["fingerprint"] in shown]
    (jump_home / "known_hosts").write_text(
        "".join(f"[127.0.0.1]:{port} {k['publicKey']}\n" for k in trusted)
        + f"lab-ssh {host_keys['jumpHostKey']['publicKey']}\n"
    )
    listed = subprocess.run(
        [tool("ssh-keygen"), "-lf", str(jump_home / "known_hosts")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert {line.split()[1] for line in listed.stdout.splitlines()} == {*shown, jump_shown}
    done = run_shown_command(jump, key, jump_home, "echo jumped-$((6*7))", checking="yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "jumped-42"
    config = client_config(jump_home, key, "yes", block)
    done = run_ssh(config, jump_home, "lab-ssh", "echo block-$((6*7))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "block-42"

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
