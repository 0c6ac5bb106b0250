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

LONG_MODULES_FIRST = (
    "plugins/web/tests/e2e/",
    "tests/fuzz/",
    "tests/cluster/",
    "tests/load/",
    "tests/faults/",
)
"""Where the modules that hold a worker for minutes live (browser, fuzz, several nodes)."""


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, start the long modules first.

    Workers take whole modules (``--dist loadfile``) in collection order; a long
    module collected last keeps one worker busy while the other has nothing left, so
    the long ones go first and the short ones fill in at the end. The sort is stable:
    a module's tests keep their order. Every worker sorts alike (xdist requires it).
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    root = str(config.rootpath) + "/"

    def rank(item) -> int:
        path = str(item.path).removeprefix(root)
        return 0 if path.startswith(LONG_MODULES_FIRST) else 1

    items.sort(key=rank)
