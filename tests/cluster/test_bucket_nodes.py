"""Two real ``hostgate serve`` nodes (one PostgreSQL, one redis-server) keeping their
recordings in one S3-compatible bucket (radosgw, else moto's server) and no shared directory: a
terminal recorded on node A plays from node B, and a node killed in the middle of a
recording leaves it readable, from the other node, up to its last uploaded part.

Each node has its own data directory (and so its own, unused, recordings directory).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.cluster.test_node_sessions import NODE_TIMEOUT, Node, open_terminal, rdp_session, until
from testsupport.gateway import GatewayProcess
from testsupport.postgres import create_database
from testsupport.redisd import started_redis
from testsupport.s3server import S3Server
from testsupport.telnetd import telnetd  # noqa: F401

MIB = 1024 * 1024
PART = 5 * MIB


@dataclass
class BucketCluster:
    node_a: GatewayProcess
    node_b: GatewayProcess
    token: str
    s3: S3Server
    prefix: str


@pytest.fixture(scope="module")
def bucket_cluster(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: str, s3_server: S3Server
) -> Iterator[BucketCluster]:
    base = tmp_path_factory.mktemp("bucket-nodes")
    settings = s3_server.config()
    prefix = settings["recordings_url"].rpartition("/")[2]
    started: list[GatewayProcess] = []
    with started_redis() as redis:
        env = {
            "HOSTGATE_DATABASE_URL": create_database(postgres_server),
            "HOSTGATE_REDIS_URL": redis.url,
            "HOSTGATE_NODE_TIMEOUT_SECONDS": str(NODE_TIMEOUT),
            "HOSTGATE_RECORDINGS_URL": settings["recordings_url"],
            "HOSTGATE_S3_ENDPOINT_URL": settings["s3_endpoint_url"],
            "HOSTGATE_S3_REGION": settings["s3_region"],
            "HOSTGATE_S3_ACCESS_KEY_ID": settings["s3_access_key_id"],
            "HOSTGATE_S3_SECRET_ACCESS_KEY": settings["s3_secret_access_key"],
        }
        try:
            for name in ("node-a", "node-b"):  # one after the other: the first migrates
                started.append(GatewayProcess(base / name, env).start())
            node_a, node_b = started
            yield BucketCluster(node_a, node_b, node_a.setup_admin(), s3_server, prefix)
        finally:
            for node in reversed(started):
                node.stop()
    for node in started:
        assert node.unhandled() == [], node.log()[-3000:]
        # the credentials never reach a log line
        assert settings["s3_secret_access_key"] not in node.log()


def parts_uploaded(cluster: BucketCluster, name: str) -> int:
    """Parts of the unfinished upload of recording ``name`` that reached the bucket."""
    client = cluster.s3.client()
    key = f"{cluster.prefix}/{name}"
    try:
        uploads = client.list_multipart_uploads(Bucket=cluster.s3.bucket, Prefix=key)
        return sum(
            len(
                client.list_parts(Bucket=cluster.s3.bucket, Key=key, UploadId=u["UploadId"]).get(
                    "Parts", []
                )
            )
            for u in uploads.get("Uploads", [])
            if u["Key"] == key
        )
    finally:
        client.close()


def nodes(cluster: BucketCluster) -> tuple[Node, Node]:
    """API callers of node A and node B (the same admin)."""
    return Node(cluster.node_a.url, cluster.token), Node(cluster.node_b.url, cluster.token)


def telnet_connection(on_a: Node, server: Any, name: str) -> str:
    """A telnet connection to the test's telnetd, made on node A: its id."""
    created = on_a.call(
        "POST",
        "/connections",
        json={
            "name": name,
            "protocol": "telnet",
            "host": server.host,
            "port": server.port,
            "username": server.username,
            "password": server.password,
        },
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def kill_node_a(cluster: BucketCluster, on_b: Node, session_id: str) -> dict[str, Any]:
    """Kill node A and wait for node B to end its session: the session's row, whose
    recording is complete up to the parts that arrived."""
    cluster.node_a.kill()
    row: dict[str, Any] = until(
        lambda: (r := on_b.call("GET", f"/sessions/{session_id}").json()).get("endReason") and r,
        NODE_TIMEOUT + 10,
        "node B marks node A's session ended",
    )
    assert row["endReason"] == "the gateway node holding it stopped answering"
    assert row["recordingState"] == "complete", row
    return row


def pattern(size: int) -> bytes:
    block = bytes(range(251)) * 4200
    return (block * (size // len(block) + 1))[:size]


async def test_a_terminal_recorded_on_one_node_plays_from_the_other(
    bucket_cluster: BucketCluster,
    telnetd: Any,  # noqa: F811
) -> None:
    cluster = bucket_cluster
    on_a, on_b = nodes(cluster)
    connection_id = telnet_connection(on_a, telnetd, "telnet box")
    terminal = await open_terminal(cluster.node_a, on_a.ticket(), connection_id)
    await terminal.send("echo bucket-$((6*7))\r")
    await terminal.until(b"bucket-42")
    [held] = until(on_b.active, 10, "node B lists node A's terminal")
    await terminal.send("exit\r")
    await terminal.closed()
    row = until(
        lambda: (
            (r := on_b.call("GET", f"/sessions/{held['id']}").json())["live"] is False
            and r["recordingState"] == "complete"
            and r
        ),
        20,
        "the session ends with its recording complete",
    )
    recording = on_b.call("GET", f"/sessions/{held['id']}/recording")
    assert recording.status_code == 200, recording.text
    assert b"bucket-42" in recording.content
    assert row["fileSize"] == len(recording.content)
    for node in (cluster.node_a, cluster.node_b):  # neither wrote a local file
        assert not any((node.data_dir / "recordings").glob("*.cast"))


async def test_a_killed_node_leaves_its_recording_readable_up_to_the_last_part(
    bucket_cluster: BucketCluster,
) -> None:
    cluster = bucket_cluster
    on_a, on_b = nodes(cluster)
    session_id = rdp_session(on_a)
    data = pattern(PART + 2 * MIB)
    response = on_a.call("POST", f"/sessions/{session_id}/recording/chunk", content=data)
    assert response.status_code == 200, response.text
    until(lambda: parts_uploaded(cluster, f"{session_id}.webm") >= 1, 30, "a part is uploaded")
    row = kill_node_a(cluster, on_b, session_id)
    recording = on_b.call("GET", f"/sessions/{session_id}/recording")
    assert recording.status_code == 200, recording.text
    # the uploaded part (at least 5 MiB of sealed slots) survives; the rest was in A's memory
    assert PART * 0.99 < len(recording.content) < len(data)
    assert recording.content == data[: len(recording.content)]
    assert row["fileSize"] == len(recording.content)
    cluster.node_a.start()  # the fixture's teardown checks its log


async def test_a_node_killed_mid_terminal_session_leaves_the_uploaded_parts_readable(
    bucket_cluster: BucketCluster,
    telnetd: Any,  # noqa: F811
) -> None:
    """A terminal whose recording passed one part (5 MiB) when its node died: the other
    node ends the session and its recording reads back as a prefix of the cast."""
    cluster = bucket_cluster
    on_a, on_b = nodes(cluster)
    connection_id = telnet_connection(on_a, telnetd, "telnet big")
    terminal = await open_terminal(cluster.node_a, on_a.ticket(), connection_id)
    line = "x" * 79
    await terminal.send(f"yes {line} | head -c 6500000; echo big-$((20+22))\r")
    tail = b""
    while b"big-42" not in tail:  # only the end is kept: the output is megabytes
        frame = await asyncio.wait_for(terminal.socket.recv(), 60)
        if isinstance(frame, bytes):
            tail = (tail + frame)[-64:]
    [held] = until(on_b.active, 10, "node B lists node A's terminal")
    until(lambda: parts_uploaded(cluster, f"{held['id']}.cast") >= 1, 30, "a part is uploaded")
    row = kill_node_a(cluster, on_b, held["id"])
    recording = on_b.call("GET", f"/sessions/{held['id']}/recording")
    assert recording.status_code == 200, recording.text
    assert PART * 0.99 < len(recording.content) == row["fileSize"]
    lines = recording.content.split(b"\n")
    assert json.loads(lines[0])["version"] == 2
    # whole events up to the cut (the last one may be cut in the middle), megabytes of them
    events = [json.loads(event) for event in lines[1:-1]]
    assert sum(text.count(line) for _, kind, text in events if kind == "o") > 50_000
    cluster.node_a.start()  # the fixture's teardown checks its log
