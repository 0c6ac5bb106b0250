"""The file browser beside an SSH terminal: the terminal's Files toggle opens the same
FileBrowser for that connection in a side panel (its own folder, not the page's); a file
uploaded there is what ``ls`` in the terminal shows. Against the suite's real sshd."""

from __future__ import annotations

import os
import pwd
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.sshd import TEST_USER, SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import Gateway, Screens
from .terminals import open_terminal, run

pytestmark = pytest.mark.peer("chromium")


def test_files_beside_the_terminal_upload_what_ls_then_shows(
    page: Any,
    gateway: Gateway,
    sshd: SshdServer,  # noqa: F811
    lab_ssh: str,
    tmp_path: Path,
    screens: Screens,
) -> None:
    name = f"beside-{uuid.uuid4().hex[:8]}"
    folder = Path(sshd.home) / name
    folder.mkdir()
    user = pwd.getpwnam(TEST_USER)
    os.chown(folder, user.pw_uid, user.pw_gid)
    sent = tmp_path / "from-the-panel.txt"
    sent.write_text("uploaded beside the terminal\n")
    try:
        screen = open_terminal(page, lab_ssh, "lab-ssh")
        tab = page.get_by_role("region", name="Terminal lab-ssh")
        terminal_url = page.url

        toggle = tab.get_by_role("button", name="Files", exact=True)
        toggle.click()
        expect(toggle).to_have_attribute("aria-pressed", "true")
        panel = page.get_by_role("complementary", name="Files of lab-ssh")
        expect(panel.get_by_role("heading", name="Files on lab-ssh")).to_be_visible()
        # the terminal stays beside it, not under it
        screen_box, panel_box = screen.bounding_box(), panel.bounding_box()
        assert screen_box["x"] + screen_box["width"] <= panel_box["x"] + 1

        panel.get_by_role("link", name=name).click()  # a folder opens in the panel
        expect(panel.get_by_role("navigation", name="Folder path")).to_contain_text(name)
        assert page.url == terminal_url  # the page stays on the terminal
        panel.get_by_label("Upload files").set_input_files(sent)
        uploads = panel.get_by_role("list", name="Uploads")
        expect(uploads.get_by_role("listitem").filter(has_text=sent.name)).to_contain_text("done")
        expect(panel.get_by_role("link", name=sent.name)).to_be_visible()
        screens.check(page, "terminal-files")

        run(page, screen, f"ls ~/{name}", sent.name)
        assert (folder / sent.name).read_bytes() == sent.read_bytes()

        panel.get_by_role("button", name="Close files").click()
        expect(panel).to_be_hidden()
        expect(toggle).to_have_attribute("aria-pressed", "false")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
