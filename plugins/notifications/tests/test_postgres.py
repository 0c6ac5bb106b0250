"""The notification queries (rules, log, retries, digests, retention) on PostgreSQL too."""

from datetime import timedelta

import pytest
from hostgate.config import Config
from hostgate.timefmt import iso, utcnow
from hostgate_notifications.models import NotificationLogEntry

from testsupport.receivers import eventually, log_entries, settled_entries


@pytest.fixture
def config(config: Config, postgres_url: str) -> Config:
    """The package's config (local receivers), on the test PostgreSQL database, one retry."""
    return config.with_overrides(
        database_url=postgres_url,
        plugin_options={**config.plugin_options, "notifications": {"retry_delays": [0.2]}},
    )


async def test_notifications_on_postgresql(client, admin, kernel, notifications, http_receiver):
    assert kernel.db.dialect == "postgresql"
    response = await client.put(
        "/api/v1/notifications/channels/webhook",
        headers=admin.headers,
        json={
            "enabled": True,
            "config": {"url": http_receiver.url("/hook"), "headers": {"Authorization": "x-1"}},
        },
    )
    assert response.status_code == 200
    for cadence in ("instant", "hourly"):
        response = await client.post(
            "/api/v1/notifications/rules",
            headers=admin.headers,
            json={
                "name": cadence,
                "events": ["user.created"],
                "cadence": cadence,
                "conditions": [
                    {"field": "ipAddress", "operator": "not_in", "value": ["10.0.0.0/8"]}
                ],
                "actions": [{"channel": "webhook"}],
            },
        )
        assert response.status_code == 201
    http_receiver.fail_next = 1
    await kernel.audit.record("user.created", target="pg-user", ip_address="203.0.113.1")
    entries = await settled_entries(client, admin.headers, count=2)
    assert [e["status"] for e in entries] == ["sent", "failed"]
    assert entries[0]["retryOf"] == entries[1]["id"]

    assert await notifications.flush_digests(now=utcnow() + timedelta(hours=1)) == 1
    await settled_entries(client, admin.headers, count=3)
    digest = [r.json() for r in http_receiver.received("/hook") if "digest" in r.json()]
    assert digest[0]["digest"]["count"] == 1

    rules = await (
        await client.get("/api/v1/notifications/rules", headers=admin.headers)
    ).get_json()
    assert all(r["lastTriggeredAt"] for r in rules["rules"])
    assert (await log_entries(client, admin.headers, status="failed"))["total"] == 1
    assert (await log_entries(client, admin.headers, rule_id=rules["rules"][1]["id"]))["total"] == 1

    async with kernel.db.session() as session:
        session.add(
            NotificationLogEntry(
                channel="webhook", status="sent", sent_at=utcnow() - timedelta(days=400)
            )
        )
        await session.commit()
    response = await client.put(
        "/api/v1/notifications/settings", headers=admin.headers, json={"retentionDays": 365}
    )
    assert response.status_code == 200
    assert (await log_entries(client, admin.headers))["total"] == 3
    before = iso(utcnow() + timedelta(seconds=5))
    response = await client.delete(
        f"/api/v1/notifications/log?status=sent&before={before}", headers=admin.headers
    )
    assert await response.get_json() == {"ok": True, "deleted": 2}
    await eventually(notifications.idle)
