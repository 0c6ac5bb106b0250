"""Channels: GET/PUT shapes, validation, secrets encrypted at rest and masked."""

import json

from hostgate import SECRET_MASK
from hostgate.db.models.audit import AuditEntry
from hostgate_notifications.models import NotificationChannel
from hostgate_notifications.service import service as notifications_of
from sqlmodel import select

CHANNELS = "/api/v1/notifications/channels"

SMTP = {
    "host": "127.0.0.1",
    "port": 2525,
    "username": "mailer",
    "password": "smtp-pass-123",
    "from": "Gateway <gateway@example.org>",
    "tls": False,
}


async def channels(client, user):
    response = await client.get(CHANNELS, headers=user.headers)
    assert response.status_code == 200
    body = await response.get_json()
    return {c["id"]: c for c in body["channels"]}


async def test_unconfigured_channels_are_listed_with_empty_config(client, admin):
    response = await client.get(CHANNELS, headers=admin.headers)
    body = await response.get_json()
    assert [c["id"] for c in body["channels"]] == ["smtp", "telegram", "slack", "webhook"]
    for channel in body["channels"]:
        assert channel == {
            "id": channel["id"],
            "enabled": False,
            "config": {},
            "title": channel["title"],
            "installed": True,
            "fields": channel["fields"],
        }


async def test_channels_describe_their_fields_for_a_form(client, admin):
    listed = await channels(client, admin)
    assert [c["title"] for c in listed.values()] == [
        "E-mail (SMTP)",
        "Telegram",
        "Slack",
        "Webhook",
    ]
    smtp = {f["name"]: f for f in listed["smtp"]["fields"]}
    assert list(smtp) == ["host", "port", "username", "password", "from", "tls"]
    assert smtp["port"] == {
        "name": "port",
        "type": "integer",
        "required": False,
        "default": 587,
        "description": "587 for STARTTLS, 465 with TLS on",
        "secret": False,
        "choices": None,
        "minimum": 1,
        "maximum": 65535,
        "maxLength": None,
    }
    assert smtp["host"]["required"] and smtp["from"]["required"]
    assert smtp["password"]["secret"] and not smtp["username"]["secret"]
    assert smtp["tls"]["type"] == "boolean"
    telegram = {f["name"]: f for f in listed["telegram"]["fields"]}
    assert telegram["botToken"]["secret"] and telegram["botToken"]["required"]
    webhook = {f["name"]: f for f in listed["webhook"]["fields"]}
    assert webhook["method"]["choices"] == ["POST", "PUT", "PATCH"]
    assert webhook["method"]["default"] == "POST"
    assert webhook["headers"]["type"] == "map"
    assert listed["slack"]["fields"][0]["name"] == "webhookUrl"


async def test_put_every_channel_and_read_it_back_masked(client, admin):
    configs = {
        "smtp": SMTP,
        "telegram": {"botToken": "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "chatId": "-100200"},
        "slack": {"webhookUrl": "https://hooks.slack.com/services/T000/B000/XXXXSECRET"},
        "webhook": {
            "url": "https://hooks.example.org/in",
            "method": "put",
            "headers": {"Authorization": "Bearer tok-1234", "X-Api-Key": "k-5678", "X-Team": "ops"},
        },
    }
    for channel_type, config in configs.items():
        response = await client.put(
            f"{CHANNELS}/{channel_type}",
            headers=admin.headers,
            json={"enabled": True, "config": config},
        )
        assert response.status_code == 200, await response.get_data()
        assert await response.get_json() == {"ok": True}
    listed = await channels(client, admin)
    assert (listed["smtp"]["enabled"], listed["smtp"]["config"]) == (
        True,
        {**SMTP, "password": SECRET_MASK},
    )
    assert listed["telegram"]["config"] == {"botToken": SECRET_MASK, "chatId": "-100200"}
    assert listed["slack"]["config"] == {"webhookUrl": SECRET_MASK}
    assert listed["webhook"]["config"] == {
        "url": "https://hooks.example.org/in",
        "method": "PUT",
        "headers": {"Authorization": SECRET_MASK, "X-Api-Key": SECRET_MASK, "X-Team": "ops"},
    }
    text = json.dumps(listed)
    for secret in ("smtp-pass-123", "AAHdqTcv", "XXXXSECRET", "tok-1234", "k-5678"):
        assert secret not in text


async def test_secrets_are_encrypted_at_rest(client, admin, kernel):
    await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": True, "config": SMTP}
    )
    async with kernel.db.session() as session:
        row = await session.get(NotificationChannel, "smtp")
    assert "password" not in row.config
    assert row.config["host"] == "127.0.0.1"
    assert row.secrets.startswith("hg1:")
    assert "smtp-pass-123" not in row.secrets
    assert json.loads(kernel.secrets.open(row.secrets)) == {"password": "smtp-pass-123"}


async def test_sending_the_mask_back_keeps_the_stored_secret(client, admin, kernel):
    await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": True, "config": SMTP}
    )
    shown = (await channels(client, admin))["smtp"]["config"]
    shown["host"] = "mail.example.org"
    response = await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": True, "config": shown}
    )
    assert response.status_code == 200
    state = await notifications_of(kernel).channels.state("smtp")
    assert state.config["password"] == "smtp-pass-123"
    assert state.config["host"] == "mail.example.org"


async def test_masked_webhook_header_keeps_its_value_and_headers_can_be_removed(
    client, admin, kernel
):
    config = {
        "url": "http://127.0.0.1:9/in",
        "headers": {"Authorization": "Bearer tok-1234", "X-Team": "ops"},
    }
    await client.put(f"{CHANNELS}/webhook", headers=admin.headers, json={"config": config})
    shown = (await channels(client, admin))["webhook"]["config"]
    assert shown["headers"]["Authorization"] == SECRET_MASK
    del shown["headers"]["X-Team"]
    response = await client.put(
        f"{CHANNELS}/webhook", headers=admin.headers, json={"config": shown}
    )
    assert response.status_code == 200
    state = await notifications_of(kernel).channels.state("webhook")
    assert state.config["headers"] == {"Authorization": "Bearer tok-1234"}
    assert state.enabled is False


async def test_a_mask_with_nothing_stored_is_refused(client, admin):
    response = await client.put(
        f"{CHANNELS}/slack",
        headers=admin.headers,
        json={"enabled": True, "config": {"webhookUrl": SECRET_MASK}},
    )
    assert response.status_code == 400


async def test_put_merges_into_the_stored_config_and_keeps_enabled_when_omitted(
    client, admin, kernel
):
    await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": True, "config": SMTP}
    )
    response = await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"config": {"port": 465, "tls": True}}
    )
    assert response.status_code == 200
    listed = (await channels(client, admin))["smtp"]
    assert listed["enabled"] is True
    assert listed["config"]["port"] == 465 and listed["config"]["tls"] is True
    assert listed["config"]["host"] == "127.0.0.1"
    response = await client.put(f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": False})
    assert (await channels(client, admin))["smtp"]["enabled"] is False


async def test_invalid_configs_are_refused_and_change_nothing(client, admin, kernel):
    bad = [
        ("smtp", {"host": "mail.example.org"}),  # no from
        ("smtp", {**SMTP, "port": 70000}),
        ("smtp", {**SMTP, "from": "not-an-address"}),
        ("smtp", {**SMTP, "unknown": 1}),
        ("telegram", {"botToken": "not a token"}),
        ("telegram", {"botToken": "123:abc\n"}),  # any token without whitespace is taken
        ("slack", {"webhookUrl": "ftp://hooks.slack.com/x"}),
        ("webhook", {"url": "not a url"}),
        ("webhook", {"url": "https://x.example.org", "method": "DELETE"}),
        ("webhook", {"url": "https://x.example.org", "headers": {"Bad Header": "x"}}),
        ("webhook", {"url": "https://x.example.org", "headers": {"X-A": "a\r\nX-B: b"}}),
    ]
    for channel_type, config in bad:
        response = await client.put(
            f"{CHANNELS}/{channel_type}",
            headers=admin.headers,
            json={"enabled": True, "config": config},
        )
        assert response.status_code == 400, (channel_type, config)
        body = await response.get_json()
        assert body["code"] == "invalid_input"
    assert all(c["config"] == {} for c in (await channels(client, admin)).values())


async def test_enabling_an_unconfigured_channel_is_refused(client, admin):
    response = await client.put(
        f"{CHANNELS}/webhook", headers=admin.headers, json={"enabled": True}
    )
    assert response.status_code == 400


async def test_bad_bodies_unknown_types_and_guards(client, admin, make_user):
    response = await client.put(f"{CHANNELS}/pager", headers=admin.headers, json={"config": {}})
    assert response.status_code == 404
    response = await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": "yes", "config": SMTP}
    )
    assert response.status_code == 400
    response = await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": True, "extra": 1}
    )
    assert response.status_code == 400
    response = await client.put(
        f"{CHANNELS}/smtp",
        headers={**admin.headers, "Content-Type": "application/json"},
        data="{not json",
    )
    assert response.status_code == 400
    assert (await client.get(CHANNELS)).status_code == 401
    assert (await client.put(f"{CHANNELS}/smtp", json={"config": SMTP})).status_code == 401
    user = await make_user("plain")
    assert (await client.get(CHANNELS, headers=user.headers)).status_code == 403
    allowed = await make_user("notifier", permissions=["settings.notifications"])
    assert (await client.get(CHANNELS, headers=allowed.headers)).status_code == 200


async def test_channel_updates_are_audited_without_secrets(client, admin, kernel):
    await client.put(
        f"{CHANNELS}/smtp", headers=admin.headers, json={"enabled": True, "config": SMTP}
    )
    await client.put(
        f"{CHANNELS}/telegram",
        headers=admin.headers,
        json={"config": {"botToken": "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"}},
    )
    async with kernel.db.session() as session:
        rows = (
            await session.exec(
                select(AuditEntry).where(AuditEntry.event_type == "notifications.channel_updated")
            )
        ).all()
    assert {r.target for r in rows} == {"smtp", "telegram"}
    smtp = next(r for r in rows if r.target == "smtp")
    assert "password" in smtp.details["changedFields"]
    text = json.dumps([r.details for r in rows])
    assert "smtp-pass-123" not in text and "AAHdqTcv" not in text


async def test_a_channel_whose_pack_is_missing_is_listed_but_not_configurable(config, admin):
    import hostgate_notifications.plugin
    import hostgate_smtp.plugin
    from hostgate.app import create_app

    slim = create_app(config, plugins=[hostgate_smtp.plugin, hostgate_notifications.plugin])
    async with slim.test_app() as app:  # same data dir: the admin's token still works
        client = app.test_client()
        response = await client.get(CHANNELS, headers=admin.headers)
        listed = (await response.get_json())["channels"]
        assert [c["id"] for c in listed] == ["smtp", "telegram", "slack", "webhook"]
        assert [c["installed"] for c in listed] == [True, False, False, False]
        assert [bool(c["fields"]) for c in listed] == [True, False, False, False]
        response = await client.put(
            f"{CHANNELS}/slack",
            headers=admin.headers,
            json={"enabled": True, "config": {"webhookUrl": "https://h.example/x"}},
        )
        assert response.status_code == 400
        assert "hostgate-chat" in (await response.get_json())["error"]
