"""RDP pack tests: a real xrdp server, the pack registered in the app."""

from __future__ import annotations

import pytest
from hostgate_rdp import plugin as rdp_plugin

from testsupport.xrdp import xrdp  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [rdp_plugin]
