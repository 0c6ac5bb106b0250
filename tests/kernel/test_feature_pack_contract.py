"""What a feature pack (notifications) uses of the contract: the directory, one node's
cluster, the settings written in a batch, the channel registry and the database_replaced hook."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest
from hostgate import ChannelSpec, InvalidInput, RoleSummary, hookimpl
from hostgate.app import create_app, kernel_of
from pydantic import BaseModel

RETENTION = "notifications.log_retention_days"


class EchoConfig(BaseModel):
    target: str = ""


async def _send(kernel: Any, config: Any, message: Any) -> None:
    return None


def _pack() -> types.ModuleType:
    """A pack with a channel and a database_replaced hook that counts its calls."""
    pack = types.ModuleType("featurepack")
    pack.replaced = 0  # type: ignore[attr-defined]

    def register_channels() -> list[ChannelSpec]:
        return [ChannelSpec(type="echo", config_model=EchoConfig, send=_send)]

    async def database_replaced(kernel: Any) -> None:
        pack.replaced += 1  # type: ignore[attr-defined]

    pack.register_channels = hookimpl(register_channels)  # type: ignore[attr-defined]
    pack.database_replaced = hookimpl(database_replaced)  # type: ignore[attr-defined]
    return pack


@pytest.fixture
def pack() -> types.ModuleType:
    return _pack()


@pytest.fixture
def plugins(pack: types.ModuleType) -> list[object]:
    return [pack]


async def test_the_directory_lists_users_by_name_and_roles_by_name(kernel, make_user):
    await make_user("zoe", role="user")
    await make_user("adam", role="admin")
    users = await kernel.directory.users()
    names = [user.username for user in users]
    assert names == sorted(names, key=str.lower) and {"zoe", "adam"} <= set(names)
    roles = await kernel.directory.roles()
    assert all(isinstance(role, RoleSummary) for role in roles)
    assert [role.name for role in roles] == sorted(role.name for role in roles)
    by_name = {role.name: role.id for role in roles}
    adam = next(user for user in users if user.username == "adam")
    assert adam.role_id == by_name["admin"]


async def test_settings_change_in_a_batch_is_served_after_the_commit(kernel):
    before = kernel.settings.get(RETENTION)
    async with kernel.audit.atomic() as batch:
        shown = await kernel.settings.change_in(batch, {RETENTION: before + 5})
        batch.record("test.retention", target="x")
        assert kernel.settings.get(RETENTION) == before  # not before the commit
    assert shown == ({RETENTION: before}, {RETENTION: before + 5})
    assert kernel.settings.get(RETENTION) == before + 5


async def test_settings_change_in_refuses_a_bad_value_and_changes_nothing(kernel):
    before = kernel.settings.get(RETENTION)
    with pytest.raises(InvalidInput):
        async with kernel.audit.atomic() as batch:
            await kernel.settings.change_in(batch, {RETENTION: "many"})
    with pytest.raises(InvalidInput):
        async with kernel.audit.atomic() as batch:
            await kernel.settings.change_in(batch, {"no.such.key": 1})
    assert kernel.settings.get(RETENTION) == before


async def test_one_node_holds_the_lease_and_claims_are_exclusive(kernel):
    cluster = kernel.cluster
    assert cluster.several_nodes is False
    assert cluster.lease.held()
    assert await cluster.claims.claim("featurepack:one", 30.0)
    assert not await cluster.claims.claim("featurepack:one", 30.0)
    await cluster.claims.release("featurepack:one")
    assert await cluster.claims.claim("featurepack:one", 30.0)


async def test_one_node_publishes_to_nobody(kernel):
    heard: list[dict[str, Any]] = []

    async def handler(message: dict[str, Any]) -> None:
        heard.append(message)

    kernel.cluster.bus.subscribe("featurepack.topic", handler)
    await kernel.cluster.bus.publish("featurepack.topic", {"n": 1})  # no other node: no error
    await asyncio.sleep(0)
    assert heard == []


async def test_registered_channels_are_in_kernel_channels(kernel):
    assert kernel.channels["echo"].config_model is EchoConfig


async def test_database_replaced_is_called_after_a_reload(kernel, pack):
    assert pack.replaced == 0
    await kernel.reload_state()
    assert pack.replaced == 1


async def test_a_failing_database_replaced_hook_fails_the_reload(config):
    def broken(kernel: Any) -> None:
        raise RuntimeError("cannot re-read")

    pack = types.ModuleType("brokenpack")
    pack.database_replaced = hookimpl(broken)  # type: ignore[attr-defined]
    app = create_app(config, plugins=[pack])
    async with app.test_app():
        with pytest.raises(RuntimeError, match="cannot re-read"):
            await kernel_of(app).reload_state()
