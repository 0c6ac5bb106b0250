"""Administration, notifications: a webhook channel pointed at a local receiver (secret
header write-only, "Send a test"), a rule built in the browser, the event triggered, the
delivery in the log; a failed delivery retried; a refused config said beside its field.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from hostgate import SECRET_MASK
from hostgate.testing import HttpReceiver
from playwright.sync_api import expect

from testsupport.receivers import http_receiver  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, signed_in
from .test_admin_users import open_admin

pytestmark = pytest.mark.peer("chromium")

TOKEN = "Bearer s3cret-webhook-token"


def until(condition: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    """Poll ``condition`` until it is truthy (a delivery happens off the request)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def log_entries(gateway: Gateway, token: str, **params: Any) -> list[dict[str, Any]]:
    response = gateway.api("GET", "/notifications/log", token, params={"limit": 200, **params})
    assert response.status_code == 200, response.text
    return response.json()["entries"]  # type: ignore[no-any-return]


def new_user(gateway: Gateway, token: str, name: str) -> None:
    created = gateway.api(
        "POST", "/users", token, json={"username": name, "password": "a long password!"}
    )
    assert created.status_code == 201, created.text


def test_webhook_rule_delivery_and_retry(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    screens: Screens,
    http_receiver: HttpReceiver,  # noqa: F811
) -> None:
    signed_in(page, gateway)
    open_admin(page)
    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="Notifications"
    ).click()
    expect(page.get_by_role("heading", name="Notifications")).to_be_visible()
    assert page.url.endswith("/admin/notifications/channels")

    # a refused value is said next to its field, and nothing is stored
    smtp = page.get_by_role("form", name="E-mail (SMTP)")
    smtp.get_by_label("Host").fill("mail.example.org")
    smtp.get_by_label("Port (optional)").fill("70000")
    smtp.get_by_label("From").fill("gw@example.org")
    smtp.get_by_role("button", name="Save E-mail (SMTP)").click()
    expect(smtp.get_by_label("Port (optional)")).to_have_attribute("aria-invalid", "true")
    expect(smtp.get_by_label("Port (optional)")).to_have_accessible_description(
        "587 for STARTTLS, 465 with TLS on. Must be at most 65535."
    )
    channels = gateway.api("GET", "/notifications/channels", admin_token).json()["channels"]
    assert next(c for c in channels if c["id"] == "smtp")["config"] == {}

    # the webhook: URL, method, a secret header and a plain one; on
    hook = page.get_by_role("form", name="Webhook")
    hook.get_by_label("URL").fill(http_receiver.url("/hook"))
    hook.get_by_label("Method (optional)").select_option("PUT")
    hook.get_by_role("button", name="Add header").click()
    hook.get_by_label("Headers 1: name").fill("Authorization")
    hook.get_by_label("Headers 1: value").fill(TOKEN)
    hook.get_by_role("button", name="Add header").click()
    hook.get_by_label("Headers 2: name").fill("X-Team")
    hook.get_by_label("Headers 2: value").fill("ops")
    hook.get_by_label("Send notifications through Webhook").check()
    hook.get_by_role("button", name="Save Webhook").click()
    expect(hook.get_by_text("Webhook: saved and on.")).to_be_visible()
    stored = next(
        c
        for c in gateway.api("GET", "/notifications/channels", admin_token).json()["channels"]
        if c["id"] == "webhook"
    )
    assert stored["enabled"] is True
    assert stored["config"] == {
        "url": http_receiver.url("/hook"),
        "method": "PUT",
        "headers": {"Authorization": SECRET_MASK, "X-Team": "ops"},
    }
    # the secret header is write-only from now on: the page never holds it
    expect(hook.get_by_text("stored, encrypted")).to_be_visible()
    assert TOKEN not in page.content()
    screens.check(page, "admin-notifications-channels", scroll_to=hook)

    # "Send a test" reaches the receiver with the stored secret header
    hook.get_by_role("button", name="Send a test").click()
    expect(hook.get_by_text("The test message was sent.")).to_be_visible()
    test_request = until(lambda: http_receiver.received("/hook"), "the test request")[0]
    assert test_request.method == "PUT"
    assert test_request.headers["Authorization"] == TOKEN
    assert test_request.headers["X-Team"] == "ops"

    # a rule built in the browser: new accounts whose name starts with "new-"
    page.get_by_role("navigation", name="Notification settings").get_by_role(
        "link", name="Rules"
    ).click()
    page.get_by_role("button", name="New rule").click()
    form = page.get_by_role("form", name="New rule")
    form.get_by_label("Rule name").fill("New accounts")
    form.get_by_label("Event type or pattern").fill("user.created")
    form.get_by_role("button", name="Add event").click()
    expect(form.get_by_role("list", name="Chosen events")).to_contain_text("user.created")
    form.get_by_role("button", name="Add condition").click()
    form.get_by_label("Condition 1: field").select_option("target")
    form.get_by_label("Condition 1: operator").select_option("starts_with")
    form.get_by_label("Condition 1: values").fill("new-")
    form.get_by_role("button", name="Add channel").click()
    form.get_by_label("Channel", exact=True).select_option("webhook")
    screens.check(page, "admin-notifications-rule")
    form.get_by_role("button", name="Save rule").click()
    expect(page.get_by_text("The rule New accounts is saved.")).to_be_visible()
    rules = gateway.api("GET", "/notifications/rules", admin_token).json()["rules"]
    assert len(rules) == 1
    rule = rules[0]
    assert (rule["name"], rule["events"], rule["cadence"], rule["enabled"]) == (
        "New accounts",
        ["user.created"],
        "instant",
        True,
    )
    assert rule["conditions"] == [{"field": "target", "operator": "starts_with", "value": ["new-"]}]
    assert rule["actions"] == [{"channel": "webhook", "recipients": []}]
    expect(page.get_by_role("list", name="Rules")).to_contain_text(
        "When user.created if target starts with new-: at once, one message per event, "
        "through Webhook."
    )

    # the event: one matching account, one not
    new_user(gateway, admin_token, "new-frank")
    new_user(gateway, admin_token, "someone")
    delivered = until(lambda: len(http_receiver.received("/hook")) >= 2, "the delivery")
    assert delivered
    payload = json.loads(http_receiver.received("/hook")[1].body)
    assert payload["rule"] == "New accounts"
    assert payload["event"]["eventType"] == "user.created"
    assert payload["event"]["target"] == "new-frank"
    until(lambda: any(e["status"] == "sent" and e["ruleName"] == "New accounts"
                      for e in log_entries(gateway, admin_token)), "the sent entry")  # fmt: skip

    # the delivery log shows it
    page.get_by_role("navigation", name="Notification settings").get_by_role(
        "link", name="Delivery log"
    ).click()
    table = page.get_by_role("table", name="Delivery attempts, newest first")
    sent_row = table.get_by_role("row").filter(has_text="New accounts")
    expect(sent_row).to_contain_text("webhook")
    expect(sent_row).to_contain_text("sent")
    screens.check(page, "admin-notifications-log")

    # the receiver fails: the failed delivery shows its error, and Retry sends it again
    http_receiver.failing = True
    new_user(gateway, admin_token, "new-gina")
    failed = until(
        lambda: log_entries(gateway, admin_token, status="failed"), "the failed delivery"
    )[0]
    http_receiver.failing = False
    page.get_by_label("Show").select_option("failed")
    failed_table = page.get_by_role("table", name="Delivery attempts, failed, newest first")
    failed_row = failed_table.get_by_role("row").filter(has_text="New accounts")
    expect(failed_row).to_contain_text("failed")
    expect(failed_row).to_contain_text("500")
    assert failed["error"] and "500" in failed["error"]
    failed_row.get_by_role("button", name="Retry").click()
    expect(page.get_by_text("Sent again through webhook.")).to_be_visible()
    retried = [e for e in log_entries(gateway, admin_token) if e["retryOf"] == failed["id"]]
    assert retried and retried[0]["status"] == "sent" and retried[0]["attempt"] == 2
    last = json.loads(http_receiver.received("/hook")[-1].body)
    assert last["event"]["target"] == "new-gina"

    # the rule off, from its switch
    page.get_by_role("navigation", name="Notification settings").get_by_role(
        "link", name="Rules"
    ).click()
    page.get_by_label("On: New accounts").uncheck()
    expect(page.get_by_text("The rule New accounts is off.")).to_be_visible()
    rule = gateway.api("GET", "/notifications/rules", admin_token).json()["rules"][0]
    assert rule["enabled"] is False
