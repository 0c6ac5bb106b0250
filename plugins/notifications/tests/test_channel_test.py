"""``POST /notifications/channels/:type/test``: a real message, or the remote error."""

from hostgate_notifications.service import service as notifications_of

from testsupport.receivers import log_entries

CHANNELS = "/api/v1/notifications/channels"
TOKEN = "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


async def put(client, admin, channel_type, config, enabled=True):
    response = await client.put(
        f"{CHANNELS}/{channel_type}",
        headers=admin.headers,
        json={"enabled": enabled, "config": config},
    )
    assert response.status_code == 200, await response.get_data()


async def test_smtp_test_mail_arrives_with_subject_and_body(client, admin, smtp_receiver):
    await put(
        client,
        admin,
        "smtp",
        {"host": "127.0.0.1", "port": smtp_receiver.port, "from": "gw@example.org"},
    )
    response = await client.post(
        f"{CHANNELS}/smtp/test", headers=admin.headers, json={"recipients": ["ops@example.org"]}
    )
    assert response.status_code == 200, await response.get_data()
    body = await response.get_json()
    assert body["ok"] is True
    mail = (await smtp_receiver.wait_for())[0]
    assert mail.recipients == ["ops@example.org"]
    assert mail.sender == "gw@example.org"
    assert mail.subject == "[hostgate] Test Notification — test.notification"
    assert "Event:  test.notification" in mail.body
    assert "User:   admin" in mail.body
    log = await log_entries(client, admin.headers)
    assert log["entries"][0]["ruleId"] == "test"
    assert log["entries"][0]["ruleName"] == "Test Notification"
    assert log["entries"][0]["status"] == "sent"


async def test_overrides_are_used_but_not_saved(client, admin, smtp_receiver, kernel):
    await put(
        client,
        admin,
        "smtp",
        {"host": "127.0.0.1", "port": 9, "from": "gw@example.org"},
        enabled=False,
    )
    response = await client.post(
        f"{CHANNELS}/smtp/test",
        headers=admin.headers,
        json={"config": {"port": smtp_receiver.port}, "recipients": ["a@example.org"]},
    )
    assert response.status_code == 200, await response.get_data()
    assert len(await smtp_receiver.wait_for()) == 1
    state = await notifications_of(kernel).channels.state("smtp")
    assert state.config["port"] == 9


async def test_smtp_test_goes_to_the_callers_address_by_default(client, make_user, smtp_receiver):
    caller = await make_user("mailer", role="admin", email="mailer@example.org")
    await put(
        client,
        caller,
        "smtp",
        {"host": "127.0.0.1", "port": smtp_receiver.port, "from": "gw@example.org"},
    )
    response = await client.post(f"{CHANNELS}/smtp/test", headers=caller.headers)
    assert response.status_code == 200, await response.get_data()
    assert (await smtp_receiver.wait_for())[0].recipients == ["mailer@example.org"]


async def test_telegram_slack_and_webhook_tests_reach_the_receiver(client, admin, http_receiver):
    await put(client, admin, "telegram", {"botToken": TOKEN, "chatId": "4242"})
    await put(client, admin, "slack", {"webhookUrl": http_receiver.url("/slack/T0/B0/x")})
    await put(
        client,
        admin,
        "webhook",
        {"url": http_receiver.url("/hook"), "headers": {"Authorization": "Bearer tok-1"}},
    )
    for channel_type in ("telegram", "slack", "webhook"):
        response = await client.post(f"{CHANNELS}/{channel_type}/test", headers=admin.headers)
        assert response.status_code == 200, (channel_type, await response.get_data())
    telegram = (await http_receiver.wait_for(f"/bot{TOKEN}/sendMessage"))[0]
    assert telegram.json()["chat_id"] == "4242"
    assert "Test Notification" in telegram.json()["text"]
    slack = (await http_receiver.wait_for("/slack/T0/B0/x"))[0]
    assert "Test Notification" in slack.json()["text"]
    hook = (await http_receiver.wait_for("/hook"))[0]
    assert hook.method == "POST"
    assert hook.headers["Authorization"] == "Bearer tok-1"
    assert hook.json()["event"]["eventType"] == "test.notification"


async def test_a_failing_receiver_is_reported_with_its_error(client, admin, http_receiver):
    await put(client, admin, "webhook", {"url": http_receiver.url("/hook")})
    http_receiver.failing = True
    response = await client.post(f"{CHANNELS}/webhook/test", headers=admin.headers)
    assert response.status_code == 502
    body = await response.get_json()
    assert body["error"] == 'The webhook answered HTTP 500: {"error": "receiver is down"}'
    log = await log_entries(client, admin.headers)
    assert log["entries"][0]["status"] == "failed"
    assert log["entries"][0]["error"] == body["error"]


async def test_telegram_errors_carry_the_api_description(client, admin, http_receiver):
    await put(client, admin, "telegram", {"botToken": TOKEN, "chatId": "1"})
    http_receiver.failing = True
    response = await client.post(f"{CHANNELS}/telegram/test", headers=admin.headers)
    assert response.status_code == 502
    error = (await response.get_json())["error"]
    assert error == "Telegram answered HTTP 400: Bad Request: chat not found"
    assert TOKEN not in error


async def test_unreachable_smtp_server_is_a_502(client, admin):
    await put(client, admin, "smtp", {"host": "127.0.0.1", "port": 9, "from": "gw@example.org"})
    response = await client.post(
        f"{CHANNELS}/smtp/test", headers=admin.headers, json={"recipients": ["a@example.org"]}
    )
    assert response.status_code == 502
    assert "127.0.0.1:9" in (await response.get_json())["error"]


async def test_bad_test_requests(client, admin, make_user):
    response = await client.post(f"{CHANNELS}/webhook/test", headers=admin.headers)
    assert response.status_code == 400  # not configured: url is required
    response = await client.post(
        f"{CHANNELS}/webhook/test", headers=admin.headers, json={"url": "gopher://x"}
    )
    assert response.status_code == 400
    response = await client.post(
        f"{CHANNELS}/smtp/test",
        headers=admin.headers,
        json={"host": "127.0.0.1", "from": "a@example.org", "recipients": ["nobody"]},
    )
    assert response.status_code == 400
    response = await client.post(
        f"{CHANNELS}/webhook/test",
        headers={**admin.headers, "Content-Type": "application/json"},
        data="[1, 2",
    )
    assert response.status_code == 400
    assert (await client.post(f"{CHANNELS}/pager/test", headers=admin.headers)).status_code == 404
    assert (await client.post(f"{CHANNELS}/webhook/test")).status_code == 401
    user = await make_user("plain")
    response = await client.post(f"{CHANNELS}/webhook/test", headers=user.headers)
    assert response.status_code == 403
