"""The telegram, slack and webhook channels: config models, payloads, real HTTP receivers.

The app, the logged-in client and the webhook receiver come from the kernel's test
kit (``hostgate.testing``), as in any third-party pack.
"""

import pytest
from hostgate import NotificationMessage
from hostgate.testing import eventually
from hostgate_chat.plugin import SlackConfig, TelegramConfig, WebhookConfig, webhook_body
from pydantic import ValidationError

from testsupport.receivers import settled_entries

CHANNELS = "/api/v1/notifications/channels"
SETTINGS = "/api/v1/settings"
TOKEN = "987654:ZZHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


def test_telegram_config():
    config = TelegramConfig.model_validate({"botToken": TOKEN, "chatId": -100123})
    assert config.chat_id == "-100123"
    assert config.model_dump(by_alias=True) == {"botToken": TOKEN, "chatId": "-100123"}
    for token in ("abc", "123:short", "x123:abcdefghijklmnop", "ünïcode-token"):
        assert TelegramConfig.model_validate({"botToken": token}).bot_token == token
    for token in ("", " ", "123:abc def", "123:abc\n", "\t123:abc", "x" * 1001):
        with pytest.raises(ValidationError):
            TelegramConfig.model_validate({"botToken": token})


async def test_any_token_without_whitespace_is_stored_and_tried_as_is(
    hostgate_client, http_receiver
):
    client = hostgate_client
    odd = "bot-token.from_some_proxy"
    await put(client, "telegram", {"botToken": odd, "chatId": "42"})
    response = await client.post(f"{CHANNELS}/telegram/test")
    assert response.status_code == 200, await response.get_json()
    [request] = await http_receiver.wait_for(f"/bot{odd}/sendMessage")
    assert request.json()["chat_id"] == "42"
    # a token cannot steer the request to another path of the API
    await put(client, "telegram", {"botToken": "1:a/../../other?x=#", "chatId": "42"})
    response = await client.post(f"{CHANNELS}/telegram/test")
    assert response.status_code == 200, await response.get_json()
    await http_receiver.wait_for("/bot1:a%2F..%2F..%2Fother%3Fx%3D%23/sendMessage")


async def test_whitespace_in_a_token_is_a_plain_400(hostgate_client):
    response = await hostgate_client.put(
        f"{CHANNELS}/telegram", json={"enabled": True, "config": {"botToken": "123 456"}}
    )
    assert response.status_code == 400
    assert "botToken" in (await response.get_json())["error"]


def test_slack_and_webhook_configs():
    assert SlackConfig.model_validate({"webhookUrl": " https://h.example/x "}).webhook_url == (
        "https://h.example/x"
    )
    for url in (
        "hooks.slack.com/x",
        "javascript:alert(1)",
        "https://",
        "http://a b/",
        "http://a\x00b/",
        "https://h.example/x\x7f",
    ):
        with pytest.raises(ValidationError):
            SlackConfig.model_validate({"webhookUrl": url})
    hook = WebhookConfig.model_validate({"url": "http://10.0.0.1:8080/in", "method": "patch"})
    assert hook.method == "PATCH" and hook.headers == {}
    for headers in ({"Host": "x"}, {"Content-Length": "1"}, {"Bad:Name": "x"}, {"X": "a\nb"}):
        with pytest.raises(ValidationError):
            WebhookConfig.model_validate({"url": "http://h.example", "headers": headers})
    with pytest.raises(ValidationError):
        WebhookConfig.model_validate({"url": "http://h.example", "method": "GET"})


def test_webhook_body_for_events_and_digests():
    event = {"eventType": "user.created", "target": "bob"}
    message = NotificationMessage("s", "t", event, (), "rule")
    assert webhook_body(message) == {"rule": "rule", "subject": "s", "text": "t", "event": event}
    digest = {
        "digest": True,
        "cadence": "daily",
        "periodStart": "a",
        "periodEnd": "b",
        "count": 1,
        "events": [event],
    }
    body = webhook_body(NotificationMessage("s", "t", digest, (), "rule"))
    assert body["digest"] == {"cadence": "daily", "periodStart": "a", "periodEnd": "b", "count": 1}
    assert body["events"] == [event]
    assert "event" not in body


async def put(client, channel_type, config):
    response = await client.put(
        f"{CHANNELS}/{channel_type}", json={"enabled": True, "config": config}
    )
    assert response.status_code == 200, await response.get_data()


async def test_webhook_method_and_headers(hostgate_client, hostgate_receiver):
    await put(
        hostgate_client,
        "webhook",
        {
            "url": hostgate_receiver.url("/in?source=hostgate"),
            "method": "PATCH",
            "headers": {"content-type": "application/vnd.hook+json", "X-Custom": "1"},
        },
    )
    response = await hostgate_client.post(f"{CHANNELS}/webhook/test")
    assert response.status_code == 200, await response.get_data()
    [request] = await hostgate_receiver.wait_for("/in")
    assert request.method == "PATCH"
    assert request.path == "/in?source=hostgate"
    assert request.headers["content-type"] == "application/vnd.hook+json"
    assert request.headers["X-Custom"] == "1"
    assert request.json()["event"]["eventType"] == "test.notification"


async def test_telegram_sends_once_per_chat_id(hostgate_client, hostgate_kernel, http_receiver):
    await put(hostgate_client, "telegram", {"botToken": TOKEN})
    response = await hostgate_client.post(
        "/api/v1/notifications/rules",
        json={
            "name": "to two chats",
            "events": ["user.created"],
            "actions": [{"channel": "telegram", "recipients": ["111", "222"]}],
        },
    )
    assert response.status_code == 201
    await hostgate_kernel.audit.record("user.created", target="zoe")
    entries = await settled_entries(hostgate_client, {}, count=2)
    assert [e["status"] for e in entries] == ["sent", "sent"]
    requests = await http_receiver.wait_for(f"/bot{TOKEN}/sendMessage", count=2)
    assert sorted(r.json()["chat_id"] for r in requests) == ["111", "222"]


async def test_telegram_without_any_chat_id_is_a_clear_error(hostgate_client):
    await put(hostgate_client, "telegram", {"botToken": TOKEN})
    response = await hostgate_client.post(f"{CHANNELS}/telegram/test")
    assert response.status_code == 400
    assert "chat id" in (await response.get_json())["error"]


async def test_tls_certificates_are_verified(hostgate_client, https_receiver_factory, chat_cert):
    receiver = https_receiver_factory(chat_cert.cert_path, chat_cert.key_path)
    await put(hostgate_client, "slack", {"webhookUrl": receiver.url("/slack/x")})
    response = await hostgate_client.post(f"{CHANNELS}/slack/test")
    assert response.status_code == 502
    assert "CERTIFICATE_VERIFY_FAILED" in (await response.get_json())["error"]
    assert receiver.received() == []


async def test_a_denied_destination_never_gets_a_request(hostgate_client, hostgate_receiver):
    async def allow(rules):
        response = await hostgate_client.put(SETTINGS, json={"network.allow": rules})
        assert response.status_code == 200, await response.get_data()

    await allow("10.0.0.0/8")
    await put(hostgate_client, "webhook", {"url": hostgate_receiver.url("/in")})
    response = await hostgate_client.post(f"{CHANNELS}/webhook/test")
    assert response.status_code == 403
    assert (await response.get_json())["code"] == "target_denied"
    await allow("loopback")
    response = await hostgate_client.post(f"{CHANNELS}/webhook/test")
    assert response.status_code == 200
    await eventually(lambda: len(hostgate_receiver.received("/in")) == 1)
