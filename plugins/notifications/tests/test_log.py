"""The delivery log: filters, paging, deletes, retention setting and the purge job."""

import json
from datetime import timedelta

from hostgate.app import create_app
from hostgate.db.models.audit import AuditEntry
from hostgate.timefmt import iso, utcnow
from hostgate_notifications.models import NotificationLogEntry
from sqlmodel import select

from testsupport.receivers import eventually, log_entries

LOG = "/api/v1/notifications/log"
SETTINGS = "/api/v1/notifications/settings"


async def seed(kernel, specs):
    """Insert log entries: (status, rule_id, age in days)."""
    now = utcnow()
    rows = []
    async with kernel.db.session() as session:
        for index, (status, rule_id, days) in enumerate(specs):
            row = NotificationLogEntry(
                rule_id=rule_id,
                rule_name=f"rule {rule_id}",
                channel="webhook",
                status=status,
                error="boom" if status == "failed" else None,
                payload={"subject": "s", "text": "t", "event": {}},
                sent_at=now - timedelta(days=days, seconds=index),
                created_at=now - timedelta(days=days, seconds=index),
            )
            session.add(row)
            rows.append(row)
        await session.commit()
    return rows


async def test_log_shape_filters_and_paging(client, admin, kernel):
    await seed(
        kernel,
        [("sent", "r1", 0), ("failed", "r1", 1), ("sent", "r2", 2), ("failed", "r2", 3)]
        + [("sent", "r3", 4)] * 3,
    )
    body = await log_entries(client, admin.headers)
    assert body["total"] == 7 and body["page"] == 1 and body["limit"] == 25
    first = body["entries"][0]
    assert {"id", "ruleId", "ruleName", "channel", "status", "sentAt", "error"} <= set(first)
    assert first["ruleId"] == "r1" and first["status"] == "sent" and first["error"] is None
    assert first["sentAt"].endswith("Z")
    times = [e["sentAt"] for e in body["entries"]]
    assert times == sorted(times, reverse=True)

    failed = await log_entries(client, admin.headers, status="failed")
    assert failed["total"] == 2 and {e["error"] for e in failed["entries"]} == {"boom"}
    r2 = await log_entries(client, admin.headers, rule_id="r2")
    assert {e["ruleId"] for e in r2["entries"]} == {"r2"} and r2["total"] == 2
    both = await log_entries(client, admin.headers, rule_id="r2", status="sent")
    assert both["total"] == 1

    page2 = await log_entries(client, admin.headers, page=2, limit=3)
    assert page2["page"] == 2 and page2["limit"] == 3 and page2["total"] == 7
    assert [e["id"] for e in page2["entries"]] == [e["id"] for e in body["entries"][3:6]]
    assert (await log_entries(client, admin.headers, limit=500))["limit"] == 200

    for query in ("status=delivered", "page=0", "limit=-1", "page=x"):
        response = await client.get(f"{LOG}?{query}", headers=admin.headers)
        assert response.status_code == 400, query


async def test_delete_one_entry(client, admin, kernel):
    first, second = await seed(kernel, [("sent", "r1", 0), ("failed", "r1", 0)])
    response = await client.delete(f"{LOG}/{first.id}", headers=admin.headers)
    assert response.status_code == 200
    assert await response.get_json() == {"ok": True}
    body = await log_entries(client, admin.headers)
    assert [e["id"] for e in body["entries"]] == [second.id]
    response = await client.delete(f"{LOG}/{first.id}", headers=admin.headers)
    assert response.status_code == 404


async def test_delete_by_filter_reports_the_count(client, admin, kernel):
    await seed(
        kernel,
        [("sent", "r1", 0), ("failed", "r1", 0), ("failed", "r2", 10), ("sent", "r2", 20)],
    )
    response = await client.delete(f"{LOG}?status=failed&rule_id=r1", headers=admin.headers)
    assert await response.get_json() == {"ok": True, "deleted": 1}
    before = iso(utcnow() - timedelta(days=5)).replace("+", "%2B")
    response = await client.delete(f"{LOG}?before={before}", headers=admin.headers)
    assert await response.get_json() == {"ok": True, "deleted": 2}
    assert (await log_entries(client, admin.headers))["total"] == 1
    response = await client.delete(f"{LOG}?before=yesterday", headers=admin.headers)
    assert response.status_code == 400
    response = await client.delete(f"{LOG}?status=bogus", headers=admin.headers)
    assert response.status_code == 400
    assert (await log_entries(client, admin.headers))["total"] == 1
    response = await client.delete(LOG, headers=admin.headers)
    assert await response.get_json() == {"ok": True, "deleted": 1}
    async with kernel.db.session() as session:
        rows = (
            await session.exec(
                select(AuditEntry).where(AuditEntry.event_type == "notifications.log_cleared")
            )
        ).all()
    assert [r.details["deleted"] for r in rows] == [1, 2, 1]


async def test_retention_setting_get_put_and_validation(client, admin, kernel):
    response = await client.get(SETTINGS, headers=admin.headers)
    assert await response.get_json() == {"retentionDays": 90}
    response = await client.put(SETTINGS, headers=admin.headers, json={"retentionDays": 30})
    assert response.status_code == 200
    assert await response.get_json() == {"ok": True, "retentionDays": 30}
    assert await (await client.get(SETTINGS, headers=admin.headers)).get_json() == {
        "retentionDays": 30
    }
    assert kernel.settings.get("notifications.log_retention_days") == 30
    for body in (
        {"retentionDays": 0},
        {"retentionDays": -3},
        {"retentionDays": 1.5},
        {"retentionDays": "7"},
        {"retentionDays": True},
        {},
        {"retentionDays": 7, "other": 1},
    ):
        response = await client.put(SETTINGS, headers=admin.headers, json=body)
        assert response.status_code == 400, body
    assert (await (await client.get(SETTINGS, headers=admin.headers)).get_json())[
        "retentionDays"
    ] == 30


async def test_shortening_the_retention_purges_old_entries(client, admin, kernel):
    await seed(
        kernel, [("sent", "r", 0), ("failed", "r", 5), ("sent", "r", 40), ("sent", "r", 100)]
    )
    response = await client.put(SETTINGS, headers=admin.headers, json={"retentionDays": 30})
    assert response.status_code == 200
    body = await log_entries(client, admin.headers)
    assert body["total"] == 2
    response = await client.put(SETTINGS, headers=admin.headers, json={"retentionDays": 1})
    assert (await log_entries(client, admin.headers))["total"] == 1
    async with kernel.db.session() as session:
        purged = (
            await session.exec(
                select(AuditEntry).where(AuditEntry.event_type == "notifications.log_purged")
            )
        ).all()
    assert [p.details["deleted"] for p in purged] == [2, 1]


async def test_the_periodic_job_enforces_the_retention(config, plugins):
    # A purge interval of a fraction of a second: the job runs on its own.
    options = dict(config.plugin_options)
    options["notifications"] = {
        "first_housekeeping_delay": 0,
        "housekeeping_seconds": 0.05,
        "purge_interval_seconds": 0.05,
    }
    app = create_app(config.with_overrides(plugin_options=options), plugins=plugins)
    async with app.test_app():
        kernel = app.extensions["hostgate"]
        await kernel.settings.update({"notifications.log_retention_days": 7})
        old, fresh = await seed(kernel, [("sent", "r", 8), ("failed", "r", 1)])

        async def purged():
            async with kernel.db.session() as session:
                return await session.get(NotificationLogEntry, old.id) is None

        await eventually(purged)
        async with kernel.db.session() as session:
            assert await session.get(NotificationLogEntry, fresh.id) is not None


async def test_log_and_settings_routes_need_the_permission(client, make_user):
    user = await make_user("plain")
    calls = [
        ("get", LOG, {}),
        ("delete", LOG, {}),
        ("delete", f"{LOG}/x", {}),
        ("post", f"{LOG}/x/retry", {}),
        ("get", SETTINGS, {}),
        ("put", SETTINGS, {"json": {"retentionDays": 5}}),
    ]
    for method, path, kwargs in calls:
        response = await getattr(client, method)(path, **kwargs)
        assert response.status_code == 401, (method, path)
        response = await getattr(client, method)(path, headers=user.headers, **kwargs)
        assert response.status_code == 403, (method, path)


async def test_no_secret_reaches_a_response_or_the_audit_log(client, admin, kernel, http_receiver):
    token = "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    secrets = [token, "smtp-pass-9876", "hook-header-secret", "hooks-slack-secret-path"]
    puts = {
        "smtp": {
            "host": "127.0.0.1",
            "port": 9,
            "password": "smtp-pass-9876",
            "username": "u",
            "from": "a@example.org",
        },
        "telegram": {"botToken": token, "chatId": "1"},
        "slack": {"webhookUrl": http_receiver.url("/slack/hooks-slack-secret-path")},
        "webhook": {
            "url": http_receiver.url("/hook"),
            "headers": {"Authorization": "hook-header-secret"},
        },
    }
    seen = []
    for channel_type, config in puts.items():
        response = await client.put(
            f"/api/v1/notifications/channels/{channel_type}",
            headers=admin.headers,
            json={"enabled": True, "config": config},
        )
        seen.append(await response.get_data(as_text=True))
        response = await client.post(
            f"/api/v1/notifications/channels/{channel_type}/test",
            headers=admin.headers,
            json={"recipients": ["a@example.org"]} if channel_type == "smtp" else {},
        )
        seen.append(await response.get_data(as_text=True))
    http_receiver.failing = True
    for channel_type in ("telegram", "slack", "webhook"):
        response = await client.post(
            f"/api/v1/notifications/channels/{channel_type}/test", headers=admin.headers
        )
        assert response.status_code == 502
        seen.append(await response.get_data(as_text=True))
    for path in ("/api/v1/notifications/channels", LOG + "?limit=200", "/api/v1/audit?limit=200"):
        response = await client.get(path, headers=admin.headers)
        assert response.status_code == 200, path
        seen.append(await response.get_data(as_text=True))
    async with kernel.db.session() as session:
        audit = (await session.exec(select(AuditEntry))).all()
    seen.append(json.dumps([[a.event_type, a.target, a.details] for a in audit]))
    text = "\n".join(seen)
    for secret in secrets:
        assert secret not in text, secret
