"""``GET /audit/export`` (the filtered view, streamed as JSON or CSV) and ``GET /audit/verify``
(``hostgate audit verify`` over HTTP)."""

from __future__ import annotations

import csv
import io
import json

from hostgate.api.audit import CSV_HEADER
from hostgate.db.models.audit import AuditEntry
from sqlalchemy import func
from sqlmodel import col, select, update

from tests.services.audit.test_audit import seed
from tests.services.identity.helpers import API


async def export(client, user, query: str):
    response = await client.get(f"{API}/audit/export{query}", headers=user.headers)
    body = (await response.get_data()).decode()
    return response.status_code, body, response.headers


async def test_export_streams_exactly_the_filtered_view(
    client, admin, make_user, kernel, monkeypatch
):
    # small batches, so the export walks several of them (and the boundary between them)
    original = kernel.audit_query.stream
    monkeypatch.setattr(kernel.audit_query, "stream", lambda flt, batch=3: original(flt, batch))
    other = await make_user("other")
    await seed(kernel, admin, 7, "alpha.one", note="needle")
    await seed(kernel, other, 4, "beta.two")
    await kernel.audit.record("gamma", actor=None, target='=HYPERLINK("x")', ip_address="-1")
    # entries written in the same instant: the batches continue by seq within a timestamp
    async with kernel.db.session() as session:
        stamp = (await session.exec(select(func.min(AuditEntry.timestamp)))).one()
        await session.exec(
            update(AuditEntry)
            .where(col(AuditEntry.event_type) == "alpha.one")
            .values(timestamp=stamp)
        )
        await session.commit()

    listed = await (
        await client.get(f"{API}/audit?eventType=alpha.one&limit=200", headers=admin.headers)
    ).get_json()
    status, body, headers = await export(client, admin, "?eventType=alpha.one")
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert headers["Content-Disposition"].startswith('attachment; filename="audit-log_')
    exported = json.loads(body)
    # the same entries, in the same order, as the list with the same filters
    assert exported == listed["entries"] and len(exported) == 7

    # every filter applies: user, free text, date range, several types
    status, body, _ = await export(client, admin, f"?userId={other.id}")
    assert {e["userId"] for e in json.loads(body)} == {other.id}
    assert len(json.loads((await export(client, admin, "?search=NEEDLE"))[1])) == 7
    assert json.loads((await export(client, admin, "?from=2999-01-01T00:00:00Z"))[1]) == []

    # CSV: a header, one row per entry, details as JSON, formulas neutralised
    status, body, headers = await export(client, admin, "?format=csv&eventType=gamma,beta.two")
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0] == list(CSV_HEADER)
    assert len(rows) == 1 + 5
    gamma = next(r for r in rows[1:] if r[1] == "gamma")
    assert gamma[5] == '\'=HYPERLINK("x")' and gamma[6] == "'-1"
    beta = next(r for r in rows[1:] if r[1] == "beta.two")
    assert json.loads(beta[7])["index"] in range(4)

    # a caller without audit.view_any exports their own entries only
    status, body, _ = await export(client, other, "")
    assert status == 200 and {e["userId"] for e in json.loads(body)} == {other.id}
    status, body, _ = await export(client, other, f"?userId={admin.id}")
    assert json.loads(body) == []

    # bad filters are refused before anything streams
    for bad in ("?format=xml", "?from=yesterday", "?nope=1"):
        assert (await export(client, admin, bad))[0] == 400, bad
    # anonymous: no
    assert (await client.get(f"{API}/audit/export")).status_code == 401
    # the export itself is audited, with its filters
    types = await (
        await client.get(f"{API}/audit?eventType=audit.exported", headers=admin.headers)
    ).get_json()
    assert types["pagination"]["total"] >= 5
    assert types["entries"][-1]["details"]["eventTypes"] == ["alpha.one"]


async def test_verify_reports_intact_then_the_tampered_entry(client, admin, make_user, kernel):
    for i in range(5):
        await kernel.audit.record("demo.event", actor=None, target=f"t{i}")
    response = await client.get(f"{API}/audit/verify", headers=admin.headers)
    assert response.status_code == 200
    intact = await response.get_json()
    assert intact["ok"] is True and intact["checked"] == 5 and intact["problem"] == ""
    assert intact["headSeq"] == 5 and len(intact["headHash"]) == 64

    async with kernel.db.session() as session:
        await session.exec(update(AuditEntry).where(col(AuditEntry.seq) == 3).values(target="x"))
        await session.commit()
    broken = await (await client.get(f"{API}/audit/verify", headers=admin.headers)).get_json()
    assert broken["ok"] is False and broken["seq"] == 3 and "edited" in broken["problem"]
    assert broken["entryId"]

    # each check is audited; only audit.view_any may ask; a few a minute per user
    listed = await (
        await client.get(f"{API}/audit?eventType=audit.verified", headers=admin.headers)
    ).get_json()
    assert [e["details"]["ok"] for e in listed["entries"]] == [False, True]
    plain = await make_user("plain")
    assert (await client.get(f"{API}/audit/verify", headers=plain.headers)).status_code == 403
    statuses = [
        (await client.get(f"{API}/audit/verify", headers=admin.headers)).status_code
        for _ in range(6)
    ]
    assert statuses[:4] == [200] * 4 and statuses[-1] == 429
