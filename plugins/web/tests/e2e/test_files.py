"""The file browser (/connections/:id/files) against real SFTP (OpenSSH), SMB and FTP servers.

Every test checks the files on the server's side (the directories the test servers
serve), and the gateway's file-session log, as well as the screen.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from playwright.sync_api import expect

from plugins.ssh.tests.sftp_support import give, workdir  # noqa: F401
from testsupport.ftpd import FtpServer, pyftpd  # noqa: F401
from testsupport.samba import SambaServer, samba  # noqa: F401
from testsupport.sshd import SshdServer, sshd  # noqa: F401

from .conftest import Gateway, Screens, server_connection, signed_in

pytestmark = pytest.mark.peer("chromium")

MiB = 1024 * 1024


def make_connection(gateway: Gateway, token: str, **body: Any) -> str:
    response = gateway.api("POST", "/connections", token, json={"name": "files box", **body})
    assert response.status_code in {200, 201}, response.text
    return str(response.json()["id"])


@pytest.fixture
def sftp_id(gateway: Gateway, admin_token: str, sshd: SshdServer) -> str:  # noqa: F811
    return server_connection(gateway, admin_token, sshd, name="OpenSSH box", protocol="sftp")


def open_files(page: Any, gateway: Gateway, connection_id: str, path: str = "") -> None:
    query = f"?path={path}" if path else ""
    page.goto(f"{gateway.url}/connections/{connection_id}/files{query}")
    expect(page.get_by_role("table")).to_be_visible()


def names(page: Any) -> list[str]:
    """The names in the listing, in the order shown (the first cell of each row)."""
    rows = page.get_by_role("table").get_by_role("row").all()[1:]
    cells = [row.get_by_role("cell").first.inner_text().strip() for row in rows]
    return [cell for cell in cells if not cell.startswith("..")]


def row(page: Any, name: str) -> Any:
    return page.get_by_role("row").filter(has=page.get_by_role("cell", name=name, exact=False))


def action(page: Any, name: str, label: str) -> None:
    """Open a file's action menu and pick an action."""
    page.get_by_label(f"Actions for {name}", exact=True).click()
    page.get_by_role("button", name=label, exact=True).click()


def file_events(gateway: Gateway, token: str) -> list[list[tuple[str, str]]]:
    """Per file-transfer session: its (action, path) events."""
    sessions = gateway.api("GET", "/file-sessions", token).json()["sessions"]
    out = []
    for entry in sessions:
        events = gateway.api("GET", f"/file-sessions/{entry['id']}/events", token).json()
        out.append([(e["action"], e["path"]) for e in events["events"]])
    return out


def test_sftp_browse_and_manage(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sftp_id: str,
    workdir: Path,  # noqa: F811
    screens: Screens,
) -> None:
    (workdir / "a.txt").write_bytes(b"alpha text")
    (workdir / "big.bin").write_bytes(os.urandom(3000))
    (workdir / ".hidden").write_text("secret-ish")
    (workdir / "docs").mkdir()
    (workdir / "docs" / "inner.txt").write_text("inside")
    (workdir / "locked").mkdir()
    (workdir / "locked" / "keep.txt").write_text("stay")
    (workdir / "a.txt").chmod(0o644)
    give(workdir)
    (workdir / "locked").chmod(0o555)
    base = workdir.name
    signed_in(page, gateway)
    open_files(page, gateway, sftp_id, base)

    expect(page.get_by_role("heading", name="Files on OpenSSH box")).to_be_visible()
    assert names(page) == ["docs", "locked", "a.txt", "big.bin"]
    expect(row(page, "a.txt")).to_contain_text("-rw-r--r--")
    expect(row(page, "big.bin")).to_contain_text("2.9 KiB")
    page.get_by_label("Show hidden files (1)").check()
    assert names(page) == ["docs", "locked", ".hidden", "a.txt", "big.bin"]
    page.get_by_label("Show hidden files (1)").uncheck()
    # sort by size, largest first: folders stay on top
    page.get_by_role("button", name="Size").click()
    page.get_by_role("button", name="Size").click()
    expect(page.get_by_role("columnheader", name="Size")).to_have_attribute(
        "aria-sort", "descending"
    )
    assert names(page)[2:] == ["big.bin", "a.txt"]
    screens.check(page, "files")

    # into a folder and back through the breadcrumb; the address keeps the folder
    page.get_by_role("link", name="docs").click()
    expect(page.get_by_role("cell", name="inner.txt")).to_be_visible()
    assert page.url.endswith(f"?path={base}%2Fdocs")
    page.reload()
    expect(page.get_by_role("cell", name="inner.txt")).to_be_visible()
    crumbs = page.get_by_role("navigation", name="Folder path")
    expect(crumbs.get_by_role("link")).to_have_text(["Home", base])
    crumbs.get_by_role("link", name=base).click()
    expect(page.get_by_role("cell", name="big.bin")).to_be_visible()

    # download: a plain link to the download route, streamed by the browser to disk
    link = page.get_by_role("link", name="Download a.txt")
    assert link.get_attribute("href") == (f"/api/v1/sftp/{sftp_id}/download?path={base}%2Fa.txt")
    with page.expect_download() as download:
        link.click()
    assert Path(download.value.path()).read_bytes() == b"alpha text"
    assert download.value.suggested_filename == "a.txt"

    # new folder; an existing name is said in the dialog, next to the field
    page.get_by_role("button", name="New folder").click()
    dialog = page.get_by_role("dialog", name="New folder")
    dialog.get_by_label("Folder name").fill("docs")
    dialog.get_by_role("button", name="Create folder").click()
    expect(dialog.get_by_label("Folder name")).to_have_accessible_description(
        re.compile("already exists")
    )
    dialog.get_by_label("Folder name").fill("made")
    dialog.get_by_role("button", name="Create folder").click()
    expect(page.get_by_role("link", name="made")).to_be_visible()
    assert (workdir / "made").is_dir()

    # rename into another folder (a move)
    action(page, "a.txt", "Rename or move")
    dialog = page.get_by_role("dialog", name="Rename or move a.txt")
    dialog.get_by_label("New name or path").fill(f"{base}/docs/moved.txt")
    dialog.get_by_role("button", name="Rename").click()
    expect(page.get_by_role("cell", name="a.txt")).to_have_count(0)
    assert (workdir / "docs" / "moved.txt").read_bytes() == b"alpha text"
    assert not (workdir / "a.txt").exists()

    # server-side copy
    action(page, "big.bin", "Copy")
    dialog = page.get_by_role("dialog", name="Copy big.bin")
    dialog.get_by_label("Copy to").fill(f"{base}/big-copy.bin")
    dialog.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("cell", name="big-copy.bin")).to_be_visible()
    assert (workdir / "big-copy.bin").read_bytes() == (workdir / "big.bin").read_bytes()

    # chmod with the rwx editor
    action(page, "big.bin", "Change permissions")
    dialog = page.get_by_role("dialog", name="Permissions of big.bin")
    expect(dialog.get_by_label("Owner read")).to_be_checked()
    dialog.get_by_label("Group read").uncheck()
    dialog.get_by_label("Others read").uncheck()
    dialog.get_by_label("Owner execute").check()
    screens.check(page, "files-permissions")
    dialog.get_by_role("button", name="Apply 0700").click()
    expect(row(page, "big.bin")).to_contain_text("-rwx------")
    assert stat.S_IMODE((workdir / "big.bin").stat().st_mode) == 0o700

    # details from stat
    action(page, "big.bin", "Details")
    dialog = page.get_by_role("dialog", name="big.bin")
    expect(dialog).to_contain_text("3,000 bytes")
    expect(dialog).to_contain_text("0700")
    expect(dialog).not_to_contain_text("Asking the server")
    dialog.get_by_role("button", name="Close").click()

    # delete a folder with everything in it, after a confirmation
    action(page, "docs", "Delete")
    page.get_by_role("dialog", name="Delete docs?").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("link", name="docs")).to_have_count(0)
    assert not (workdir / "docs").exists()

    # permission denied is shown next to the file, which stays
    page.get_by_role("link", name="locked").click()
    action(page, "keep.txt", "Delete")
    page.get_by_role("dialog", name="Delete keep.txt?").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("alert")).to_have_text(
        re.compile(r"^keep\.txt: Could not delete: Permission denied")
    )
    assert (workdir / "locked" / "keep.txt").exists()
    screens.check(page, "files-error", scroll_to=page.get_by_role("alert"))
    (workdir / "locked").chmod(0o755)

    # the gateway grouped this tab's work (reload included) into one file session; the
    # download, a plain link without the tab's header, is recorded too
    sessions = file_events(gateway, admin_token)
    tab = max(sessions, key=len)
    actions = {a for a, _ in tab}
    assert {"browse", "mkdir", "rename", "copy", "chmod", "delete"} <= actions
    assert ("delete", f"{base}/docs") in tab
    assert ("download", f"{base}/a.txt") in [event for events in sessions for event in events]
    assert len(sessions) == 2, sessions


@pytest.fixture
def upload_dir(tmp_path: Path) -> Path:
    """Local files for the browser to upload."""
    local = tmp_path / "local"
    (local / "tree" / "sub").mkdir(parents=True)
    (local / "one.txt").write_bytes(b"first file")
    (local / "two.bin").write_bytes(os.urandom(200_000))
    (local / "tree" / "top.txt").write_bytes(b"top")
    (local / "tree" / "sub" / "deep.txt").write_bytes(b"deep")
    return local


def wait_done(page: Any, count: int) -> None:
    uploads = page.get_by_role("list", name="Uploads")
    expect(uploads.get_by_role("listitem").filter(has_text=re.compile("done"))).to_have_count(
        count, timeout=60_000
    )


def test_sftp_uploads_picker_drop_folder_errors_cancel(
    page: Any,
    gateway: Gateway,
    sftp_id: str,
    workdir: Path,  # noqa: F811
    upload_dir: Path,
    tmp_path: Path,
    screens: Screens,
) -> None:
    (workdir / "readonly").mkdir()
    give(workdir)
    (workdir / "readonly").chmod(0o555)
    base = workdir.name
    signed_in(page, gateway)
    open_files(page, gateway, sftp_id, base)

    # several files at once through the picker
    page.get_by_label("Upload files").set_input_files(
        [upload_dir / "one.txt", upload_dir / "two.bin"]
    )
    wait_done(page, 2)
    assert (workdir / "one.txt").read_bytes() == b"first file"
    assert (workdir / "two.bin").read_bytes() == (upload_dir / "two.bin").read_bytes()
    expect(page.get_by_role("link", name="Download two.bin")).to_be_visible()

    # a folder through the folder picker: the tree is recreated on the server
    page.get_by_label("Upload folder").set_input_files(upload_dir / "tree")
    wait_done(page, 4)
    assert (workdir / "tree" / "top.txt").read_bytes() == b"top"
    assert (workdir / "tree" / "sub" / "deep.txt").read_bytes() == b"deep"

    # drag and drop of two files onto the listing
    page.get_by_role("table").evaluate(
        """(table) => {
          const data = new DataTransfer();
          data.items.add(new File(["dropped one"], "drop-1.txt"));
          data.items.add(new File(["dropped two"], "drop-2.txt"));
          for (const type of ["dragenter", "dragover", "drop"]) {
            const init = { dataTransfer: data, bubbles: true, cancelable: true };
            table.dispatchEvent(new DragEvent(type, init));
          }
        }"""
    )
    wait_done(page, 6)
    assert (workdir / "drop-1.txt").read_text() == "dropped one"
    assert (workdir / "drop-2.txt").read_text() == "dropped two"
    screens.check(page, "files-uploads")

    # no permission: said next to that file in the upload list
    page.get_by_role("link", name="readonly").click()
    page.get_by_label("Upload files").set_input_files(upload_dir / "one.txt")
    uploads = page.get_by_role("list", name="Uploads")
    expect(uploads.get_by_role("alert")).to_have_text(re.compile(r"^one\.txt: Permission denied"))
    assert list((workdir / "readonly").iterdir()) == []

    # cancel: the browser is slowed to 2 MB/s so the upload is still running
    page.get_by_role("link", name=base).click()
    slow = tmp_path / "slow.bin"
    slow.write_bytes(os.urandom(16 * MiB))
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 2e6},
    )
    page.get_by_label("Upload files").set_input_files(slow)
    bar = page.get_by_role("progressbar", name="Upload of slow.bin")
    page.wait_for_function("(bar) => bar.value > 0", arg=bar.element_handle(), timeout=30_000)
    expect(uploads).to_contain_text(re.compile(r"iB of 16 MiB · [\d.]+ [KM]?i?B/s"))
    page.get_by_role("button", name="Cancel upload of slow.bin").click()
    expect(uploads.get_by_role("listitem").filter(has_text="slow.bin")).to_contain_text("cancelled")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
             "downloadThroughput": -1, "uploadThroughput": -1})  # fmt: skip
    # nothing under the final name; the gateway removes its temporary file
    assert not (workdir / "slow.bin").exists()
    page.wait_for_timeout(500)
    expect(page.get_by_role("cell", name="slow.bin")).to_have_count(0)
    leftovers = [p.name for p in workdir.iterdir() if p.name.startswith(".hgpart")]
    for _ in range(50):
        if not leftovers:
            break
        page.wait_for_timeout(200)
        leftovers = [p.name for p in workdir.iterdir() if p.name.startswith(".hgpart")]
    assert leftovers == []


class RssWatch:
    """The peak resident memory of a process, sampled in a thread."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.baseline = self.process.memory_info().rss
        self.peak = self.baseline
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.wait(0.05):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> RssWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


SAMPLE_PROGRESS = """() => {
  window.progressSamples = [];
  window.progressTimer = setInterval(() => {
    for (const bar of document.querySelectorAll("progress")) {
      window.progressSamples.push([bar.value, bar.max]);
    }
  }, 10);
}"""


def test_large_upload_streams_with_progress_and_flat_gateway_memory(
    page: Any,
    gateway: Gateway,
    sftp_id: str,
    workdir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.bin"
    digest = hashlib.sha256()
    with big.open("wb") as out:
        for _ in range(64):
            chunk = os.urandom(MiB)
            digest.update(chunk)
            out.write(chunk)
    signed_in(page, gateway)
    open_files(page, gateway, sftp_id, workdir.name)
    page.evaluate(SAMPLE_PROGRESS)
    with RssWatch(gateway.pid) as rss:
        page.get_by_label("Upload files").set_input_files(big)
        wait_done(page, 1)
    samples = page.evaluate(
        "() => { clearInterval(window.progressTimer); return window.progressSamples; }"
    )
    # the bar moved through values between empty and full
    partial = {value for value, most in samples if 0 < value < most}
    assert partial, samples[:20]
    assert hashlib.sha256((workdir / "big.bin").read_bytes()).hexdigest() == digest.hexdigest()
    # the gateway streamed it: its memory grew by half the file's 64 MiB at most. The
    # growth is socket and allocator buffers, not the file: on uvloop it reads ~24 MiB
    # for a 64 MiB upload here and for a 256 MiB one in bench/files.py alike
    growth = rss.peak - rss.baseline
    assert growth < 32 * MiB, f"gateway RSS grew {growth / MiB:.1f} MiB"


@pytest.fixture
def smb_id(gateway: Gateway, admin_token: str, samba: SambaServer) -> str:  # noqa: F811
    return make_connection(
        gateway,
        admin_token,
        name="Team share",
        protocol="smb",
        host=samba.host,
        port=samba.port,
        username=samba.username,
        password=samba.password,
        share="files",
    )


@pytest.fixture
def ftp_id(gateway: Gateway, admin_token: str, pyftpd: FtpServer) -> str:  # noqa: F811
    return make_connection(
        gateway,
        admin_token,
        name="FTP drop",
        protocol="ftp",
        host=pyftpd.host,
        port=pyftpd.port,
        username=pyftpd.username,
        password=pyftpd.password,
    )


@pytest.fixture
def remote_root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path, str]]:
    """(connection id, the local directory behind a fresh test folder, its remote path)."""
    folder = f"e2e-{tmp_path.name[-12:]}"
    if request.param == "smb":
        server: Any = request.getfixturevalue("samba")
        local = server.share_dir("files") / folder
    else:
        server = request.getfixturevalue("pyftpd")
        local = server.local(folder)
    local.mkdir(parents=True)
    connection_id = request.getfixturevalue(f"{request.param}_id")
    yield connection_id, local, folder
    for path in sorted(local.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    local.rmdir()


@pytest.mark.parametrize("remote_root", ["smb", "ftp"], indirect=True)
def test_smb_and_ftp_browse_upload_download_manage(
    page: Any,
    gateway: Gateway,
    remote_root: tuple[str, Path, str],
    upload_dir: Path,
    screens: Screens,
    request: pytest.FixtureRequest,
) -> None:
    connection_id, local, folder = remote_root
    protocol = request.node.callspec.params["remote_root"]
    (local / "readme.txt").write_bytes(b"read me")
    (local / "sub").mkdir()
    signed_in(page, gateway)
    # from the connection's page, the way a person gets there
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("link", name="Browse files").click()
    page.get_by_role("link", name=folder).click()
    expect(page.get_by_role("cell", name="readme.txt")).to_be_visible()
    assert names(page) == ["sub", "readme.txt"]
    # no Unix permissions here: no column, no chmod or copy
    expect(page.get_by_role("columnheader", name="Permissions")).to_have_count(0)
    page.get_by_label("Actions for readme.txt", exact=True).click()
    expect(page.get_by_role("button", name="Copy", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Change permissions")).to_have_count(0)
    page.get_by_label("Actions for readme.txt", exact=True).click()
    screens.check(page, f"files-{protocol}")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download readme.txt").click()
    assert Path(download.value.path()).read_bytes() == b"read me"

    page.get_by_label("Upload files").set_input_files(
        [upload_dir / "one.txt", upload_dir / "two.bin"]
    )
    wait_done(page, 2)
    assert (local / "one.txt").read_bytes() == b"first file"
    assert (local / "two.bin").read_bytes() == (upload_dir / "two.bin").read_bytes()

    page.get_by_role("button", name="New folder").click()
    page.get_by_label("Folder name").fill("fresh")
    page.get_by_role("button", name="Create folder").click()
    expect(page.get_by_role("link", name="fresh")).to_be_visible()
    assert (local / "fresh").is_dir()

    action(page, "one.txt", "Rename or move")
    page.get_by_label("New name or path").fill(f"{folder}/sub/renamed.txt")
    page.get_by_role("button", name="Rename").click()
    expect(page.get_by_role("cell", name="one.txt")).to_have_count(0)
    assert (local / "sub" / "renamed.txt").read_bytes() == b"first file"

    action(page, "two.bin", "Details")
    expect(page.get_by_role("dialog", name="two.bin")).to_contain_text("200,000 bytes")
    page.get_by_role("button", name="Close").click()

    action(page, "readme.txt", "Delete")
    page.get_by_role("dialog", name="Delete readme.txt?").get_by_role(
        "button", name="Delete"
    ).click()
    expect(page.get_by_role("cell", name="readme.txt")).to_have_count(0)
    assert not (local / "readme.txt").exists()
