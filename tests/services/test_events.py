"""The live nudges' routing (``services/events.py``): to the named users and the holders of
the permission, once per topic however many changes came, never to anyone else. The
socket that carries them is tested with access requests
(``tests/services/connections/test_access_request_events.py``)."""

from __future__ import annotations

import asyncio

from hostgate.cluster.bus import LocalBus
from hostgate.principals import Caller
from hostgate.services.events import ACCESS_REQUESTS, UserEvents


def caller(user_id: str, *permissions: str) -> Caller:
    return Caller(
        user_id=user_id, username=user_id, display_name=user_id, role_id="r", role_name="r",
        permissions=frozenset(permissions), login_session_id=None,
    )  # fmt: skip


async def test_a_nudge_goes_only_to_its_users_and_the_permission_holders():
    events = UserEvents(LocalBus())
    bob = events.listen(caller("bob"))
    approver = events.listen(caller("ann", "access.approve"))
    carol = events.listen(caller("carol", "connections.use_ssh"))
    gone = events.listen(caller("bob"))
    events.stop(gone)
    events.notify(ACCESS_REQUESTS, users=["bob"], permission="access.approve")
    events.notify(ACCESS_REQUESTS, users=["bob"], permission="access.approve")
    assert await bob.next() == [ACCESS_REQUESTS]  # two changes, one nudge
    assert await approver.next() == [ACCESS_REQUESTS]
    assert not carol.changed and not carol.ready.is_set()
    assert not gone.changed
    await asyncio.sleep(0)  # the (local) bus publish runs
