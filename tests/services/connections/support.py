"""Helpers for the connections tests."""

from __future__ import annotations

from typing import Any

PASSWORD = "pw-s3cr3t-1"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nKEY-s3cr3t-body\n-----END OPENSSH PRIVATE KEY-----\n"
)
TOKEN = "tok-s3cr3t-9"


async def create(client: Any, user: Any, expect: int = 201, **body: Any) -> dict[str, Any]:
    """POST /connections; assert the status; the JSON body."""
    payload = {"name": "box", "protocol": "fakedesk", "host": "127.0.0.1", **body}
    response = await client.post("/api/v1/connections", json=payload, headers=user.headers)
    data = await response.get_json()
    assert response.status_code == expect, data
    return data  # type: ignore[no-any-return]


async def get_json(client: Any, path: str, user: Any, expect: int = 200) -> Any:
    """GET under /api/v1; assert the status; the JSON body."""
    response = await client.get(f"/api/v1{path}", headers=user.headers)
    data = await response.get_json()
    assert response.status_code == expect, data
    return data


async def send(
    client: Any, method: str, path: str, user: Any, body: Any = None, expect: int = 200
) -> Any:
    """Any method under /api/v1 with a JSON body; assert the status; the JSON body."""
    call = getattr(client, method.lower())
    kwargs: dict[str, Any] = {"headers": user.headers}
    if body is not None:
        kwargs["json"] = body
    response = await call(f"/api/v1{path}", **kwargs)
    data = await response.get_json()
    assert response.status_code == expect, data
    return data


async def audit_entries(kernel: Any, event_type: str) -> list[Any]:
    """Stored audit entries of one type, oldest first."""
    from hostgate.db.models.audit import AuditEntry
    from sqlmodel import select

    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == event_type)
        rows = (await session.exec(query)).all()
    return sorted(rows, key=lambda r: r.seq)
