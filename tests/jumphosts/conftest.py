"""Jump hosts against real servers: sshd and telnetd in a network namespace that only a
jump sshd reaches (``testsupport.jumpnet``), with the ssh and telnet packs."""

from __future__ import annotations

import hostgate_ssh.plugin as ssh_plugin
import hostgate_telnet.plugin as telnet_plugin
import pytest

from testsupport.sshd import sshd  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [ssh_plugin, telnet_plugin]
