"""/audit: filters, pagination, view_any narrowing, event types, users, chain, subscribers."""

from datetime import timedelta

from hostgate import hookimpl
from hostgate.app import create_app
from hostgate.db.models.audit import AuditEntry
from hostgate.timefmt import iso, utcnow
from sqlmodel import select

from tests.services.identity.helpers import API, ISO


async def seed(kernel, user, count, event_type="demo.event", **kwargs):
    for i in range(count):
        await kernel.audit.record(
            event_type,
            user_id=user.id,
            username=user.username,
            display_name=user.username.title(),
            target=f"target-{i}",
            details={"index": i, **kwargs},
            ip_address="192.0.2.7",
        )


async def get_audit(client, user, query=""):
    response = await client.get(f"{API}/audit{query}", headers=user.headers)
    assert response.status_code == 200, await response.get_json()
    return await response.get_json()


async def test_entry_shape_and_pagination_defaults(client, admin, kernel):
    await seed(kernel, admin, 30)
    body = await get_audit(client, admin)
    assert body["pagination"]["page"] == 1 and body["pagination"]["limit"] == 25
    assert body["pagination"]["total"] == 30
    assert len(body["entries"]) == 25
    entry = body["entries"][0]
    assert set(entry) == {
        "id",
        "userId",
        "username",
        "displayName",
        "eventType",
        "target",
        "details",
        "ipAddress",
        "timestamp",
    }
    assert ISO.match(entry["timestamp"])
    assert entry["target"] == "target-29"  # newest first
    assert entry["ipAddress"] == "192.0.2.7" and entry["details"] == {"index": 29}
    second = await get_audit(client, admin, "?page=2&limit=10")
    assert [e["target"] for e in second["entries"]] == [f"target-{i}" for i in range(19, 9, -1)]
    assert (await get_audit(client, admin, "?limit=1000"))["pagination"]["limit"] == 200
    for bad in ("?page=0", "?limit=abc", "?from=yesterday"):
        response = await client.get(f"{API}/audit{bad}", headers=admin.headers)
        assert response.status_code == 400, bad


async def test_filters(client, admin, make_user, kernel):
    other = await make_user("other")
    await seed(kernel, admin, 3, "alpha.one", note="needle_in_details")
    await seed(kernel, other, 2, "beta.two")
    total = lambda body: body["pagination"]["total"]  # noqa: E731

    assert total(await get_audit(client, admin, "?eventType=alpha.one")) == 3
    assert total(await get_audit(client, admin, "?eventType=alpha.one,beta.two")) == 5
    assert total(await get_audit(client, admin, f"?userId={other.id}")) == 2
    assert total(await get_audit(client, admin, "?search=NEEDLE_in")) == 3  # details, any case
    assert total(await get_audit(client, admin, "?search=beta")) == 2  # event type
    assert total(await get_audit(client, admin, "?search=target-1")) == 2  # target
    assert total(await get_audit(client, admin, "?search=other")) == 2  # username
    assert total(await get_audit(client, admin, "?search=100%25")) == 0  # % is literal
    future = iso(utcnow() + timedelta(hours=1))
    past = iso(utcnow() - timedelta(hours=1))
    assert total(await get_audit(client, admin, f"?from={future}")) == 0
    assert total(await get_audit(client, admin, f"?from={past}&eventType=beta.two")) == 2
    assert total(await get_audit(client, admin, f"?to={past}")) == 0


async def test_without_view_any_callers_see_only_their_own(client, admin, make_user, kernel):
    user = await make_user("plain")
    await seed(kernel, admin, 3, "admin.thing")
    await seed(kernel, user, 2, "user.thing")
    own = await get_audit(client, user)
    assert own["pagination"]["total"] == 2
    assert {e["userId"] for e in own["entries"]} == {user.id}
    asking_for_admin = await get_audit(client, user, f"?userId={admin.id}")
    assert asking_for_admin["pagination"]["total"] == 0
    types = await (await client.get(f"{API}/audit/event-types", headers=user.headers)).get_json()
    assert types == {"eventTypes": ["user.thing"]}
    forbidden = await client.get(f"{API}/audit/users", headers=user.headers)
    assert forbidden.status_code == 403

    everything = await get_audit(client, admin)
    assert everything["pagination"]["total"] == 5
    types = await (await client.get(f"{API}/audit/event-types", headers=admin.headers)).get_json()
    assert types == {"eventTypes": ["admin.thing", "user.thing"]}
    users = await (await client.get(f"{API}/audit/users", headers=admin.headers)).get_json()
    assert users == {
        "users": [
            {"id": admin.id, "username": "admin", "displayName": "Admin"},
            {"id": user.id, "username": "plain", "displayName": "Plain"},
        ]
    }


async def test_secret_looking_details_are_scrubbed(kernel, admin):
    event = await kernel.audit.record(
        "demo.secret", actor=None, details={"password": "hunter22", "nested": {"apiToken": "t"}}
    )
    assert event.details == {"password": "[redacted]", "nested": {"apiToken": "[redacted]"}}


async def test_chain_is_keyed_and_verifies(kernel, admin):
    await seed(kernel, admin, 5)
    result = await kernel.audit.verify_chain()
    assert result.ok and result.checked == 5
    async with kernel.db.session() as session:
        rows = (await session.exec(select(AuditEntry).order_by(AuditEntry.seq))).all()
    assert rows[0].prev_hash == ""
    assert all(b.prev_hash == a.hash for a, b in zip(rows, rows[1:], strict=False))


async def test_a_failing_subscriber_never_fails_the_request(config, make_user):
    seen = []

    class Subscribers:
        @hookimpl
        def event(self, event, kernel):
            seen.append(event.event_type)
            raise RuntimeError("notifier down")

    app = create_app(config, plugins=[Subscribers()])
    async with app.test_app() as test_app:
        client = test_app.test_client()
        response = await client.post(
            f"{API}/auth/setup", json={"username": "root", "password": "long-enough"}
        )
        assert response.status_code == 200
    assert seen == ["user.setup", "auth.login"]
