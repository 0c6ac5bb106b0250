"""An S3-compatible server for tests: moto's standalone server on a loopback port.

Ceph's ``radosgw`` (Debian bookworm 16.2) is the real one reachable here, but it needs
a monitor, an OSD and the gateway brought up and keyed before the first request, far
beyond what one test module's fixture may take; moto's server speaks the S3 REST API
(SigV4, multipart uploads with UploadPartCopy, ListMultipartUploads, ranged GETs) over
real HTTP, in its own process, with everything in memory. Its limits are in
docs/admin.md ("Recordings in object storage").

``s3_server`` (module scope) starts one server with one fresh bucket per module;
``started_s3()`` does the same for other scopes. When moto is missing or does not
start, ``peer_unavailable`` fails the test under ``CI=true`` and skips otherwise.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from testsupport.peers import launch_on_free_port, peer_unavailable, stop

ACCESS_KEY = "hostgate-test"
SECRET_KEY = "hostgate-test-secret"
REGION = "us-east-1"


@dataclass
class S3Server:
    """A running S3-compatible server and the bucket made for the test module."""

    port: int
    bucket: str
    process: subprocess.Popen[bytes] | None
    directory: Path
    prefixes: list[str] = field(default_factory=list)

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


@contextlib.contextmanager
def started_s3() -> Iterator[S3Server]:
    """A fresh moto server with one bucket, stopped after."""
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
        server = S3Server(port, f"hostgate-{uuid.uuid4().hex[:8]}", process, directory)
        client = server.client()
        try:
            client.create_bucket(Bucket=server.bucket)
        finally:
            client.close()
        yield server
    finally:
        stop(process)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """One S3-compatible server and bucket for the module (see the module docstring)."""
    with started_s3() as server:
        yield server
