"""ssh_config tests: this pack, the ssh pack (a real sshd logs in) and, for the
export through the front door, the sshd pack."""

from __future__ import annotations

import hostgate_ssh.plugin as ssh_plugin
import hostgate_sshconfig.plugin as sshconfig_plugin
import pytest

from testsupport import hypothesis_profile  # noqa: F401
from testsupport.sshd import private_sshd, sshd  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [ssh_plugin, sshconfig_plugin]
