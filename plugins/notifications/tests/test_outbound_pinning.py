"""The policy transport: a name is checked, resolved once and dialled at the checked address.

``Outbound.request`` sends through it, and a pack's own httpx client gets one from
``kernel.outbound.transport()`` (the OIDC pack's OAuth client does).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hostgate import PermissionDenied
from hostgate.db.models.audit import AuditEntry
from sqlmodel import select


def header(request: Any, name: str) -> str:
    return {k.lower(): v for k, v in request.headers.items()}[name.lower()]


async def test_a_name_is_dialled_at_its_checked_address_and_keeps_its_host_header(
    kernel, http_receiver
):
    url = f"http://localhost:{http_receiver.port}/pinned"
    response = await kernel.outbound.request("POST", url, json={"a": 1})
    assert response.status == 200
    [request] = http_receiver.received("/pinned")
    assert header(request, "Host") == f"localhost:{http_receiver.port}"


async def test_a_packs_own_client_obeys_the_policy_through_the_transport(kernel, http_receiver):
    transport = kernel.outbound.transport(purpose="pack client")
    async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
        allowed = await client.get(f"http://localhost:{http_receiver.port}/first")
        assert allowed.status_code == 200
        await kernel.settings.update({"network.deny": "127.0.0.0/8"})
        # the name is allowed; the address it resolves to is not
        with pytest.raises(PermissionDenied) as caught:
            await client.get(f"http://localhost:{http_receiver.port}/second")
    assert caught.value.code == "target_denied"
    assert http_receiver.received("/second") == []
    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == "network.denied")
        [entry] = (await session.exec(query)).all()
    assert entry.details["purpose"] == "pack client"
    assert entry.details["address"] == "127.0.0.1"


async def test_the_notifications_alias_is_deprecated_and_is_the_same_helper(kernel):
    """``kernel.notifications.outbound`` (the old home) still works, with a warning."""
    with pytest.warns(DeprecationWarning, match="use kernel.outbound"):
        alias = kernel.notifications.outbound
    assert alias is kernel.outbound
