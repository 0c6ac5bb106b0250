"""File errors a real server gives, shown where they happened: a server whose disk is full
(asyncssh answering SSH_FX_NO_SPACE_ON_FILESYSTEM), and a login session revoked while an
upload runs (the browser goes back to sign-in and says why)."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.asyncssh_server import (  # noqa: F401 - the fixtures
    FULL_QUOTA,
    AsyncsshServer,
    asyncssh_sftp,
    asyncssh_sftp_full,
)

from .conftest import Console, Gateway, Screens, server_connection, signed_in

pytestmark = pytest.mark.peer("chromium")
MiB = 1024 * 1024


@pytest.fixture
def folder_on(request: pytest.FixtureRequest) -> Iterator[Any]:
    """``folder_on(server)``: a fresh folder under the server's root (its name)."""
    made: list[Path] = []

    def make(server: AsyncsshServer) -> str:
        name = f"web-{uuid.uuid4().hex[:8]}"
        (server.root / name).mkdir()
        made.append(server.root / name)
        return name

    yield make
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def test_no_space_is_said_on_the_files_line(
    page: Any,
    console: Console,
    gateway: Gateway,
    admin_token: str,
    asyncssh_sftp_full: AsyncsshServer,  # noqa: F811
    folder_on: Any,
    tmp_path: Path,
    screens: Screens,
) -> None:
    connection_id = server_connection(
        gateway, admin_token, asyncssh_sftp_full, name="small disk", protocol="sftp"
    )
    folder = folder_on(asyncssh_sftp_full)
    small, big = tmp_path / "fits.txt", tmp_path / "too-big.bin"
    small.write_bytes(b"x" * (FULL_QUOTA // 2))
    big.write_bytes(os.urandom(FULL_QUOTA * 4))
    console.expect("status of 502")  # the remote's refusal: 502 remote_full
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}/files?path={folder}")
    expect(page.get_by_role("table")).to_be_visible()

    page.get_by_label("Upload files").set_input_files([small, big])
    uploads = page.get_by_role("list", name="Uploads")
    line = uploads.get_by_role("listitem").filter(has_text="too-big.bin")
    expect(line.get_by_role("alert")).to_have_text(
        "too-big.bin: The server has no space left for this file."
    )
    expect(uploads.get_by_role("listitem").filter(has_text="fits.txt")).to_contain_text("done")
    screens.check(page, "files-no-space", scroll_to=line)
    # what the server holds: the file that fitted, nothing of the other (no temporary file)
    root = asyncssh_sftp_full.root / folder
    assert sorted(p.name for p in root.iterdir()) == ["fits.txt"]
    assert (root / "fits.txt").read_bytes() == small.read_bytes()


def test_a_session_revoked_during_an_upload_returns_to_sign_in(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    asyncssh_sftp: AsyncsshServer,  # noqa: F811
    folder_on: Any,
    tmp_path: Path,
) -> None:
    connection_id = server_connection(
        gateway, admin_token, asyncssh_sftp, name="small disk", protocol="sftp"
    )
    folder = folder_on(asyncssh_sftp)
    slow = tmp_path / "slow.bin"
    slow.write_bytes(os.urandom(8 * MiB))
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}/files?path={folder}")
    expect(page.get_by_role("table")).to_be_visible()

    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 1e6},
    )
    answers: list[int] = []
    page.on("response", lambda r: answers.append(r.status) if "/upload?" in r.url else None)
    page.get_by_label("Upload files").set_input_files(slow)
    bar = page.get_by_role("progressbar", name="Upload of slow.bin")
    page.wait_for_function("(bar) => bar.value > 0", arg=bar.element_handle(), timeout=30_000)

    # the admin's other session (the API token) signs the browser's session out
    sessions = gateway.api("GET", "/profile/login-sessions", admin_token).json()["sessions"]
    browser_session = next(s["id"] for s in sessions if not s["isCurrent"])
    ended = gateway.api("DELETE", f"/profile/login-sessions/{browser_session}", admin_token)
    assert ended.status_code == 200, ended.text

    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible(timeout=30_000)
    expect(page.get_by_role("alert").or_(page.get_by_role("status"))).to_contain_text(
        re.compile("Your session was ended. Sign in again.")
    )
    assert answers == [401]  # the upload itself was answered "session revoked"
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
             "downloadThroughput": -1, "uploadThroughput": -1})  # fmt: skip
    # nothing left on the server, under the name or a temporary one
    root = asyncssh_sftp.root / folder
    for _ in range(50):
        if not any(root.iterdir()):
            break
        page.wait_for_timeout(200)
    assert list(root.iterdir()) == []
