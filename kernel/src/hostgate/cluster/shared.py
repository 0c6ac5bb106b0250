"""The Redis (or Valkey) that several gateway nodes share, and the checks at start-up.

``connect`` makes the one client a node uses; every command has a short timeout and
two quick retries, so a Redis that is down makes the request that needs it fail
within seconds (``reaching`` turns that into the 503 ``SharedStateUnavailable``)
instead of hanging, and the next request simply tries again: nothing needs a
restart when Redis comes back.

``refusal`` says why a configuration cannot work with several nodes (see
docs/admin.md "Scaling out"): Redis with SQLite is only accepted when the SQLite
file is on a local filesystem (several workers of one machine share it); on a
network filesystem it is refused, since SQLite's locking is not safe there and
nodes on several hosts need PostgreSQL.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SharedStateUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from ..config import Config

log = logging.getLogger("hostgate.cluster")

KEY_PREFIX = "hostgate:"
"""Every key and channel the gateway uses starts with this."""
DATABASE_KEY = f"{KEY_PREFIX}database"
"""The id of the database the nodes sharing this Redis use (set by the first to start)."""
SQLITE_HOST_KEY = f"{KEY_PREFIX}sqlite-host"
"""With SQLite: the machine whose workers share this Redis (set by the first to start)."""
RECORDINGS_MARKER = ".hostgate-recordings"
"""The file in the recordings directory that names the database and the directory's token."""
MACHINE_ID = Path("/etc/machine-id")
TIMEOUT_SECONDS = 2.0
MIN_VERSION = (6, 2)  # GETDEL, which redeems a ticket exactly once
MOUNTINFO = Path("/proc/self/mountinfo")
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "gfs2",
        "ocfs2",
        "davfs",
        "fuse.sshfs",
        "fuse.glusterfs",
        "fuse.s3fs",
        "fuse.rclone",
        "fuse.davfs2",
        "fuse.cephfs",
    }
)


class ClusterSetupError(RuntimeError):
    """The shared Redis cannot be used; the message tells the admin what to fix."""


def redacted(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages and logs)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def connect(url: str) -> Redis:
    """The client of one node: short timeouts, two quick retries, raw bytes."""
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    client: Redis = Redis.from_url(
        url,
        socket_timeout=TIMEOUT_SECONDS,
        socket_connect_timeout=TIMEOUT_SECONDS,
        retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
        health_check_interval=30,
    )
    return client


@contextlib.contextmanager
def reaching() -> Iterator[None]:
    """Run Redis commands: a connection failure or timeout becomes the 503."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        log.warning("shared state (Redis) unavailable: %s", exc)
        raise SharedStateUnavailable() from None


async def check_server(client: Redis, url: str) -> None:
    """Refuse to start when Redis cannot be reached or is too old."""
    from redis.exceptions import RedisError

    try:
        await client.ping()
        info = await client.info("server")
    except (RedisError, OSError) as exc:
        raise ClusterSetupError(
            f"Cannot reach Redis at {redacted(url)} (HOSTGATE_REDIS_URL): {exc}"
        ) from None
    version = str(info.get("redis_version", "0"))
    numbers = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if numbers < MIN_VERSION:
        wanted = ".".join(map(str, MIN_VERSION))
        raise ClusterSetupError(
            f"Redis at {redacted(url)} is version {version}; hostgate needs {wanted} or newer"
        )


async def claim_database(
    client: Redis, url: str, database_id: str, *, replace: bool = False
) -> None:
    """Record this node's database id in Redis, or refuse when the nodes there use another.

    Nodes that share a Redis must share one database: several hosts each with a
    SQLite file of its own (or different PostgreSQL databases) would each have
    their own users and connections. Every database has a random id (stored in
    it on first start); the first node to start records its id in Redis, and a
    node whose database has another id does not start. ``replace`` records this
    node's id whatever was there (after a restore replaced the database).
    """
    from redis.exceptions import RedisError

    try:
        await client.set(DATABASE_KEY, database_id, nx=not replace)
        current = await client.get(DATABASE_KEY)
    except (RedisError, OSError) as exc:
        raise ClusterSetupError(
            f"Cannot reach Redis at {redacted(url)} (HOSTGATE_REDIS_URL): {exc}"
        ) from None
    shared = current.decode() if isinstance(current, bytes) else str(current)
    if shared != database_id:
        raise ClusterSetupError(
            f"The gateway nodes that share Redis at {redacted(url)} use another database "
            f"(id {shared}; this node's is {database_id}). Every node must use the same "
            "database: PostgreSQL for nodes on several hosts (HOSTGATE_DATABASE_URL). If the "
            "database was replaced on purpose, delete the Redis key "
            f"{DATABASE_KEY} and start the nodes again."
        )


def machine_id(path: Path | None = None) -> str:
    """The machine's id (systemd's /etc/machine-id), else its host name."""
    try:
        text = (path or MACHINE_ID).read_text().strip()
    except OSError:
        text = ""
    return text or socket.gethostname()


async def claim_sqlite_host(client: Redis, url: str, host: str) -> None:
    """With SQLite: refuse a node on another machine than the nodes already sharing Redis.

    SQLite with Redis means several workers of one machine on a local file; a
    copy of that file on another host would have the same database id and
    silently split the gateway in two.
    """
    from redis.exceptions import RedisError

    try:
        await client.set(SQLITE_HOST_KEY, host, nx=True)
        current = await client.get(SQLITE_HOST_KEY)
    except (RedisError, OSError) as exc:
        raise ClusterSetupError(
            f"Cannot reach Redis at {redacted(url)} (HOSTGATE_REDIS_URL): {exc}"
        ) from None
    first = current.decode() if isinstance(current, bytes) else str(current)
    if first != host:
        raise ClusterSetupError(
            f"The gateway nodes that share Redis at {redacted(url)} run on another machine "
            f"(machine id {first}; this one is {host}) and the database is SQLite. SQLite "
            "with HOSTGATE_REDIS_URL is for the workers of one machine (hostgate serve "
            "--workers N); nodes on several hosts need PostgreSQL (HOSTGATE_DATABASE_URL). "
            f"If the gateway moved to this machine on purpose, delete the Redis key "
            f"{SQLITE_HOST_KEY} and start it again. See docs/cluster.md."
        )


def read_marker(directory: Path) -> dict[str, str] | None:
    """The recordings directory's marker (None: absent or unreadable)."""
    try:
        data = json.loads((directory / RECORDINGS_MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {k: str(v) for k, v in data.items() if k in ("databaseId", "token")}


def write_marker(directory: Path, database_id: str, token: str) -> None:
    """Write the marker (atomically: a node reading it sees all or nothing)."""
    body = json.dumps({"databaseId": database_id, "token": token}) + "\n"
    temporary = directory / f"{RECORDINGS_MARKER}.{os.getpid()}.tmp"
    temporary.write_text(body)
    temporary.replace(directory / RECORDINGS_MARKER)


def marker_refusal(directory: Path, database_id: str, token: str) -> str | None:
    """Why ``directory`` is not the recordings directory the other nodes use; None if it is.

    The first node that starts with HOSTGATE_REDIS_URL writes a marker file there
    (the database id and a random token) and stores the token in the database;
    every node then finds the same token in its recordings directory, which it
    only can if the directory is shared.
    """
    marker = read_marker(directory)
    if marker is not None and marker.get("token") == token:
        return None
    found = (
        "it has no marker file"
        if marker is None
        else f"its marker names database {marker.get('databaseId')} and token {marker.get('token')}"
    )
    content = json.dumps({"databaseId": database_id, "token": token})
    return (
        f"The recordings directory {directory} is not the one the other gateway nodes use: "
        f"{found}, while the nodes of this database wrote token {token}. Every node must "
        "see one shared recordings directory: HOSTGATE_RECORDINGS_DIR (or <data dir>/"
        "recordings) on shared storage such as NFS, mounted on every node. If this is that "
        "directory and its marker was "
        f"lost, write it again: echo '{content}' > {directory / RECORDINGS_MARKER}. "
        "See docs/cluster.md."
    )


def _unescape(field: str) -> str:
    """A mountinfo path field (spaces and the like are written as octal escapes)."""
    out, index = [], 0
    while index < len(field):
        if field[index] == "\\" and field[index + 1 : index + 4].isdigit():
            out.append(chr(int(field[index + 1 : index + 4], 8)))
            index += 4
        else:
            out.append(field[index])
            index += 1
    return "".join(out)


def filesystem_type(path: Path, mountinfo: Path | None = None) -> str | None:
    """The type of the filesystem holding ``path`` (``ext4``, ``nfs4``...); None if unknown."""
    try:
        lines = (mountinfo or MOUNTINFO).read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, kind = "", None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        point = _unescape(fields[4])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, right.split()[0]
    return kind


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL (None for another database or an in-memory one)."""
    if not database_url.startswith("sqlite"):
        return None
    _, _, rest = database_url.partition(":///")
    path = rest.split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def refusal(config: Config, mountinfo: Path | None = None) -> str | None:
    """Why this configuration cannot run with a shared Redis; None when it can.

    The rule: with ``HOSTGATE_REDIS_URL`` and SQLite, the SQLite file must be on a
    local filesystem (several workers on one machine). A network filesystem is
    refused: nodes on several hosts need PostgreSQL. Several hosts each with a
    local SQLite file of its own cannot be told apart from one host from here; the
    guide says so.
    """
    if not config.redis_url or not config.is_sqlite:
        return None
    database = sqlite_file(config.resolved_database_url)
    if database is None:
        return (
            "HOSTGATE_REDIS_URL is set but the database is an in-memory SQLite one, which "
            "no other process can share; use PostgreSQL (HOSTGATE_DATABASE_URL)"
        )
    kind = filesystem_type(database.parent, mountinfo)
    if kind in NETWORK_FILESYSTEMS:
        return (
            f"HOSTGATE_REDIS_URL is set and the SQLite database {database} is on a network "
            f"filesystem ({kind}). SQLite is only supported on a local disk, shared by the "
            "workers of one machine; gateway nodes on several hosts need PostgreSQL "
            "(HOSTGATE_DATABASE_URL). See docs/admin.md, Scaling out."
        )
    return None
