"""Joining a running terminal (``/ws/sessions/<id>/watch?mode=...``): observers, participants,
invitations, removal, the audit trail and whose keys each command came from (real local shell)."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

from hostgate import parse_iso, utcnow
from hostgate.db.models.invitations import SessionInvitation
from hostgate.services.front_door import joined_line
from hostgate.services.sessions.invitations import SessionInvitations

from tests.services.sessions.helpers import Screen, ticket_for
from tests.services.sessions.test_live_view import (
    audit_entries,
    open_terminal,
    running_session,
    until_message,
)


def join_path(session_id: str, ticket: str, mode: str) -> str:
    return f"/ws/sessions/{session_id}/watch?{urlencode({'ticket': ticket, 'mode': mode})}"


async def entries_until(client: Any, admin: Any, event_type: str, count: int) -> list[Any]:
    """Audit entries of a type once there are ``count`` (a leave is written in a task)."""
    for _ in range(1200):  # 60 s: a hang guard
        found = await audit_entries(client, admin, event_type)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} {event_type} entries expected, got {found}")


async def test_a_participant_types_an_observer_cannot_and_commands_say_whose_keys(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    bob = await make_user("bob", permissions=["sessions.join"])
    carol = await make_user("carol", permissions=["sessions.join"])
    async with open_terminal(client, kernel, user, connection.id) as socket:
        owner = Screen(socket)
        await owner.until("$ ")
        await owner.step("echo solo-$((1+1))", "solo-2")
        session = running_session(kernel)
        assert session.shared_input is False

        async with (
            client.websocket(join_path(session.id, ticket_for(kernel, bob), "participant")) as p,
            client.websocket(join_path(session.id, ticket_for(kernel, carol), "observer")) as o,
        ):
            participant, observer = Screen(p), Screen(o)
            [hello] = await until_message(participant, "watch")
            assert hello["mode"] == "participant" and hello["username"] == "alice"
            assert (await until_message(observer, "watch"))[0]["mode"] == "observer"

            # the owner's strip: who is there and how, and who just joined
            told = await until_message(owner, "watchers", 2)
            modes = {w["username"]: w["mode"] for w in told[-1]["watchers"]}
            assert modes == {"bob": "participant", "carol": "observer"}
            assert {t["change"] for t in told} == {
                "Bob joined as participant",
                "Carol joined as observer",
            }
            assert "participants may type" in told[-1]["message"]
            # the viewers' periodic access check keeps joiners: they need no sessions.view_any
            assert await kernel.live_view.recheck() == 0

            # the participant's keys reach the shell; everyone sees the output
            await participant.send("echo by-bob-$((2+3))\r")
            await owner.until("by-bob-5")
            await observer.until("by-bob-5")
            await owner.prompt()
            # an observer's keys go nowhere
            await o.send(json.dumps({"type": "data", "data": "echo by-carol-$((3*3))\r"}))
            await o.send(b"echo raw-carol-$((4*4))\r")
            await owner.step("echo by-alice-$((5+5))", "by-alice-10")
            assert b"by-carol-9" not in owner.output and b"raw-carol-16" not in owner.output

        # both left: the owner is told, and keys are no longer attributed
        left = await until_message(owner, "watchers", 4)
        assert left[-1]["watchers"] == []
        assert session.shared_input is False
        await owner.send("exit\r")
        assert await owner.until_closed() == 1000

    joined = await audit_entries(client, admin, "session.joined")
    assert sorted((e["username"], e["details"]["mode"]) for e in joined) == [
        ("bob", "participant"),
        ("carol", "observer"),
    ]
    assert all(e["details"]["ownerUsername"] == "alice" for e in joined)
    left_entries = await entries_until(client, admin, "session.left", 2)
    assert {e["username"] for e in left_entries} == {"bob", "carol"}
    assert all(e["details"]["removedBy"] == "" for e in left_entries)
    # a join is not a live view
    assert await audit_entries(client, admin, "session.live_view_started") == []

    response = await client.get(f"/api/v1/sessions/{session.id}/commands", headers=admin.headers)
    commands = {c["command"]: c["typedBy"] for c in (await response.get_json())["commands"]}
    assert commands["echo solo-$((1+1))"] == []  # nobody had joined: the owner's
    assert commands["echo by-bob-$((2+3))"] == ["bob"]
    assert commands["echo by-alice-$((5+5))"] == ["alice"]
    assert not any("carol" in c for c in commands)
    # the session.command audit entry (what notification rules see) says it too
    logged = await audit_entries(client, admin, "session.command")
    by_command = {e["details"]["command"]: e["details"].get("typedBy") for e in logged}
    assert by_command["echo by-bob-$((2+3))"] == ["bob"]
    assert by_command["echo solo-$((1+1))"] is None

    # the recording stays asciicast v2, with a marker where the typist changes
    cast = await client.get(f"/api/v1/sessions/{session.id}/recording", headers=admin.headers)
    lines = (await cast.get_data()).decode().splitlines()
    assert json.loads(lines[0])["version"] == 2
    events = [json.loads(line) for line in lines[1:]]
    assert all(len(e) == 3 and e[1] in ("o", "r", "m") for e in events)
    assert [e[2] for e in events if e[1] == "m"] == ["keys: bob", "keys: alice"]


async def test_joining_needs_the_permission_or_an_invitation_and_the_owner_removes(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    dave = await make_user("dave")  # the built-in user role: no sessions.join
    async with open_terminal(client, kernel, user, connection.id) as socket:
        owner = Screen(socket)
        await owner.until("$ ")
        session = running_session(kernel)
        listed = await client.get("/api/v1/sessions/joinable", headers=dave.headers)
        assert (await listed.get_json())["sessions"] == []

        refusals = [
            (join_path(session.id, ticket_for(kernel, dave), "participant"), "sessions.join"),
            (join_path(session.id, ticket_for(kernel, user), "observer"), "your own session"),
            (join_path(session.id, ticket_for(kernel, admin), "driver"), "mode must be"),
        ]
        for path, words in refusals:
            async with client.websocket(path) as refused:
                screen = Screen(refused)
                assert await screen.until_closed() == 4003, path
                assert words in screen.messages[-1]["message"], screen.messages

        # only the owner invites; bad input is a 4xx that changes nothing
        url = f"/api/v1/sessions/active/{session.id}/invitations"
        invite = {"username": "dave", "mode": "observer"}
        bad = [
            (dave.headers, invite, 404),
            (user.headers, {"username": "nobody", "mode": "observer"}, 404),
            (user.headers, {"username": "dave", "mode": "driver"}, 400),
            (user.headers, {"username": "alice", "mode": "observer"}, 400),
        ]
        for headers, body, status in bad:
            response = await client.post(url, json=body, headers=headers)
            assert response.status_code == status, (body, await response.get_json())
        assert await audit_entries(client, admin, "session.invited") == []
        assert (await client.post(url, json=invite, headers=user.headers)).status_code == 200

        listed = await client.get("/api/v1/sessions/joinable", headers=dave.headers)
        [entry] = (await listed.get_json())["sessions"]
        assert entry["id"] == session.id and entry["username"] == "alice"
        assert entry["modes"] == ["observer"] and entry["invited"] is True

        # invited as an observer: not as a participant
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, dave), "participant")
        ) as refused:
            screen = Screen(refused)
            assert await screen.until_closed() == 4003
            assert "to take part" in screen.messages[-1]["message"]

        async with client.websocket(
            join_path(session.id, ticket_for(kernel, dave), "observer")
        ) as joined:
            observer = Screen(joined)
            await until_message(observer, "watch")
            await until_message(owner, "watchers")
            assert await kernel.live_view.recheck() == 0  # the invitation stands
            # only the owner removes
            remove = f"/api/v1/sessions/active/{session.id}/participants/{dave.id}"
            assert (await client.delete(remove, headers=dave.headers)).status_code == 404
            assert (await client.delete(remove, headers=user.headers)).status_code == 200
            assert await observer.until_closed() == 4003
            assert observer.messages[-1]["reason"] == "terminated"
            assert "Removed from the session by" in observer.messages[-1]["message"]
        told = await until_message(owner, "watchers", 2)
        assert told[-1]["change"] == "Dave was removed by alice"
        # the invitation went with the removal
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, dave), "observer")
        ) as refused:
            assert await Screen(refused).until_closed() == 4003
        assert (await client.delete(remove, headers=user.headers)).status_code == 404
        await owner.run("echo went-on-$((1+2))", "went-on-3")

    [invited] = await audit_entries(client, admin, "session.invited")
    assert invited["details"]["username"] == "dave" and invited["details"]["mode"] == "observer"
    [removed] = await audit_entries(client, admin, "session.participant_removed")
    assert removed["username"] == "alice" and removed["details"]["username"] == "dave"
    [left] = await entries_until(client, admin, "session.left", 1)
    assert left["details"]["removedBy"] == "alice"


async def next_event(socket: Any) -> dict[str, Any]:
    """The next ``/ws/events`` frame (10 s: a hang guard)."""
    return json.loads(await asyncio.wait_for(socket.receive(), 10))  # type: ignore[no-any-return]


async def invitations_of(client: Any, user: Any) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/sessions/invitations", headers=user.headers)
    assert response.status_code == 200
    return list((await response.get_json())["invitations"])


async def test_an_invitation_is_kept_used_once_expires_and_the_owner_revokes_it(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    dave = await make_user("dave")  # no sessions.join: only an invitation lets him in
    erin = await make_user("erin")
    nudge = {"type": "changed", "topic": "session-invitations"}
    async with open_terminal(client, kernel, user, connection.id) as socket:
        owner = Screen(socket)
        await owner.until("$ ")
        session = running_session(kernel)
        url = f"/api/v1/sessions/active/{session.id}/invitations"
        async with client.websocket(f"/ws/events?ticket={ticket_for(kernel, dave)}") as events:
            assert await next_event(events) == {"type": "ready"}
            for minutes in (0, 1441, "soon"):
                body = {"username": "dave", "mode": "observer", "minutes": minutes}
                response = await client.post(url, json=body, headers=user.headers)
                assert response.status_code == 400, minutes
            assert await invitations_of(client, dave) == []
            body = {"username": "dave", "mode": "participant", "minutes": 5}
            made = await client.post(url, json=body, headers=user.headers)
            assert made.status_code == 200
            invitation = (await made.get_json())["invitation"]
            # the invited user's open app hears of it at once
            assert await next_event(events) == nudge
        lasts = parse_iso(invitation["expiresAt"]) - parse_iso(invitation["createdAt"])
        assert lasts.total_seconds() == 300
        assert (invitation["ownerUsername"], invitation["username"]) == ("alice", "dave")
        assert (invitation["mode"], invitation["connectionName"]) == ("participant", "local shell")
        assert await invitations_of(client, dave) == [invitation]
        assert await invitations_of(client, user) == [invitation]  # the owner's own
        assert await invitations_of(client, erin) == []
        # kept in the database: a node that starts now (or any other node) finds it
        again = SessionInvitations(kernel.db, kernel.events)
        standing = await again.standing(session.id, dave.id)
        assert standing is not None and standing.id == invitation["id"]

        # only the owner revokes; once
        revoke = f"/api/v1/sessions/invitations/{invitation['id']}"
        for other in (dave, erin):
            assert (await client.delete(revoke, headers=other.headers)).status_code == 404
        assert (await client.delete(revoke, headers=user.headers)).status_code == 200
        assert (await client.delete(revoke, headers=user.headers)).status_code == 404
        assert await invitations_of(client, dave) == []
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, dave), "observer")
        ) as refused:
            assert await Screen(refused).until_closed() == 4003

        # used once: the first join takes it, a second is refused
        made = await client.post(url, json=body, headers=user.headers)
        second = (await made.get_json())["invitation"]
        listed = await client.get("/api/v1/sessions/joinable", headers=dave.headers)
        [entry] = (await listed.get_json())["sessions"]
        assert entry["invited"] is True and entry["modes"] == ["observer", "participant"]
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, dave), "participant")
        ) as joined:
            participant = Screen(joined)
            await until_message(participant, "watch")
            assert await invitations_of(client, dave) == []
            async with client.websocket(
                join_path(session.id, ticket_for(kernel, dave), "observer")
            ) as refused:
                assert await Screen(refused).until_closed() == 4003
            assert await kernel.live_view.recheck() == 0  # the join it allowed stands
            # the owner revokes it: the join it allowed ends
            revoke = f"/api/v1/sessions/invitations/{second['id']}"
            assert (await client.delete(revoke, headers=user.headers)).status_code == 200
            assert await participant.until_closed() == 4003
            assert participant.messages[-1]["reason"] == "permission_withdrawn"

        # unused past its time: it cannot be used
        made = await client.post(url, json=body, headers=user.headers)
        third = (await made.get_json())["invitation"]
        async with kernel.db.session() as db:
            row = await db.get(SessionInvitation, third["id"])
            assert row is not None
            row.expires_at = utcnow()
            db.add(row)
            await db.commit()
        assert await invitations_of(client, dave) == []
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, dave), "participant")
        ) as refused:
            assert await Screen(refused).until_closed() == 4003
        await owner.run("echo went-on-$((1+2))", "went-on-3")

    invited = await audit_entries(client, admin, "session.invited")
    assert [e["details"]["invitationId"] for e in invited] == [
        third["id"],
        second["id"],
        invitation["id"],
    ]
    revoked = await audit_entries(client, admin, "session.invitation_revoked")
    assert [e["details"]["invitationId"] for e in revoked] == [second["id"], invitation["id"]]
    assert all(e["username"] == "alice" for e in revoked)


def test_a_front_door_terminal_prints_who_joined_or_left_and_nothing_else() -> None:
    notice = {"type": "watchers", "watchers": [], "message": "", "change": "Bob joined as observer"}
    assert joined_line(json.dumps(notice)) == b"\r\n[hostgate] Bob joined as observer\r\n"
    assert joined_line(json.dumps({**notice, "change": ""})) == b""
    assert joined_line(json.dumps({"type": "status"})) == b""
    assert joined_line("not json") == b""


async def test_a_moderated_session_waits_for_a_moderator_pauses_and_ends_without_one(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    url = f"/api/v1/connections/{connection.id}"
    refused = await client.put(url, json={"moderation": "maybe"}, headers=user.headers)
    assert refused.status_code == 400
    stored = await client.get(url, headers=user.headers)
    assert (await stored.get_json())["moderation"] == "none"
    changed = await client.put(url, json={"moderation": "required"}, headers=user.headers)
    assert changed.status_code == 200
    assert (await changed.get_json())["connection"]["moderation"] == "required"
    mia = await make_user("mia", permissions=["sessions.moderate"])
    kernel.live_view.moderation.grace = 0.5

    async with open_terminal(client, kernel, user, connection.id) as socket:
        owner = Screen(socket)
        [waiting] = await until_message(owner, "moderation")
        assert waiting["state"] == "waiting" and "needs a moderator" in waiting["message"]
        await owner.until("$ ")
        session = running_session(kernel)
        await owner.send("echo held-$((1+1))\r")  # held: never reaches the shell
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, mia), "observer")
        ) as joined:
            moderator = Screen(joined)
            await until_message(moderator, "watch")
            states = await until_message(owner, "moderation", 2)
            assert states[-1]["state"] == "active" and "Mia" in states[-1]["message"]
            told = await until_message(owner, "watchers")
            assert told[-1]["watchers"][0]["moderator"] is True
            await owner.step("echo open-$((2+2))", "open-4")
            assert b"held-2" not in owner.output
        # the moderator left: input held again, and the session ends after the grace
        states = await until_message(owner, "moderation", 3)
        assert states[-1]["state"] == "paused" and states[-1]["graceSeconds"] == 0.5
        assert await owner.until_closed() == 4003
        assert owner.messages[-1]["reason"] == "no_moderator"


async def test_a_moderator_who_comes_back_keeps_the_session_and_can_end_it(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    url = f"/api/v1/connections/{connection.id}"
    assert (
        await client.put(url, json={"moderation": "required"}, headers=user.headers)
    ).status_code == 200
    mia = await make_user("mia", permissions=["sessions.moderate"])
    stranger = await make_user("sam", permissions=["sessions.join"])
    kernel.live_view.moderation.grace = 60.0

    async with open_terminal(client, kernel, user, connection.id) as socket:
        owner = Screen(socket)
        await owner.until("$ ")
        session = running_session(kernel)
        path = join_path(session.id, ticket_for(kernel, mia), "participant")
        async with client.websocket(path) as joined:
            await until_message(Screen(joined), "watch")
        states = await until_message(owner, "moderation", 3)
        assert [s["state"] for s in states] == ["waiting", "active", "paused"]
        path = join_path(session.id, ticket_for(kernel, mia), "observer")
        async with client.websocket(path) as joined:
            moderator = Screen(joined)
            await until_message(moderator, "watch")
            states = await until_message(owner, "moderation", 4)
            assert states[-1]["state"] == "active"
            await owner.step("echo back-$((3+3))", "back-6")
            # a joiner who is not a moderator cannot end it; the moderator can
            end = f"/api/v1/sessions/active/{session.id}"
            assert (await client.delete(end, headers=stranger.headers)).status_code == 404
            assert (await client.delete(end, headers=mia.headers)).status_code == 200
            assert await owner.until_closed() == 4003
            assert owner.messages[-1]["reason"] == "terminated"
            assert await moderator.until_closed() == 1000


async def test_a_participant_who_loses_sessions_join_is_closed(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    bob = await make_user("bob", permissions=["sessions.join"])
    async with open_terminal(client, kernel, user, connection.id) as socket:
        owner = Screen(socket)
        await owner.until("$ ")
        session = running_session(kernel)
        async with client.websocket(
            join_path(session.id, ticket_for(kernel, bob), "participant")
        ) as joined:
            participant = Screen(joined)
            await until_message(participant, "watch")
            changed = await client.put(
                f"/api/v1/roles/{bob.role_id}", json={"permissions": []}, headers=admin.headers
            )
            assert changed.status_code == 200, await changed.get_json()
            assert await participant.until_closed() == 4003
            assert participant.messages[-1] == {
                "type": "error",
                "message": "Permission sessions.join was withdrawn",
                "reason": "permission_withdrawn",
            }
        assert session.shared_input is False
        await owner.run("echo still-$((2+2))", "still-4")
