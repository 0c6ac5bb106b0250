import pytest
from hostgate_ssh import plugin as ssh_plugin

from plugins.ssh.tests.sftp_support import workdir  # noqa: F401
from tests.services.sessions.live import live_server  # noqa: F401
from testsupport.asyncssh_server import asyncssh_sftp, asyncssh_sftp_plain  # noqa: F401
from testsupport.asyncssh_shell import asyncssh_shell  # noqa: F401
from testsupport.hostile.ssh import hostile_ssh  # noqa: F401
from testsupport.sshd import private_sshd, sshd  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [ssh_plugin]
