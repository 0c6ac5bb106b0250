"""Administration, backup and restore: a backup downloaded in the browser
is restored into a second, fresh ``hostgate serve`` (another encryption key) through its
own browser app, and the first instance's admin signs in there; a wrong password is
refused beside its field and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import AXE_SOURCE, Console, Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

BACKUP_PASSWORD = "backup passphrase ünïcode"
SECOND_KEY = "d5" * 32


def login_status(gateway: Gateway, username: str, password: str) -> int:
    response = httpx.post(
        f"{gateway.url}/api/v1/auth/login",
        json={"username": username, "password": password},
        timeout=60,
    )
    return response.status_code


def open_backup(page: Any) -> None:
    """Through the top bar and the administration navigation."""
    page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name="Administration"
    ).click()
    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="Backup and restore"
    ).click()
    expect(page.get_by_role("heading", name="Backup and restore")).to_be_visible()


def restore(page: Any, archive: Path, password: str) -> None:
    page.get_by_label("Backup file").set_input_files(str(archive))
    page.get_by_label("Password of the backup").fill(password)
    page.get_by_label("I understand that everything on this gateway is replaced").check()
    page.get_by_role("button", name="Restore this backup").click()


@pytest.fixture
def second(tmp_path: Path, built_app: None) -> Iterator[Gateway]:
    """Another fresh instance with its own data directory and encryption key."""
    process = Gateway(tmp_path / "second", env={"HOSTGATE_ENCRYPTION_KEY": SECOND_KEY}).start()
    yield process
    process.stop()
    assert not process.unhandled(), process.unhandled()


@pytest.fixture
def second_page(browser: Any, second: Gateway) -> Iterator[Any]:
    """A page in its own browser profile (cookies are per host, not per port).

    It asks for ``second`` so it closes before that gateway stops: a page still open
    then polls a closed port and logs ERR_CONNECTION_REFUSED (seen once under load)."""
    console = Console()
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-GB")
    ctx.add_init_script(path=AXE_SOURCE)
    tab = ctx.new_page()
    tab.set_default_timeout(30_000)
    tab.on("console", console.on_message)
    tab.on("pageerror", console.on_page_error)
    yield tab
    ctx.close()
    assert not console.errors, "\n".join(console.errors)


def test_backup_downloaded_and_restored_into_a_second_instance(
    page: Any,
    second_page: Any,
    gateway: Gateway,
    second: Gateway,
    admin_token: str,
    screens: Screens,
    tmp_path: Path,
) -> None:
    made = gateway.api(
        "POST",
        "/connections",
        admin_token,
        json={
            "name": "kept by the backup",
            "protocol": "ssh",
            "host": "198.51.100.7",
            "port": 22,
            "username": "ops",
            "password": "a sealed secret",
        },
    )
    assert made.status_code in {200, 201}, made.text

    signed_in(page, gateway)
    open_backup(page)
    screens.check(page, "admin-backup")

    # the two passwords must agree; nothing is asked of the server until they do
    page.get_by_label("Backup password").fill(BACKUP_PASSWORD)
    page.get_by_label("The same password again").fill(BACKUP_PASSWORD + "x")
    page.get_by_role("button", name="Download backup").click()
    expect(page.get_by_text("The two passwords differ.")).to_be_visible()
    assert "backup.exported" not in gateway.audit_types(admin_token)

    page.get_by_label("The same password again").fill(BACKUP_PASSWORD)
    with page.expect_download() as started:
        page.get_by_role("button", name="Download backup").click()
    download = started.value
    assert download.suggested_filename.startswith("hostgate-backup-")
    assert download.suggested_filename.endswith(".geb")
    archive = tmp_path / download.suggested_filename
    download.save_as(str(archive))
    assert download.failure() is None
    assert archive.stat().st_size > 1024
    expect(page.get_by_text("The download has started")).to_be_visible()
    exported = gateway.api(
        "GET", "/audit", admin_token, params={"eventType": "backup.exported"}
    ).json()["entries"]
    assert exported and exported[0]["details"]["via"] == "link"

    # the second instance: a fresh admin of its own, who restores the first one's backup
    second.setup_admin("newcomer")
    signed_in(second_page, second, "newcomer")
    open_backup(second_page)
    restore(second_page, archive, BACKUP_PASSWORD)
    expect(second_page.get_by_text("Backup restored.")).to_be_visible(timeout=120_000)
    screens.check(second_page, "admin-backup-restored")

    # everything there now is the first instance's: its admin, not the newcomer
    assert login_status(second, "newcomer", ADMIN_PASSWORD) == 401
    second_page.get_by_role("button", name="Sign in again").click()
    second_page.get_by_label("Username").fill("admin")
    second_page.get_by_label("Password").fill(ADMIN_PASSWORD)
    second_page.get_by_role("button", name="Sign in", exact=True).click()
    # back on the backup screen, where the administration screens keep the sidebar folded
    expect(second_page.get_by_role("navigation", name="Administration")).to_be_visible()
    second_page.get_by_role("banner").get_by_role("button", name="Connections").click()
    tree = second_page.get_by_role("navigation", name="Connections")
    expect(tree.get_by_text("kept by the backup")).to_be_visible()

    token = second.login("admin")
    listing = second.api("GET", "/connections", token).json()
    assert "kept by the backup" in {c["name"] for c in listing["ungrouped"]}
    imported = second.api("GET", "/audit", token, params={"eventType": "backup.imported"}).json()[
        "entries"
    ]
    assert len(imported) == 1


def test_wrong_password_is_refused_and_changes_nothing(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens, tmp_path: Path
) -> None:
    archive = tmp_path / "made-by-the-api.geb"
    with httpx.stream(
        "POST",
        f"{gateway.url}/api/v1/backup/export",
        headers={"Authorization": f"Bearer {admin_token}"},
        json={"password": BACKUP_PASSWORD},
        timeout=120,
    ) as response:
        assert response.status_code == 200
        with archive.open("wb") as handle:
            for chunk in response.iter_bytes():
                handle.write(chunk)
    # made after the backup: a restore would remove it
    added = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": "after-the-backup", "password": "a long password!"},
    )
    assert added.status_code in {200, 201}, added.text

    signed_in(page, gateway)
    open_backup(page)
    restore(page, archive, "not the backup password")
    refusal = page.get_by_text("That password does not open this backup")
    expect(refusal).to_be_visible(timeout=120_000)
    expect(page.get_by_label("Password of the backup")).to_have_attribute("aria-invalid", "true")
    screens.check(page, "admin-backup-wrong-password", scroll_to=refusal)

    # nothing changed: the later user is still there, the sessions still work, no import
    users = gateway.api("GET", "/users", admin_token)
    assert users.status_code == 200
    assert "after-the-backup" in {u["username"] for u in users.json()["users"]}
    assert login_status(gateway, "after-the-backup", "a long password!") == 200
    assert "backup.imported" not in gateway.audit_types(admin_token)
    # and the screen still works: the app did not sign out
    expect(page.get_by_role("button", name="Restore this backup")).to_be_enabled()
