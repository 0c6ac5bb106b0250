import pytest
from hostgate_telnet import plugin as telnet_plugin

from testsupport.telnetd import telnetd, telnetd_echoing  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [telnet_plugin]
