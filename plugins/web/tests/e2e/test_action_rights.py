"""Per-action rights in the app: the connection form's switches and the file browser,
against a real OpenSSH sshd (SFTP). The app hides what the gateway would refuse; the
gateway refuses it anyway (checked through the API with the same user).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from plugins.ssh.tests.sftp_support import give, workdir  # noqa: F401
from testsupport.sshd import SshdServer, sshd  # noqa: F401

from .conftest import Gateway, Screens, server_connection, signed_in

pytestmark = pytest.mark.peer("chromium")


def test_switches_on_the_form_and_the_file_browser_follow_them(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    workdir: Path,  # noqa: F811
    screens: Screens,
) -> None:
    (workdir / "report.txt").write_bytes(b"quarterly")
    give(workdir)
    connection_id = server_connection(
        gateway, admin_token, sshd, name="rights box", protocol="sftp"
    )
    signed_in(page, gateway)

    # the form: every action starts allowed; switch off uploads and deletions
    page.goto(f"{gateway.url}/connections/{connection_id}/edit")
    actions = page.get_by_role("group", name="Allowed actions")
    expect(actions).to_be_visible()
    for label in (
        "Upload files",
        "Download files",
        "Delete files",
        "Copy from the desktop",
        "Paste",
    ):
        expect(actions.get_by_label(label)).to_be_checked()
    actions.get_by_label("Upload files").uncheck()
    actions.get_by_label("Delete files").uncheck()
    screens.check(page, "connection-form-actions", scroll_to=actions)
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("link", name="Edit")).to_be_visible()
    stored = gateway.api("GET", f"/connections/{connection_id}", admin_token).json()
    assert stored["actions"] == {
        "upload": False,
        "download": True,
        "delete": False,
        "copy": True,
        "paste": True,
    }

    # the file browser offers only what is allowed, and says what is not
    page.goto(f"{gateway.url}/connections/{connection_id}/files?path={workdir}")
    expect(page.get_by_role("table")).to_be_visible()
    expect(
        page.get_by_text("Not allowed on this connection for you: uploads and deletions.")
    ).to_be_visible()
    expect(page.get_by_text("Upload files", exact=True)).to_have_count(0)
    expect(page.get_by_role("link", name="Download report.txt")).to_be_visible()
    page.get_by_label("Actions for report.txt", exact=True).click()
    expect(page.get_by_role("button", name="Rename or move", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Delete", exact=True)).to_have_count(0)
    page.get_by_label("Actions for report.txt", exact=True).click()  # closed again
    screens.check(page, "files-rights")

    # the gateway is the authority: the same user's API call is refused, nothing changes
    refused = gateway.api(
        "DELETE", f"/sftp/{connection_id}/file?path={workdir}/report.txt", admin_token
    )
    assert refused.status_code == 403
    assert refused.json()["code"] == "action_denied"
    assert (workdir / "report.txt").read_bytes() == b"quarterly"
    entries = gateway.api("GET", "/audit?eventType=session.action_denied", admin_token).json()
    assert [e["details"]["action"] for e in entries["entries"]] == ["delete"]
