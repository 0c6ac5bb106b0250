"""End to end: events become deliveries to real receivers; failures, retries, digests."""

import asyncio
from datetime import timedelta

import hostgate_smtp.plugin
from hostgate.app import create_app
from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.identity import Role
from hostgate.timefmt import utcnow
from hostgate_notifications.models import NotificationLogEntry
from hostgate_notifications.service import service as notifications_of
from sqlmodel import select

from testsupport.receivers import eventually, log_entries, settled_entries

CHANNELS = "/api/v1/notifications/channels"
RULES = "/api/v1/notifications/rules"
TOKEN = "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
#: How long a request may take before the test calls it hung (a liveness bound, not a timing).
LIVENESS_BOUND = 20.0


async def put_channel(client, admin, channel_type, config, enabled=True):
    response = await client.put(
        f"{CHANNELS}/{channel_type}",
        headers=admin.headers,
        json={"enabled": enabled, "config": config},
    )
    assert response.status_code == 200, await response.get_data()


async def webhook_rule(client, admin, http_receiver, **changes):
    await put_channel(client, admin, "webhook", {"url": http_receiver.url("/hook")})
    body = {
        "name": "hook",
        "events": ["user.created"],
        "actions": [{"channel": "webhook", "recipients": []}],
        **changes,
    }
    response = await client.post(RULES, headers=admin.headers, json=body)
    assert response.status_code == 201, await response.get_data()
    return (await response.get_json())["rule"]


async def create_user(client, admin, username, email=""):
    response = await client.post(
        "/api/v1/users",
        headers=admin.headers,
        json={"username": username, "password": "long enough pw", "email": email},
    )
    assert response.status_code == 201, await response.get_data()
    return await response.get_json()


async def test_creating_a_user_notifies_every_channel(
    client, admin, kernel, smtp_receiver, http_receiver
):
    await put_channel(
        client,
        admin,
        "smtp",
        {"host": "127.0.0.1", "port": smtp_receiver.port, "from": "gw@example.org"},
    )
    await put_channel(client, admin, "telegram", {"botToken": TOKEN, "chatId": "1"})
    await put_channel(client, admin, "slack", {"webhookUrl": http_receiver.url("/slack/T/B/x")})
    await put_channel(
        client,
        admin,
        "webhook",
        {"url": http_receiver.url("/hook"), "headers": {"X-Token": "hook-secret-1"}},
    )
    response = await client.post(
        RULES,
        headers=admin.headers,
        json={
            "name": "New accounts",
            "events": ["user.*"],
            "actions": [
                {"channel": "smtp", "recipients": ["ops@example.org"]},
                {"channel": "telegram", "recipients": ["777"]},
                {"channel": "slack", "recipients": []},
                {"channel": "webhook", "recipients": []},
            ],
        },
    )
    rule = (await response.get_json())["rule"]

    await create_user(client, admin, "newcomer", "newcomer@example.org")

    entries = await settled_entries(client, admin.headers, count=4)
    assert sorted(e["channel"] for e in entries) == ["slack", "smtp", "telegram", "webhook"]
    assert all(e["status"] == "sent" and e["error"] is None for e in entries), entries
    assert all(e["ruleId"] == rule["id"] and e["ruleName"] == "New accounts" for e in entries)

    mail = (await smtp_receiver.wait_for())[0]
    assert mail.recipients == ["ops@example.org"]
    assert mail.subject == "[hostgate] New accounts — user.created"
    assert "Target: newcomer" in mail.body and "User:   admin" in mail.body
    telegram = (await http_receiver.wait_for(f"/bot{TOKEN}/sendMessage"))[0].json()
    assert telegram["chat_id"] == "777"
    assert "user.created" in telegram["text"]
    slack = (await http_receiver.wait_for("/slack/T/B/x"))[0].json()
    assert "New accounts" in slack["text"]
    hook = (await http_receiver.wait_for("/hook"))[0]
    assert hook.headers["X-Token"] == "hook-secret-1"
    payload = hook.json()
    assert payload["rule"] == "New accounts"
    assert payload["event"]["eventType"] == "user.created"
    assert payload["event"]["target"] == "newcomer"
    assert payload["event"]["username"] == "admin"

    rules = (await (await client.get(RULES, headers=admin.headers)).get_json())["rules"]
    assert rules[0]["lastTriggeredAt"] is not None


async def test_a_failing_receiver_fails_then_the_automatic_retry_succeeds(
    client, admin, http_receiver
):
    await webhook_rule(client, admin, http_receiver)
    http_receiver.fail_next = 1
    await create_user(client, admin, "bob")
    entries = await settled_entries(client, admin.headers, count=2)
    retry, first = entries  # newest first
    assert first["status"] == "failed"
    assert first["error"] == 'The webhook answered HTTP 500: {"error": "receiver is down"}'
    assert first["attempt"] == 1
    assert retry["status"] == "sent"
    assert retry["attempt"] == 2 and retry["retryOf"] == first["id"]
    assert len(http_receiver.received("/hook")) == 2


async def test_automatic_retries_stop_after_the_last_attempt(client, admin, kernel, http_receiver):
    await webhook_rule(client, admin, http_receiver)
    http_receiver.failing = True
    await create_user(client, admin, "carol")

    async def exhausted():
        async with kernel.db.session() as session:
            rows = (await session.exec(select(NotificationLogEntry))).all()
        done = len(rows) == 3 and all(r.status == "failed" for r in rows)
        return done and all(r.next_attempt_at is None for r in rows)

    await eventually(exhausted)
    entries = (await log_entries(client, admin.headers))["entries"]
    assert sorted(e["attempt"] for e in entries) == [1, 2, 3]


async def test_manual_retry_resends_with_the_current_config(client, admin, http_receiver):
    await webhook_rule(client, admin, http_receiver)
    await put_channel(client, admin, "webhook", {"url": http_receiver.url("/old")}, enabled=False)
    await create_user(client, admin, "dave")
    [failed] = await settled_entries(client, admin.headers)
    assert failed["status"] == "failed"
    assert failed["error"] == 'Channel "webhook" is disabled'

    await put_channel(client, admin, "webhook", {"url": http_receiver.url("/new")})
    response = await client.post(
        f"/api/v1/notifications/log/{failed['id']}/retry", headers=admin.headers
    )
    assert response.status_code == 200, await response.get_data()
    body = await response.get_json()
    assert body["ok"] is True
    assert body["entry"]["status"] == "sent"
    assert body["entry"]["retryOf"] == failed["id"]
    assert http_receiver.received("/new")[0].json()["event"]["target"] == "dave"
    assert http_receiver.received("/old") == []
    entries = (await log_entries(client, admin.headers))["entries"]
    assert {e["id"]: e["status"] for e in entries} == {
        failed["id"]: "failed",
        body["entry"]["id"]: "sent",
    }

    sent_id = body["entry"]["id"]
    response = await client.post(
        f"/api/v1/notifications/log/{sent_id}/retry", headers=admin.headers
    )
    assert response.status_code == 409
    response = await client.post("/api/v1/notifications/log/nope/retry", headers=admin.headers)
    assert response.status_code == 404


async def test_a_manual_retry_against_a_failing_receiver_reports_the_error(
    client, admin, http_receiver
):
    await webhook_rule(client, admin, http_receiver)
    await put_channel(client, admin, "webhook", {"url": http_receiver.url("/hook")}, enabled=False)
    await create_user(client, admin, "erin")
    [failed] = await settled_entries(client, admin.headers)
    await put_channel(client, admin, "webhook", {"url": http_receiver.url("/hook")})
    http_receiver.failing = True
    response = await client.post(
        f"/api/v1/notifications/log/{failed['id']}/retry", headers=admin.headers
    )
    assert response.status_code == 502
    assert "HTTP 500" in (await response.get_json())["error"]
    entries = (await log_entries(client, admin.headers, status="failed"))["entries"]
    assert len(entries) == 2
    http_receiver.failing = False
    response = await client.post(
        f"/api/v1/notifications/log/{entries[0]['id']}/retry", headers=admin.headers
    )
    assert response.status_code == 200
    assert (await response.get_json())["entry"]["status"] == "sent"


async def test_conditions_and_disabled_rules_decide_what_is_delivered(
    client, admin, kernel, notifications, http_receiver
):
    rule = await webhook_rule(
        client,
        admin,
        http_receiver,
        events=["auth.login_failed"],
        conditions=[{"field": "ipAddress", "operator": "in", "value": ["203.0.113.0/24"]}],
    )
    audit = kernel.audit
    await audit.record("auth.login_failed", target="x", ip_address="10.1.2.3", username="x")
    await audit.record("auth.login", target="y", ip_address="203.0.113.9", username="y")
    await audit.record("auth.login_failed", target="z", ip_address="203.0.113.9", username="z")
    [hook] = await http_receiver.wait_for("/hook")
    assert hook.json()["event"]["target"] == "z"

    response = await client.patch(f"{RULES}/{rule['id']}/toggle", headers=admin.headers)
    assert (await response.get_json())["enabled"] is False
    await audit.record("auth.login_failed", target="w", ip_address="203.0.113.10", username="w")
    await eventually(notifications.idle)
    assert len(http_receiver.received("/hook")) == 1
    assert (await log_entries(client, admin.headers))["total"] == 1


async def test_hourly_digest_batches_events_into_one_message(
    client, admin, kernel, notifications, http_receiver
):
    await webhook_rule(client, admin, http_receiver, cadence="hourly")
    for name in ("a1", "a2", "a3"):
        await create_user(client, admin, name)
    await eventually(notifications.idle)
    assert http_receiver.received("/hook") == []
    assert (await log_entries(client, admin.headers))["total"] == 0
    rules = (await (await client.get(RULES, headers=admin.headers)).get_json())["rules"]
    assert rules[0]["lastTriggeredAt"] is not None

    assert await notifications.flush_digests(now=utcnow() + timedelta(hours=1)) == 1
    [hook] = await http_receiver.wait_for("/hook")
    payload = hook.json()
    assert payload["digest"]["cadence"] == "hourly"
    assert payload["digest"]["count"] == 3
    assert [e["target"] for e in payload["events"]] == ["a1", "a2", "a3"]
    assert "3 events (hourly digest)" in payload["subject"]
    [entry] = await settled_entries(client, admin.headers)
    assert entry["status"] == "sent"
    assert await notifications.flush_digests(now=utcnow() + timedelta(hours=1)) == 0


async def test_daily_digest_by_mail(client, admin, notifications, smtp_receiver):
    await put_channel(
        client,
        admin,
        "smtp",
        {"host": "127.0.0.1", "port": smtp_receiver.port, "from": "gw@example.org"},
    )
    response = await client.post(
        RULES,
        headers=admin.headers,
        json={
            "name": "Daily roles",
            "events": ["role.*", "user.created"],
            "cadence": "daily",
            "actions": [{"channel": "smtp", "recipients": ["ops@example.org"]}],
        },
    )
    assert response.status_code == 201
    await create_user(client, admin, "d1")
    await create_user(client, admin, "d2")
    await eventually(notifications.idle)
    assert await notifications.flush_digests(now=utcnow() + timedelta(days=1)) == 1
    mail = (await smtp_receiver.wait_for())[0]
    assert mail.subject == "[hostgate] Daily roles — 2 events (daily digest)"
    assert "user.created" in mail.body and "target=d1" in mail.body and "target=d2" in mail.body


async def test_smtp_recipients_resolve_users_and_roles_to_addresses(
    client, admin, kernel, make_user, smtp_receiver
):
    async with kernel.db.session() as session:
        user_role = (await session.exec(select(Role).where(Role.name == "user"))).one()
    colleague = await make_user("colleague", email="colleague@example.org")
    await make_user("member", email="member@example.org")
    await make_user("no-mail")
    await put_channel(
        client,
        admin,
        "smtp",
        {"host": "127.0.0.1", "port": smtp_receiver.port, "from": "gw@example.org"},
    )
    await client.post(
        RULES,
        headers=admin.headers,
        json={
            "name": "to people",
            "events": ["user.created"],
            "actions": [
                {"channel": "smtp", "recipients": [colleague.id, user_role.id, "x@example.org"]}
            ],
        },
    )
    await create_user(client, admin, "frank")
    [entry] = await settled_entries(client, admin.headers)
    assert entry["status"] == "sent", entry
    mail = (await smtp_receiver.wait_for())[0]
    assert sorted(mail.recipients) == [
        "colleague@example.org",
        "member@example.org",
        "x@example.org",
    ]


async def test_no_resolvable_recipient_is_a_failed_delivery(
    client, admin, make_user, smtp_receiver
):
    nobody = await make_user("nobody")
    await put_channel(
        client,
        admin,
        "smtp",
        {"host": "127.0.0.1", "port": smtp_receiver.port, "from": "gw@example.org"},
    )
    await client.post(
        RULES,
        headers=admin.headers,
        json={
            "name": "to nobody",
            "events": ["user.created"],
            "actions": [{"channel": "smtp", "recipients": [nobody.id]}],
        },
    )
    await create_user(client, admin, "gina")
    [entry] = await settled_entries(client, admin.headers)
    assert entry["status"] == "failed"
    assert entry["error"].startswith("No e-mail recipients")
    assert smtp_receiver.messages == []


async def test_the_network_policy_blocks_webhooks_without_feeding_itself(
    client, admin, kernel, notifications, http_receiver
):
    await kernel.settings.update({"network.deny": "127.0.0.0/8"})
    await webhook_rule(client, admin, http_receiver, events=["*"])  # rule_created matches
    await kernel.audit.record("user.created", target="henry")
    entries = await settled_entries(client, admin.headers, count=2)
    assert all(e["status"] == "failed" for e in entries)
    assert all("network policy does not allow" in e["error"] for e in entries)

    async def denial_recorded():
        async with kernel.db.session() as session:
            query = select(AuditEntry).where(AuditEntry.event_type == "network.denied")
            return (await session.exec(query)).first()

    denied = await eventually(denial_recorded)
    assert denied.details["purpose"] == "webhook"
    await eventually(notifications.idle)
    assert (await log_entries(client, admin.headers))["total"] == 2
    assert http_receiver.received() == []


async def test_pending_deliveries_survive_a_restart(config, plugins, admin, kernel, http_receiver):
    # The first app (the ``kernel`` fixture's) stores a pending entry whose worker is gone,
    # as after a crash; a second app on the same data directory delivers it.
    service = notifications_of(kernel)
    await service.channels.update("webhook", True, {"url": http_receiver.url("/hook")})
    await service.delivery.stop()
    entry = NotificationLogEntry(
        rule_id="r1",
        rule_name="survivor",
        channel="webhook",
        payload={"subject": "s", "text": "t", "event": {"eventType": "user.created"}},
    )
    async with kernel.db.session() as session:
        session.add(entry)
        await session.commit()
    assert http_receiver.received() == []

    second = create_app(config, plugins=plugins)
    async with second.test_app():
        [hook] = await http_receiver.wait_for("/hook")
        assert hook.json()["rule"] == "survivor"
        other = second.extensions["hostgate"]

        async def sent():
            async with other.db.session() as session:
                row = await session.get(NotificationLogEntry, entry.id)
            return row.status == "sent"

        await eventually(sent)


async def first_attempt(client, admin, timeout: float = 15.0):
    """The log entry of the first delivery attempt once it is no longer pending."""

    async def settled():
        entries = (await log_entries(client, admin.headers, limit=200))["entries"]
        done = [e for e in entries if e["attempt"] == 1 and e["status"] != "pending"]
        return done[0] if done else None

    return await eventually(settled, timeout, "the first attempt to settle")


async def test_a_webhook_receiver_that_never_answers_fails_with_a_timeout(
    client, admin, kernel, silent_receiver
):
    """A receiver that accepts the connection and stays silent ends the delivery ``failed``
    with a timeout error (the outbound HTTP timeout, lowered for the test), not a hang."""
    kernel.outbound.timeout = 0.5
    await webhook_rule(client, admin, silent_receiver)
    await create_user(client, admin, "ivan")
    entry = await first_attempt(client, admin)
    assert entry["status"] == "failed"
    assert entry["error"] == "127.0.0.1 did not answer within 0.5 s"
    assert silent_receiver.connections() >= 1


async def test_a_channel_that_outlasts_the_send_timeout_fails(
    client, admin, kernel, notifications, silent_receiver
):
    """The delivery queue's own ``send_timeout`` ends a send the channel would let hang."""
    kernel.outbound.timeout = 3600.0
    notifications.delivery.send_timeout = 0.5
    await webhook_rule(client, admin, silent_receiver)
    await create_user(client, admin, "jane")
    entry = await first_attempt(client, admin)
    assert entry["status"] == "failed"
    assert entry["error"] == "the channel did not finish in time"


async def test_an_smtp_server_that_never_greets_fails_with_a_timeout(
    client, admin, silent_receiver, monkeypatch
):
    """An SMTP server that accepts the connection but never sends its greeting ends the
    delivery ``failed`` with a timeout error (the smtp pack's TIMEOUT, lowered for the test)."""
    monkeypatch.setattr(hostgate_smtp.plugin, "TIMEOUT", 0.5)
    await put_channel(
        client,
        admin,
        "smtp",
        {"host": "127.0.0.1", "port": silent_receiver.port, "from": "gw@example.org"},
    )
    response = await client.post(
        RULES,
        headers=admin.headers,
        json={
            "name": "mail",
            "events": ["user.created"],
            "actions": [{"channel": "smtp", "recipients": ["ops@example.org"]}],
        },
    )
    assert response.status_code == 201, await response.get_data()
    await create_user(client, admin, "karl")
    entry = await first_attempt(client, admin)
    assert entry["status"] == "failed"
    assert entry["error"] == f"SMTP server 127.0.0.1:{silent_receiver.port} did not answer in time"
    assert silent_receiver.connections() >= 1


async def test_a_hanging_receiver_never_blocks_the_request_that_caused_the_event(
    client, admin, kernel, notifications, silent_receiver
):
    """``POST /users`` answers 201 while its ``user.created`` delivery hangs: the liveness
    bound is far below the send timeouts, so a synchronous delivery would fail the test."""
    kernel.outbound.timeout = 3600.0
    notifications.delivery.send_timeout = 3600.0
    await webhook_rule(client, admin, silent_receiver)
    created = await asyncio.wait_for(create_user(client, admin, "lena"), LIVENESS_BOUND)
    assert created["username"] == "lena"
    # the delivery really started and is still hanging
    await eventually(lambda: silent_receiver.connections() >= 1, what="the webhook connection")
    [entry] = (await log_entries(client, admin.headers))["entries"]
    assert entry["status"] == "pending"


async def test_events_of_the_kernel_and_other_features_reach_the_rules(
    client, admin, kernel, http_receiver
):
    """The pack hears every audit entry through ``track_event``: a real sign-in
    (``auth.login``) and a ``session.*`` entry written through ``kernel.audit`` as a
    session feature writes it."""
    await webhook_rule(client, admin, http_receiver, events=["auth.login", "session.*"])
    response = await client.post(
        "/api/v1/auth/login", json={"username": admin.username, "password": admin.password}
    )
    assert response.status_code == 200, await response.get_data()
    await kernel.audit.record(
        "session.participant_joined", username="bob", target="s-1", details={"sessionId": "s-1"}
    )
    delivered = await http_receiver.wait_for("/hook", count=2)
    assert sorted(d.json()["event"]["eventType"] for d in delivered) == [
        "auth.login",
        "session.participant_joined",
    ]
    entries = await settled_entries(client, admin.headers, count=2)
    assert [e["status"] for e in entries] == ["sent", "sent"]
