"""The contract names doors and importer packs use: ``kernel.front_door.find_target``,
``targets``, ``announce``/``doors`` and ``kernel.connection_transfer``."""

from __future__ import annotations

import pytest
from hostgate import ApiError, ClientInfo, ConnectionSummary, DoorTarget, NotFound

DOCUMENT = {
    "format": "hostgate-connections",
    "version": 1,
    "groups": [],
    "connections": [
        {"id": "j", "name": "jump", "protocol": "ssh", "host": "jump.example", "port": 22},
        {
            "id": "t",
            "name": "target",
            "protocol": "ssh",
            "host": "10.0.0.9",
            "port": 2200,
            "username": "deploy",
            "tags": ["prod"],
            "jumpHostId": "j",
        },
    ],
}


async def test_targets_are_what_the_caller_sees_by_name_with_owner_and_shell(
    kernel, make_user, make_connection
):
    alice, bob = await make_user("alice"), await make_user("bob")
    box = await make_connection(alice, "ssh", "10.0.0.1", name="b-box")
    desk = await make_connection(alice, "fakedesk", "10.0.0.2", 7900, name="A-desk")
    shared = await make_connection(bob, "ssh", "10.0.0.3", name="c-shared", shared=True)
    await make_connection(bob, "ssh", "10.0.0.4", name="hidden")
    caller = await kernel.identity.caller_for_user(alice.id, None, ClientInfo())
    targets = await kernel.front_door.targets(caller)
    assert [t.name for t in targets] == ["A-desk", "b-box", "c-shared"]
    by_name = {t.name: t for t in targets}
    assert by_name["b-box"] == DoorTarget(
        id=box.id, name="b-box", protocol="ssh", host="10.0.0.1", port=22, owned=True, shell=True
    )
    assert by_name["A-desk"].shell is False and by_name["A-desk"].id == desk.id
    assert by_name["c-shared"].owned is False and by_name["c-shared"].id == shared.id

    assert (await kernel.front_door.find_target(caller, "b-box")).id == box.id
    assert (await kernel.front_door.find_target(caller, shared.id)).name == "c-shared"
    for hidden in ("hidden", "nowhere", "", "x" * 300, "bad\nname"):
        with pytest.raises(NotFound):
            await kernel.front_door.find_target(caller, hidden)


async def test_announced_doors(kernel):
    assert kernel.front_door.doors == {}
    kernel.front_door.announce("ssh", 2222)
    assert kernel.front_door.doors == {"ssh": 2222}
    kernel.front_door.doors["ssh"] = 1  # a copy: callers cannot change it
    assert kernel.front_door.doors == {"ssh": 2222}
    kernel.front_door.announce("ssh", 0)
    assert kernel.front_door.doors == {}


async def test_import_document_dry_then_real_and_visible(kernel, make_user):
    await make_user("alice")
    dry = await kernel.connection_transfer.import_document("alice", DOCUMENT, dry_run=True)
    assert [c.name for c in dry] == ["jump", "target"]
    assert await kernel.connection_transfer.visible("alice") == []  # nothing stored

    made = await kernel.connection_transfer.import_document(
        "alice", DOCUMENT, plain_secrets={"t": {"privateKey": "KEY TEXT"}}
    )
    jump, target = made
    assert target == ConnectionSummary(
        id=target.id,
        name="target",
        protocol="ssh",
        host="10.0.0.9",
        port=2200,
        username="deploy",
        tags=("prod",),
        jump_host_id=jump.id,
        private_key=True,
        tunnels=True,
    )
    assert jump.private_key is False and target.id not in {"t", "j"}
    assert sorted(await kernel.connection_transfer.visible("alice"), key=lambda c: c.name) == [
        jump,
        target,
    ]
    with pytest.raises(NotFound):
        await kernel.connection_transfer.visible("nobody")
    bad = {**DOCUMENT, "connections": [{"name": "x", "protocol": "ssh", "host": "a b"}]}
    with pytest.raises(ApiError):
        await kernel.connection_transfer.import_document("alice", bad)
    assert len(await kernel.connection_transfer.visible("alice")) == 2
