"""The access pack's tests: the real ssh pack against a real sshd, and this pack."""

from __future__ import annotations

import hostgate_access.plugin as access_plugin
import hostgate_ssh.plugin as ssh_plugin
import pytest

from testsupport.sshd import sshd  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [ssh_plugin, access_plugin]
