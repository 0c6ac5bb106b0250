"""Fixtures shared by the kernel tests and every pack's tests."""

import os

# The SSH front door (hostgate-sshd) listens on 127.0.0.1:2222 by default; the
# gateways the tests start (in process and ``hostgate serve``) leave it off unless a
# test turns it on (plugins/sshd/tests), so they neither race for the port nor each
# make host keys.
os.environ.setdefault("HOSTGATE_SSHD_LISTEN", "off")

pytest_plugins = [
    "testsupport.fixtures",
    "testsupport.postgres",
    "testsupport.redisd",
    "testsupport.s3server",
    "testsupport.haproxy",
    "testsupport.jumpnet",
]
