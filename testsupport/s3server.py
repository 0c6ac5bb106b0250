"""A real S3-compatible server for tests on loopback: Ceph's radosgw, else moto's server.

``radosgw`` (Debian's ``radosgw ceph-mon ceph-osd``, bookworm: Ceph 16.2) is started as
a single-node cluster in a temporary directory: one monitor (no cephx, msgr v1 on a free
port), one OSD on ``memstore`` (objects in memory, pool size 1), and the gateway on
``beast``, with one S3 user made by ``radosgw-admin``; about 10-30 seconds, once per
test module that uses it, and one cluster on a machine at a time (a lock file). Where
the Ceph programs are not installed, moto's standalone server (``moto[server]`` from the
dev group) runs instead: it speaks the same S3 REST API (SigV4, multipart uploads with
UploadPartCopy, ListMultipartUploads, ranged GETs) over real HTTP in its own process,
but it is a model of S3, not an object store (docs/admin.md "Recordings in object
storage" names its limits). ``HOSTGATE_TEST_S3=radosgw`` or ``=moto`` picks one.

``s3_server`` (module scope) gives each test module its own server and bucket;
``started_s3()`` starts a server for other scopes. When none starts,
``peer_unavailable`` fails the test under ``CI=true`` and skips otherwise.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from testsupport.peers import (
    free_port,
    launch,
    launch_on_free_port,
    log_text,
    peer_unavailable,
    stop,
    wait_for_port,
    which,
)

ACCESS_KEY = "hostgate-test"
SECRET_KEY = "hostgate-test-secret"
REGION = "us-east-1"


CEPH_PROGRAMS = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "monmaptool")
CEPH_START_SECONDS = 90.0
"""How long the cluster may take to come up (10-30 s on a loaded 2-core machine)."""


@dataclass
class S3Server:
    """A running S3-compatible server (``kind``) and the bucket made for the test module."""

    port: int
    bucket: str
    process: subprocess.Popen[bytes] | None
    directory: Path
    kind: str = "moto"
    prefixes: list[str] = field(default_factory=list)

    def with_bucket(self) -> S3Server:
        """The same server with a fresh bucket of its own."""
        server = S3Server(
            self.port, f"hostgate-{uuid.uuid4().hex[:8]}", self.process, self.directory, self.kind
        )
        client = server.client()
        try:
            client.create_bucket(Bucket=server.bucket)
        finally:
            client.close()
        return server

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def config(self, prefix: str | None = None) -> dict[str, Any]:
        """Config overrides for recordings in this bucket under a fresh (or given) prefix."""
        prefix = prefix or uuid.uuid4().hex[:12]
        self.prefixes.append(prefix)
        return {
            "recordings_url": f"s3://{self.bucket}/{prefix}",
            "s3_endpoint_url": self.endpoint,
            "s3_region": REGION,
            "s3_access_key_id": ACCESS_KEY,
            "s3_secret_access_key": SECRET_KEY,
        }

    def suspend_user(self, *, suspended: bool = True) -> None:
        """Suspend (or enable again) the S3 user: every request then fails (radosgw only).

        An outage a test can start and end: radosgw answers 403 ``UserSuspended`` until
        the user is enabled again. moto has no users to suspend.
        """
        if self.kind != "radosgw":
            peer_unavailable("radosgw", "suspending the S3 user needs radosgw (not moto)")
        command = [
            "radosgw-admin",
            "-c",
            str(self.directory / "ceph.conf"),
            "user",
            "suspend" if suspended else "enable",
            "--uid=hostgate",
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def client(self) -> Any:
        """A plain (synchronous) botocore client, to look at the bucket from a test."""
        from botocore.session import get_session

        return get_session().create_client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )


MEMSTORE_BYTES = 512 * 1024 * 1024
"""What the test cluster's OSD holds (in memory); a bench asks for more."""


def _ceph_conf(
    directory: Path, fsid: str, mon_port: int, rgw_port: int, memstore_bytes: int
) -> Path:
    # the OSD's ports: its own range, not 6800-7300, which two clusters (a test run
    # and a bench) would share, each OSD then talking to the other cluster's
    osd_ports = random.randrange(20000, 30000)
    conf = directory / "ceph.conf"
    conf.write_text(
        f"""[global]
fsid = {fsid}
mon host = v1:127.0.0.1:{mon_port}
auth cluster required = none
auth service required = none
auth client required = none
osd objectstore = memstore
memstore device bytes = {memstore_bytes}
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd crush chooseleaf type = 0
mon warn on pool no redundancy = false
ms bind ipv6 = false
ms bind port min = {osd_ports}
ms bind port max = {osd_ports + 40}
run dir = {directory}/run
log file = {directory}/$name.log
admin socket = {directory}/run/$name.asok
mon data = {directory}/mon-$id
osd data = {directory}/osd-$id
rgw data = {directory}/rgw
[osd]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
"""
    )
    return conf


def _run(command: list[str], log: Path, timeout: float) -> bool:
    with log.open("ab") as out:
        try:
            return (
                subprocess.run(
                    command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
                ).returncode
                == 0
            )
        except subprocess.TimeoutExpired:
            return False


@contextlib.contextmanager
def started_radosgw(memstore_bytes: int = MEMSTORE_BYTES) -> Iterator[S3Server]:
    """A single-node Ceph cluster (monitor, memstore OSD, radosgw), stopped after."""
    missing = [name for name in CEPH_PROGRAMS if which(name, "/usr/bin") is None]
    if missing:
        peer_unavailable("radosgw", f"not installed: {', '.join(missing)}")
    directory = Path(tempfile.mkdtemp(prefix="hostgate-ceph-"))
    (directory / "run").mkdir()
    (directory / "rgw").mkdir()
    (directory / "osd-0").mkdir()
    log = directory / "setup.log"
    fsid = str(uuid.uuid4())
    mon_port, rgw_port = free_port(), free_port()
    conf = str(_ceph_conf(directory, fsid, mon_port, rgw_port, memstore_bytes))
    processes: list[subprocess.Popen[bytes]] = []
    deadline = time.monotonic() + CEPH_START_SECONDS
    try:
        monmap = str(directory / "monmap")
        address = f"[v1:127.0.0.1:{mon_port}]"
        ok = _run(
            ["monmaptool", "--create", "--addv", "a", address, "--fsid", fsid, monmap], log, 30
        ) and _run(["ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap, "-c", conf], log, 30)
        if not ok:
            _did_not_start(log, directory)
        monitor = ["ceph-mon", "-f", "-i", "a", "-c", conf]
        processes.append(launch("ceph-mon", monitor, log, mon_port))
        # the OSD's own uuid, given to both: the monitor then knows the OSD that boots
        osd_uuid = str(uuid.uuid4())
        ok = _run(
            ["ceph", "-c", conf, "--connect-timeout", "30", "osd", "create", osd_uuid], log, 40
        )
        ok = ok and _run(
            ["ceph-osd", "-i", "0", "--mkfs", "--osd-uuid", osd_uuid, "-c", conf], log, 40
        )
        if not ok:
            _did_not_start(log, directory)
        with log.open("ab") as out:
            osd = subprocess.Popen(
                ["ceph-osd", "-f", "-i", "0", "-c", conf], stdout=out, stderr=subprocess.STDOUT
            )
            processes.append(osd)
            gateway = subprocess.Popen(
                ["radosgw", "-f", "-c", conf, "-n", "client.rgw"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            processes.append(gateway)
        # radosgw listens once the OSD is up; an OSD that stopped fails the start at once
        while not wait_for_port(rgw_port, 1.0, process=gateway):
            if osd.poll() is not None or gateway.poll() is not None:
                _did_not_start(log, directory)
            if time.monotonic() > deadline:
                _did_not_start(log, directory)
        made = _run(
            [
                "radosgw-admin",
                "-c",
                conf,
                "user",
                "create",
                "--uid=hostgate",
                "--display-name=hostgate",
                f"--access-key={ACCESS_KEY}",
                f"--secret-key={SECRET_KEY}",
            ],  # fmt: skip
            log,
            max(1.0, deadline - time.monotonic()),
        )
        if not made:
            _did_not_start(log, directory)
        server = S3Server(rgw_port, "", None, directory, "radosgw").with_bucket()
    except (pytest.fail.Exception, pytest.skip.Exception) as failed:
        # what the monitor and the OSD said about fsids and who listens on the monitor's
        # port: the clue for an OSD that met another cluster's monitor ("wrong fsid")
        diagnosis = _ceph_diagnosis(directory, mon_port)
        for process in reversed(processes):
            stop(process, timeout=10)
        shutil.rmtree(directory, ignore_errors=True)
        peer_unavailable("radosgw", f"{str(failed).removeprefix(UNAVAILABLE)}\n{diagnosis}")
    try:
        yield server
    finally:
        for process in reversed(processes):
            stop(process, timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


def _did_not_start(log: Path, directory: Path) -> NoReturn:
    tail = log_text(log)[-2000:]
    peer_unavailable("radosgw", f"did not start: {tail}")


UNAVAILABLE = "real peer radosgw unavailable: "

CLUE = ("fsid", "monmap", "handle_command", "bind", "hunting", "mon.a", "auth")


def _ceph_diagnosis(directory: Path, mon_port: int) -> str:
    """The lines of the cluster's logs that tell which monitor an OSD met, and who
    listens on the monitor's port, for a start that failed."""
    lines = [f"diagnosis (monitor port {mon_port}):"]
    for path in sorted(directory.glob("*.log")):
        if path.name == "setup.log":
            continue
        found = [x for x in log_text(path).splitlines() if any(c in x for c in CLUE)]
        lines += [f"-- {path.name}", *found[-15:]]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        listening = subprocess.run(
            ["ss", "-Hltnp"], capture_output=True, text=True, timeout=10
        ).stdout.splitlines()
        lines.append("-- listening")
        lines += [x for x in listening if f":{mon_port} " in x or "ceph" in x or "rados" in x]
    return "\n".join(lines)


@contextlib.contextmanager
def started_moto() -> Iterator[S3Server]:
    """A fresh moto server (everything in memory) with one bucket, stopped after."""
    try:
        import moto.server  # noqa: F401 - the server's own package (the dev group's moto[server])
    except ImportError:
        peer_unavailable("moto_server", "not installed (moto[server], the dev group)")
    directory = Path(tempfile.mkdtemp(prefix="hostgate-s3-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        process, port = launch_on_free_port(
            "moto_server",
            lambda port: [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            directory / "s3.log",
            timeout=60.0,
        )
        yield S3Server(port, "", process, directory, "moto").with_bucket()
    finally:
        stop(process)
        shutil.rmtree(directory, ignore_errors=True)


def s3_kind() -> str:
    """``radosgw`` where the Ceph programs are installed (or asked for), else ``moto``."""
    chosen = os.environ.get("HOSTGATE_TEST_S3", "").strip().lower()
    if chosen in ("radosgw", "moto"):
        return chosen
    return "radosgw" if all(which(n, "/usr/bin") for n in CEPH_PROGRAMS) else "moto"


@contextlib.contextmanager
def started_s3(memstore_bytes: int = MEMSTORE_BYTES) -> Iterator[S3Server]:
    """The S3-compatible server ``s3_kind`` names, with one bucket (radosgw: that much room).

    A radosgw start that fails is tried once more: Debian's radosgw crashed once while
    starting (a segmentation fault in its io_context_pool thread) in a fresh-clone run,
    and a second start in a new directory is a new cluster. A second failure fails.
    """
    if s3_kind() != "radosgw":
        with started_moto() as server:
            yield server
        return
    for attempt in (1, 2):
        stack = contextlib.ExitStack()
        try:
            server = stack.enter_context(started_radosgw(memstore_bytes))
        except pytest.fail.Exception:
            stack.close()
            if attempt == 2:
                raise
            continue
        with stack:
            yield server
        return


CEPH_LOCK = Path(tempfile.gettempdir()) / "hostgate-ceph.lock"
"""Held while a test's Ceph cluster runs: one cluster on a machine at a time."""


@contextlib.contextmanager
def one_cluster_at_a_time() -> Iterator[None]:
    """Wait for any other Ceph cluster a test started on this machine to stop.

    Two clusters side by side (two xdist workers, or two checkouts' suites) went wrong
    in a full run: the second one's OSD reached the first one's monitor ("wrong
    fsid") and aborted. moto servers need no such care.
    """
    if s3_kind() != "radosgw":
        yield
        return
    import fcntl

    with CEPH_LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """This module's S3-compatible server with a fresh bucket, stopped after the module.

    Per module rather than per session so that the machine-wide lock above is held
    only while a module uses it (a start costs 10-30 s with radosgw).
    """
    with one_cluster_at_a_time(), started_s3() as server:
        yield server
