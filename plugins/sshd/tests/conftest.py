from collections.abc import Iterator

import pytest
from hostgate_ssh import plugin as ssh_plugin
from hostgate_sshd import plugin as sshd_plugin

from testsupport.sshd import private_sshd, sshd  # noqa: F401


@pytest.fixture
def door_listens_on_a_free_port(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test's gateway listens on a port of its own (never 2222, shared by the machine)."""
    monkeypatch.setenv("HOSTGATE_SSHD_LISTEN", "127.0.0.1:0")
    yield


@pytest.fixture
def plugins(door_listens_on_a_free_port: None) -> list[object]:
    return [ssh_plugin, sshd_plugin]
