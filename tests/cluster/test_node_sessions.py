"""Live sessions across two real ``hostgate serve`` nodes (one PostgreSQL, one redis-server)
behind a real HAProxy: every node lists and ends every node's sessions, identity changes
made on one node close the sockets another holds, a node killed with SIGKILL has its
sessions marked ended by the other within the node timeout with the recording readable,
a terminal held by one node is watched from the other, and an access request made on
one node nudges an approver's ``/ws/events`` socket on the other.

Each node has its own data directory; both record into one HOSTGATE_RECORDINGS_DIR. The
nodes are started once for the module; each test begins with both up and no session held.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess
from testsupport.haproxy import Balancer, start_haproxy
from testsupport.postgres import create_database
from testsupport.redisd import started_redis
from testsupport.telnetd import telnetd  # noqa: F401

API = "/api/v1"
NODE_TIMEOUT = 6.0
"""HOSTGATE_NODE_TIMEOUT_SECONDS of the test nodes (30 by default)."""


@dataclass
class Cluster:
    """The module's two nodes, their balancer and the first admin's token."""

    node_a: GatewayProcess
    node_b: GatewayProcess
    balancer: Balancer
    token: str


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, postgres_server: str) -> Iterator[Cluster]:
    """Two nodes (one new PostgreSQL database, one redis-server) behind HAProxy, started
    once for the module: starting them was most of each test's time. A test that kills a
    node leaves it to ``setup``, which starts it again on the same port and data."""
    base = tmp_path_factory.mktemp("node-sessions")
    shared = base / "shared-recordings"  # HOSTGATE_RECORDINGS_DIR of both nodes
    started: list[GatewayProcess] = []
    balancer: Balancer | None = None
    with started_redis() as redis:
        env = {
            "HOSTGATE_DATABASE_URL": create_database(postgres_server),
            "HOSTGATE_REDIS_URL": redis.url,
            "HOSTGATE_NODE_TIMEOUT_SECONDS": str(NODE_TIMEOUT),
        }
        try:
            for name in ("node-a", "node-b"):  # one after the other: the first migrates
                started.append(GatewayProcess(base / name, env, recordings=shared).start())
            node_a, node_b = started
            balancer = start_haproxy(base / "haproxy", [node_a.port, node_b.port])
            yield Cluster(node_a, node_b, balancer, node_a.setup_admin())
        finally:
            if balancer is not None:
                balancer.stop()
            for node in reversed(started):
                node.stop()
    for node in started:
        assert node.unhandled() == [], node.log()[-3000:]


def share_with(*user_ids: str) -> dict[str, Any]:
    return {"shares": [{"shareType": "user", "targetId": u} for u in user_ids]}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# one client for the module's API calls, many of them polls: ``httpx.request`` built a
# client and its TLS context per call; no keep-alive, so each call still opens its own
# connection (the balancer shares calls out per connection)
HTTP = httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


class Node:
    """API calls to one node (or the balancer) as one user."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return HTTP.request(method, f"{self.url}{API}{path}", headers=bearer(self.token), **kwargs)

    def ticket(self) -> str:
        response = self.call("POST", "/auth/ws-ticket")
        assert response.status_code == 200, response.text
        return str(response.json()["ticket"])

    def active(self) -> list[dict[str, Any]]:
        response = self.call("GET", "/sessions/active")
        assert response.status_code == 200, response.text
        return list(response.json()["sessions"])


def login(url: str, username: str, password: str = ADMIN_PASSWORD) -> str:
    response = HTTP.post(
        f"{url}{API}/auth/login", json={"username": username, "password": password}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["token"])


class Terminal:
    """A terminal socket: output read in the background, input sent as data frames."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.output = b""
        self.texts: list[dict[str, Any]] = []

    async def until(self, wanted: bytes, timeout: float = 20) -> None:
        async def read() -> None:
            while wanted not in self.output:
                frame = await self.socket.recv()
                if isinstance(frame, bytes):
                    self.output += frame
                else:
                    self.texts.append(json.loads(frame))

        await asyncio.wait_for(read(), timeout)

    async def send(self, text: str) -> None:
        await self.socket.send(json.dumps({"type": "data", "data": text}))

    async def closed(self, timeout: float = 20) -> tuple[int | None, str | None]:
        try:
            while True:
                frame = await asyncio.wait_for(self.socket.recv(), timeout)
                if isinstance(frame, str):
                    self.texts.append(json.loads(frame))
        except ConnectionClosed:
            pass
        return self.socket.close_code, self.socket.close_reason


def terminal_url(node: GatewayProcess, ticket: str, connection_id: str) -> str:
    query = urlencode({"ticket": ticket, "connectionId": connection_id, "cols": 80, "rows": 24})
    return f"{node.ws_url}/ws/telnet?{query}"


async def open_terminal(node: GatewayProcess, ticket: str, connection_id: str) -> Any:
    socket = await connect(terminal_url(node, ticket, connection_id))
    terminal = Terminal(socket)
    await terminal.until(b"$ ")
    return terminal


def until(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.1)


@pytest.fixture
def setup(cluster: Cluster, telnetd):  # noqa: F811
    """Both nodes up and holding no session (as if new), and a telnet connection."""
    node_a, node_b = cluster.node_a, cluster.node_b
    for node in (node_a, node_b):
        if node.process is None or node.process.poll() is not None:
            node.start()  # killed by the test before
    admin = Node(cluster.balancer.url, cluster.token)
    on_a, on_b = Node(node_a.url, cluster.token), Node(node_b.url, cluster.token)
    # what an earlier test ended (or its killed node held) has left the registry
    until(
        lambda: on_a.active() == [] and on_b.active() == [],
        NODE_TIMEOUT * 2 + 10,
        "no node lists a session of an earlier test",
    )
    created = admin.call(
        "POST",
        "/connections",
        json={
            "name": "telnet box",
            "protocol": "telnet",
            "host": telnetd.host,
            "port": telnetd.port,
            "username": telnetd.username,
            "password": telnetd.password,
        },
    )
    assert created.status_code == 201, created.text
    return node_a, node_b, admin, str(created.json()["id"])


async def test_every_node_lists_and_ends_the_sessions_another_node_holds(setup):
    node_a, node_b, admin, connection_id = setup
    on_a, on_b = Node(node_a.url, admin.token), Node(node_b.url, admin.token)
    terminal = await open_terminal(node_b, on_a.ticket(), connection_id)
    # node A lists the terminal node B holds, and says it is live
    [listed] = until(on_a.active, 10, "node A lists node B's terminal")
    assert (listed["kind"], listed["protocol"], listed["connectionId"]) == (
        "terminal",
        "telnet",
        connection_id,
    )
    assert listed["username"] == "admin"
    assert [(s["id"], s["node"]) for s in on_b.active()] == [(listed["id"], listed["node"])]
    detail = on_a.call("GET", f"/sessions/{listed['id']}")
    assert detail.status_code == 200 and detail.json()["live"] is True, detail.text
    # ended through node A: the socket node B holds closes at once, with the reason
    ended = on_a.call("DELETE", f"/sessions/active/{listed['id']}", params={"reason": "bye"})
    assert ended.status_code == 200, ended.text
    assert await terminal.closed(timeout=5) == (4003, "Terminated by admin: bye")
    until(lambda: on_a.active() == [], 10, "the ended session leaves the list")
    row = until(
        lambda: (r := on_a.call("GET", f"/sessions/{listed['id']}").json())["live"] is False and r,
        10,
        "the session is no longer live",
    )
    assert row["endReason"] == "Terminated by admin: bye"
    assert on_b.call("DELETE", f"/sessions/active/{listed['id']}").status_code == 404
    # both nodes wrote to the audit log: still one chain
    for node in (on_a, on_b):
        for _ in range(2):
            assert node.call("POST", "/auth/ws-ticket").status_code == 200
        login(node.url, "admin")
    verified = on_b.call("GET", "/audit/verify").json()
    assert verified["ok"] is True, verified


async def test_identity_changes_on_one_node_close_the_sockets_another_node_holds(setup):
    node_a, node_b, admin, connection_id = setup
    on_a = Node(node_a.url, admin.token)
    made = on_a.call(
        "POST",
        "/users",
        json={"username": "bob", "password": ADMIN_PASSWORD, "role": "user"},
    )
    assert made.status_code == 201, made.text
    bob_id = made.json()["id"]
    shared = on_a.call(
        "PUT",
        f"/connections/{connection_id}/shares",
        json=share_with(bob_id),
    )
    assert shared.status_code == 200, shared.text
    bob = Node(node_a.url, login(node_a.url, "bob"))

    # bob revokes his own login session on node A: his terminal on node B closes
    terminal = await open_terminal(node_b, bob.ticket(), connection_id)
    logins = bob.call("GET", "/profile/login-sessions").json()["sessions"]
    [current] = [s for s in logins if s["isCurrent"]]
    fresh = Node(node_a.url, login(node_a.url, "bob"))
    assert fresh.call("DELETE", f"/profile/login-sessions/{current['id']}").status_code in (
        200,
        204,
    )
    code, _ = await terminal.closed(timeout=5)
    assert code == 4001

    # unshared on node A: closes at once on node B
    terminal = await open_terminal(node_b, fresh.ticket(), connection_id)
    unshared = on_a.call("PUT", f"/connections/{connection_id}/shares", json={"shares": []})
    assert unshared.status_code == 200, unshared.text
    assert await terminal.closed(timeout=5) == (
        4003,
        "the connection is no longer shared with you",
    )

    # deleted on node A: closes at once on node B
    on_a.call(
        "PUT",
        f"/connections/{connection_id}/shares",
        json=share_with(bob_id),
    )
    terminal = await open_terminal(node_b, fresh.ticket(), connection_id)
    assert on_a.call("DELETE", f"/users/{bob_id}").status_code in (200, 204)
    assert await terminal.closed(timeout=5) == (4001, "user deleted")


async def test_a_killed_nodes_sessions_are_ended_by_the_other_with_the_recording_readable(
    setup,
):
    node_a, node_b, admin, connection_id = setup
    on_b = Node(node_b.url, admin.token)
    terminal = await open_terminal(node_a, on_b.ticket(), connection_id)
    await terminal.send("echo marker-$((6*7))\r")
    await terminal.until(b"marker-42")
    [held] = until(on_b.active, 10, "node B lists node A's terminal")
    # someone on node B watches it
    watch_url = f"{node_b.ws_url}/ws/sessions/{held['id']}/watch?ticket={on_b.ticket()}"
    viewer = Terminal(await connect(watch_url))
    await viewer.until(b"marker-42")
    time.sleep(1.5)  # the recording is flushed once a second
    node_a.kill()
    row = until(
        lambda: (
            (r := on_b.call("GET", f"/sessions/{held['id']}").json())["live"] is False
            and r.get("endReason")
            and r
        ),
        NODE_TIMEOUT + 2,  # the bound, and some slack for this test's polling
        "node B marks node A's session ended",
    )
    assert row["endReason"] == "the gateway node holding it stopped answering"
    assert row["recordingState"] == "complete", row
    # the watch of the dead node's terminal ends too
    assert await viewer.closed(timeout=10) == (1000, "The watched session ended")
    recording = on_b.call("GET", f"/sessions/{held['id']}/recording")
    assert recording.status_code == 200, recording.text
    assert b"marker-42" in recording.content
    header = json.loads(recording.content.splitlines()[0])
    assert header["version"] == 2
    assert on_b.active() == []
    audit = on_b.call("GET", "/audit", params={"eventType": "connection.session_ended"})
    [entry] = [e for e in audit.json()["entries"] if e["details"]["sessionId"] == held["id"]]
    assert entry["username"] == "admin"
    assert entry["details"]["reason"] == "the gateway node holding it stopped answering"
    assert entry["details"]["recordingBytes"] == len(recording.content)
    # node A comes back and joins again: both answer, and list the same sessions
    node_a.start()
    terminal = await open_terminal(node_a, on_b.ticket(), connection_id)
    on_a = Node(node_a.url, admin.token)
    [again] = until(on_b.active, 10, "node B lists the new terminal of node A")
    assert [s["id"] for s in on_a.active()] == [again["id"]]
    await terminal.socket.close()


async def test_a_viewer_on_one_node_watches_a_terminal_the_other_node_holds(setup):
    node_a, node_b, admin, connection_id = setup
    on_a, on_b = Node(node_a.url, admin.token), Node(node_b.url, admin.token)
    terminal = await open_terminal(node_a, on_b.ticket(), connection_id)
    await terminal.send("echo before-$((1+1))\r")
    await terminal.until(b"before-2")
    [held] = until(on_b.active, 10, "node B lists node A's terminal")
    async with connect(
        f"{node_b.ws_url}/ws/sessions/{held['id']}/watch?ticket={on_b.ticket()}"
    ) as s:
        viewer = Terminal(s)
        await viewer.until(b"before-2")  # the screen node A drew
        assert viewer.texts[0]["type"] == "watch"
        assert viewer.texts[0]["sessionId"] == held["id"]
        await terminal.send("echo after-$((2+3))\r")
        await viewer.until(b"after-5")
        await terminal.until(b"after-5")
        assert any(t.get("type") == "watchers" for t in terminal.texts)
        listed = {s["kind"]: s["node"] for s in on_a.active()}
        assert set(listed) == {"terminal", "watch"}
        assert listed["terminal"] != listed["watch"]  # held by A, watched through B
        # the watched terminal ends on node A: the viewer on node B closes
        assert on_a.call("DELETE", f"/sessions/active/{held['id']}").status_code == 200
        assert await viewer.closed(timeout=10) == (1000, "The watched session ended")
    await terminal.closed(timeout=10)


def rdp_session(admin: Node) -> str:
    """A browser RDP session being recorded (an RDP connection; no desktop needed)."""
    created = admin.call(
        "POST",
        "/connections",
        json={"name": "desk", "protocol": "rdp", "host": "127.0.0.1", "port": 3389},
    )
    assert created.status_code == 201, created.text
    started = admin.call(
        "POST", "/sessions/rdp-session", json={"connectionId": created.json()["id"]}
    )
    assert started.status_code == 200, started.text
    assert started.json()["shouldRecord"] is True
    return str(started.json()["sessionId"])


def chunk(node: Node, session_id: str, data: bytes) -> None:
    response = node.call("POST", f"/sessions/{session_id}/recording/chunk", content=data)
    assert response.status_code == 200, response.text


async def test_a_recording_upload_moves_to_the_node_its_chunks_reach(setup):
    """Round robin sends the browser's chunks to either node: the node holding the upload
    hands it over, so the file is written by one node at a time and stays whole."""
    node_a, node_b, admin, _ = setup
    on_a, on_b = Node(node_a.url, admin.token), Node(node_b.url, admin.token)
    session_id = rdp_session(admin)
    chunk(on_a, session_id, b"A" * 70_000)
    [held] = until(on_b.active, 10, "node B lists node A's upload")
    assert (held["id"], held["kind"]) == (session_id, "upload")
    chunk(on_b, session_id, b"B" * 50_000)
    chunk(on_a, session_id, b"C" * 10)
    assert [s["kind"] for s in on_b.active()] == ["upload"]
    done = on_b.call("POST", f"/sessions/{session_id}/recording/finalize")
    assert done.status_code == 200, done.text
    row = on_a.call("GET", f"/sessions/{session_id}").json()
    assert row["recordingState"] == "complete" and row["fileSize"] == 120_010
    recording = on_a.call("GET", f"/sessions/{session_id}/recording")
    assert recording.content == b"A" * 70_000 + b"B" * 50_000 + b"C" * 10
    assert until(lambda: on_a.active() == [], 10, "the upload leaves the registry")


async def test_a_killed_nodes_recording_upload_is_ended_readable_by_the_other(setup):
    node_a, node_b, admin, _ = setup
    on_b = Node(node_b.url, admin.token)
    session_id = rdp_session(admin)
    chunk(Node(node_a.url, admin.token), session_id, b"W" * 80_000)
    until(on_b.active, 10, "node B lists node A's upload")
    node_a.kill()
    row = until(
        lambda: (r := on_b.call("GET", f"/sessions/{session_id}").json()).get("endReason") and r,
        NODE_TIMEOUT + 2,
        "node B marks node A's upload ended",
    )
    assert row["endReason"] == "the gateway node holding it stopped answering"
    assert row["recordingState"] == "complete" and row["fileSize"] == 80_000
    recording = on_b.call("GET", f"/sessions/{session_id}/recording")
    assert recording.status_code == 200 and recording.content == b"W" * 80_000
    late = on_b.call("POST", f"/sessions/{session_id}/recording/chunk", content=b"late")
    assert late.status_code == 409 and late.json()["code"] == "not_recording"
    node_a.start()  # the fixture's teardown checks its log


async def test_an_access_request_on_one_node_nudges_an_approver_on_the_other(setup):
    node_a, node_b, admin, _ = setup
    on_a, on_b = Node(node_a.url, admin.token), Node(node_b.url, admin.token)
    name = f"rita-{time.monotonic_ns()}"
    made = on_a.call(
        "POST", "/users", json={"username": name, "password": ADMIN_PASSWORD, "role": "user"}
    )
    assert made.status_code == 201, made.text
    gated = on_a.call(
        "POST",
        "/connections",
        json={
            "name": f"gated {name}", "protocol": "telnet", "host": "127.0.0.1", "port": 23,
            "shared": True, "approvalRequired": True,
        },
    )  # fmt: skip
    assert gated.status_code == 201, gated.text
    rita = Node(node_a.url, login(node_a.url, name))
    async with connect(f"{node_b.ws_url}/ws/events?ticket={on_b.ticket()}") as approver:
        assert json.loads(await asyncio.wait_for(approver.recv(), 10)) == {"type": "ready"}
        asked = rita.call(
            "POST",
            "/access-requests",
            json={"connectionId": gated.json()["id"], "minutes": 5, "reason": "INC-9"},
        )
        assert asked.status_code == 201, asked.text
        nudge = json.loads(await asyncio.wait_for(approver.recv(), 10))  # through Redis
        assert nudge == {"type": "changed", "topic": "access-requests"}


async def until_text(terminal: Terminal, state: str, timeout: float = 20) -> dict[str, Any]:
    """Read the terminal until a ``commandRule`` frame in ``state`` arrives; that frame."""

    def found() -> dict[str, Any] | None:
        return next(
            (t for t in terminal.texts if t.get("type") == "commandRule" and t["state"] == state),
            None,
        )

    async def read() -> dict[str, Any]:
        while (frame := found()) is None:
            data = await terminal.socket.recv()
            if isinstance(data, bytes):
                terminal.output += data
            else:
                terminal.texts.append(json.loads(data))
        return frame

    try:
        return await asyncio.wait_for(read(), timeout)
    except TimeoutError:
        pytest.fail(f"no {state} frame: {terminal.texts} {terminal.output[-300:]!r}")


def user_with_the_box(on_a: Node, connection_id: str, prefix: str) -> tuple[str, str]:
    """A new user (unique in the module's database) the telnet box is shared with."""
    name = f"{prefix}-{time.monotonic_ns()}"
    made = on_a.call(
        "POST", "/users", json={"username": name, "password": ADMIN_PASSWORD, "role": "user"}
    )
    assert made.status_code == 201, made.text
    shared = on_a.call(
        "PUT", f"/connections/{connection_id}/shares", json=share_with(made.json()["id"])
    )
    assert shared.status_code == 200, shared.text
    return name, str(made.json()["id"])


async def test_a_command_held_on_one_node_is_decided_from_the_other(setup):
    node_a, node_b, admin, connection_id = setup
    on_a, on_b = Node(node_a.url, admin.token), Node(node_b.url, admin.token)
    name, _ = user_with_the_box(on_a, connection_id, "tom")
    rule = on_a.call(
        "POST",
        "/command-rules",
        json={"name": f"hold {name}", "action": "approve", "match": "glob",
              "pattern": "echo hold-*", "connectionIds": [connection_id]},
    )  # fmt: skip
    assert rule.status_code == 201, rule.text
    tom = Node(node_a.url, login(node_a.url, name))

    def held_on_b() -> list[dict[str, Any]]:
        return list(on_b.call("GET", "/command-rules/held").json()["held"])

    try:
        terminal = await open_terminal(node_a, tom.ticket(), connection_id)
        await terminal.send("echo hold-$((6*7))\r")
        await until_text(terminal, "held")
        # node B lists what node A holds; its approver's decision reaches node A
        [held] = until(held_on_b, 10, "node B lists node A's held command")
        assert (held["command"], held["username"]) == ("echo hold-$((6*7))", name)
        approved = on_b.call("POST", f"/command-rules/held/{held['id']}/approve")
        assert approved.status_code == 200, approved.text
        await terminal.until(b"hold-42")
        told = await until_text(terminal, "approved")
        assert told["message"] == "Command approved by admin"
        until(lambda: held_on_b() == [], 10, "the approved command leaves node B's list")
        again = on_b.call("POST", f"/command-rules/held/{held['id']}/deny")
        assert again.status_code == 404, again.text

        # denied on node B: node A never sends it
        terminal.texts.clear()
        await terminal.send("echo hold-$((7*7))\r")
        await until_text(terminal, "held")
        [held] = until(held_on_b, 10, "node B lists the second held command")
        denied = on_b.call("POST", f"/command-rules/held/{held['id']}/deny")
        assert denied.status_code == 200, denied.text
        told = await until_text(terminal, "denied")
        assert told["message"] == "Command denied by admin"
        await terminal.send("echo after-$((2+3))\r")
        await terminal.until(b"after-5")
        assert b"hold-49" not in terminal.output
        await terminal.socket.close()
    finally:
        on_a.call("DELETE", f"/command-rules/{rule.json()['id']}")
    audit = on_a.call("GET", "/audit", params={"eventType": "session.command_denied"})
    [entry] = [e for e in audit.json()["entries"] if e["details"]["heldId"] == held["id"]]
    assert entry["username"] == "admin"


async def test_an_invitation_made_on_one_node_is_seen_and_revoked_on_the_other(setup):
    node_a, node_b, admin, connection_id = setup
    on_a, on_b = Node(node_a.url, admin.token), Node(node_b.url, admin.token)
    name, user_id = user_with_the_box(on_a, connection_id, "dana")
    dana_b = Node(node_b.url, login(node_b.url, name))
    terminal = await open_terminal(node_a, on_a.ticket(), connection_id)
    [held] = until(on_b.active, 10, "node B lists node A's terminal")
    async with connect(f"{node_b.ws_url}/ws/events?ticket={dana_b.ticket()}") as events:
        assert json.loads(await asyncio.wait_for(events.recv(), 10)) == {"type": "ready"}
        made = on_a.call(
            "POST",
            f"/sessions/active/{held['id']}/invitations",
            json={"username": name, "mode": "observer"},
        )
        assert made.status_code == 200, made.text
        nudge = json.loads(await asyncio.wait_for(events.recv(), 10))  # through Redis
        assert nudge == {"type": "changed", "topic": "session-invitations"}
    invitation = made.json()["invitation"]
    # node B sees it: the invited user's list and the joinable terminals
    [seen] = dana_b.call("GET", "/sessions/invitations").json()["invitations"]
    assert seen == invitation
    [joinable] = dana_b.call("GET", "/sessions/joinable").json()["sessions"]
    assert (joinable["id"], joinable["invited"]) == (held["id"], True)
    # joined through the node holding the terminal, revoked through the other: it ends
    dana_a = Node(node_a.url, dana_b.token)
    query = urlencode({"ticket": dana_a.ticket(), "mode": "observer"})
    async with connect(f"{node_a.ws_url}/ws/sessions/{held['id']}/watch?{query}") as s:
        viewer = Terminal(s)
        await terminal.send("echo seen-$((3*3))\r")
        await viewer.until(b"seen-9")
        assert viewer.texts[0]["mode"] == "observer"
        revoked = on_b.call("DELETE", f"/sessions/invitations/{invitation['id']}")
        assert revoked.status_code == 200, revoked.text
        code, _ = await viewer.closed(timeout=10)
        assert code == 4003
    assert dana_b.call("GET", "/sessions/invitations").json()["invitations"] == []
    assert user_id and on_a.call("DELETE", f"/sessions/active/{held['id']}").status_code == 200
    await terminal.closed(timeout=10)
