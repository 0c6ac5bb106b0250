"""Administration, audit log: filters in the address bar, pages, details, the filtered view
exported as CSV and JSON through plain download links, and the tamper check against a
database edited behind the gateway's back.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Gateway, Screens, signed_in
from .test_admin_users import open_admin

pytestmark = pytest.mark.peer("chromium")


def audit(gateway: Gateway, token: str, **params: Any) -> dict[str, Any]:
    response = gateway.api("GET", "/audit", token, params={"limit": 200, **params})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_audit_log_screen(page: Any, gateway: Gateway, admin_token: str, screens: Screens) -> None:
    # something to look at: 30 roles (role.created) and a user (user.created)
    for n in range(30):
        created = gateway.api("POST", "/roles", admin_token, json={"name": f"team-{n:02}"})
        assert created.status_code == 201, created.text
    erin = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": "erin", "password": "erin's passphrase", "displayName": "Erin"},
    )
    assert erin.status_code == 201, erin.text
    total = audit(gateway, admin_token)["pagination"]["total"]

    signed_in(page, gateway)
    open_admin(page)
    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="Audit log"
    ).click()
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    table = page.get_by_role("table")
    # newest first, 25 a page
    expect(table.get_by_role("row")).to_have_count(26)
    expect(table.get_by_role("row").nth(1)).to_contain_text("Auth: login")  # the type in words
    expect(page.get_by_role("navigation", name="Pages")).to_contain_text("Page 1 of 2")
    page.get_by_role("button", name="Next page").click()
    expect(page.get_by_role("navigation", name="Pages")).to_contain_text("Page 2 of 2")
    assert "page=2" in page.url
    # the login that showed the screen is newer than `total`: at least the rest are here
    expect(table.get_by_role("row")).to_have_count(total + 1 - 25 + 1)

    # filters: event type, then text; the address bar keeps them (reload, deep link)
    page.get_by_label("Event type").select_option("role.created")
    page.get_by_label("Text").fill("team-0")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("10 entries match")).to_be_visible()
    assert "eventType=role.created" in page.url and "search=team-0" in page.url
    assert "page=" not in page.url
    page.reload()
    expect(page.get_by_text("10 entries match")).to_be_visible()
    expect(page.get_by_label("Event type")).to_have_value("role.created")
    expect(page.get_by_label("Text")).to_have_value("team-0")

    # an entry's details, on demand
    first = table.get_by_role("row").nth(1)
    expect(first).to_contain_text("team-09")
    details = first.get_by_role("button", name="Details")
    expect(details).to_have_attribute("aria-expanded", "false")
    details.click()
    expect(details).to_have_attribute("aria-expanded", "true")
    shown = page.get_by_label("Details of the entry")
    newest = audit(gateway, admin_token, eventType="role.created", search="team-09")["entries"][0]
    assert json.loads(shown.inner_text()) == newest["details"]
    screens.check(page, "admin-audit")

    # the filtered view, exported: the same entries the API lists with those filters
    listed = audit(gateway, admin_token, eventType="role.created", search="team-0")["entries"]
    with page.expect_download() as csv_download:
        page.get_by_role("link", name="Export CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(csv_download.value.path()).read_text())))
    assert [r["id"] for r in rows] == [e["id"] for e in listed]
    assert csv_download.value.suggested_filename.startswith("audit-log_")
    with page.expect_download() as json_download:
        page.get_by_role("link", name="Export JSON").click()
    assert json.loads(Path(json_download.value.path()).read_text()) == listed
    assert "audit.exported" in gateway.audit_types(admin_token)

    # user and time range
    page.get_by_role("link", name="Clear filters").click()
    expect(page.get_by_label("Event type")).to_have_value("")
    admin_id = gateway.api("GET", "/auth/me", admin_token).json()["user"]["id"]
    page.get_by_label("User").select_option(admin_id)
    later = (datetime.now(UTC) + timedelta(days=1)).astimezone()
    page.get_by_label("From").fill(later.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("No entry matches these filters.")).to_be_visible()
    assert f"userId={admin_id}" in page.url and "from=" in page.url
    page.get_by_label("From").fill("")
    page.get_by_label("Event type").select_option("user.created")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("1 entry matches")).to_be_visible()
    expect(table).to_contain_text("erin")

    # the tamper check: intact, then an entry edited in the database behind the gateway
    page.get_by_role("button", name="Check the chain").click()
    expect(page.get_by_role("status").filter(has_text="Intact:")).to_contain_text("verified")
    database = sqlite3.connect(gateway.data_dir / "hostgate.db")
    try:
        database.execute("UPDATE audit_log SET target = 'someone-else' WHERE seq = 3")
        database.commit()
    finally:
        database.close()
    page.get_by_role("button", name="Check the chain").click()
    tampered = page.get_by_role("alert").filter(has_text="Tampered:")
    expect(tampered).to_contain_text("entry seq 3")
    expect(tampered).to_contain_text("edited")
    verified = audit(gateway, admin_token, eventType="audit.verified")["entries"]
    assert [e["details"]["ok"] for e in verified] == [False, True]
    screens.check(page, "admin-audit-tampered", scroll_to=tampered)
