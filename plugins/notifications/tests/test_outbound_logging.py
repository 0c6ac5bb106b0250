"""No secret of a channel's URL reaches the server log: deliveries, test sends, retries.

httpx logs every request at INFO with its full URL; webhook paths, ``?token=``
values and Telegram bot tokens (in the path) would land in the log in clear. The
kernel silences httpx/httpcore and logs the host and the status itself.
"""

import logging

from testsupport.logcapture import json_log  # noqa: F401
from testsupport.peers import free_port
from testsupport.receivers import settled_entries

CHANNELS = "/api/v1/notifications/channels"
RULES = "/api/v1/notifications/rules"
BOT_TOKEN = "424242:SecretBotTokenAAHdqTcvCH1vGWJxfSe"
SLACK_SECRET = "T0SECRET/B0SECRET/SlackSecretXyz123"
WEBHOOK_PATH_SECRET = "hook-path-secret-8c1f"
WEBHOOK_QUERY_SECRET = "query-token-secret-5d2e"
SECRETS = (
    BOT_TOKEN,
    BOT_TOKEN.split(":")[1],
    SLACK_SECRET,
    "SlackSecretXyz123",
    WEBHOOK_PATH_SECRET,
    WEBHOOK_QUERY_SECRET,
)


async def configure_channels(client, admin, http_receiver):
    configs = {
        "webhook": {
            "url": http_receiver.url(f"/in/{WEBHOOK_PATH_SECRET}?token={WEBHOOK_QUERY_SECRET}")
        },
        "slack": {"webhookUrl": http_receiver.url(f"/slack/{SLACK_SECRET}")},
        "telegram": {"botToken": BOT_TOKEN, "chatId": "-1001"},
    }
    for channel, config in configs.items():
        response = await client.put(
            f"{CHANNELS}/{channel}",
            headers=admin.headers,
            json={"enabled": True, "config": config},
        )
        assert response.status_code == 200, await response.get_data()


def assert_no_secret(caplog, captured):
    texts = [caplog.text, captured.text()]
    texts += [str(record.args) for record in caplog.records]
    for text in texts:
        for secret in SECRETS:
            assert secret not in text
    assert not [r for r in caplog.records if r.name.startswith(("httpx", "httpcore"))]


async def test_deliveries_test_sends_and_retries_log_no_secret(
    client,
    admin,
    http_receiver,
    caplog,
    json_log,  # noqa: F811
):
    caplog.set_level(logging.INFO)
    await configure_channels(client, admin, http_receiver)

    # a test send on each channel
    for channel in ("webhook", "slack", "telegram"):
        response = await client.post(f"{CHANNELS}/{channel}/test", headers=admin.headers)
        assert response.status_code == 200, await response.get_data()
    assert len(http_receiver.received()) == 3

    # a delivery on each channel, each failing once and then retried
    response = await client.post(
        RULES,
        headers=admin.headers,
        json={
            "name": "all",
            "events": ["user.created"],
            "actions": [
                {"channel": "webhook", "recipients": []},
                {"channel": "slack", "recipients": []},
                {"channel": "telegram", "recipients": []},
            ],
        },
    )
    assert response.status_code == 201, await response.get_data()
    http_receiver.fail_next = 3
    response = await client.post(
        "/api/v1/users",
        headers=admin.headers,
        json={"username": "carol", "password": "long enough pw"},
    )
    assert response.status_code == 201
    entries = await settled_entries(client, admin.headers, count=9)
    retried = [e for e in entries if e["ruleName"] == "all" and e["retryOf"]]
    assert sorted(e["channel"] for e in retried) == ["slack", "telegram", "webhook"]
    assert all(e["status"] == "sent" for e in retried), retried
    assert len(http_receiver.received()) == 3 + 6

    assert_no_secret(caplog, json_log)
    # the kernel's own lines are there: host and status, no path
    outbound = [r.getMessage() for r in caplog.records if r.name == "hostgate.outbound"]
    assert len(outbound) == 9
    assert all(f"127.0.0.1:{http_receiver.port}" in line for line in outbound)
    assert sum("HTTP 200" in line for line in outbound) == 6
    assert any("failed" in r.getMessage() for r in caplog.records if r.name.startswith("hostgate"))


async def test_a_failed_connection_logs_no_secret(caplog, json_log, client, admin):  # noqa: F811
    """A refused connection's error text names the host, never the URL's path or query."""
    caplog.set_level(logging.INFO)
    port = free_port()
    response = await client.post(
        f"{CHANNELS}/webhook/test",
        headers=admin.headers,
        json={
            "config": {
                "url": f"http://127.0.0.1:{port}/in/{WEBHOOK_PATH_SECRET}"
                f"?token={WEBHOOK_QUERY_SECRET}"
            }
        },
    )
    assert response.status_code >= 400
    body = await response.get_data(as_text=True)
    assert WEBHOOK_QUERY_SECRET not in body and WEBHOOK_PATH_SECRET not in body
    assert_no_secret(caplog, json_log)
    assert any(r.name == "hostgate.outbound" and "failed" in r.getMessage() for r in caplog.records)
