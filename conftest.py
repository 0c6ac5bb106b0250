"""Fixtures shared by the kernel tests and every pack's tests."""

pytest_plugins = [
    "testsupport.fixtures",
    "testsupport.postgres",
    "testsupport.redisd",
    "testsupport.haproxy",
    "testsupport.jumpnet",
]
