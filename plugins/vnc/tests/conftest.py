"""VNC pack tests: real Xvnc servers, the pack registered in the app."""

from __future__ import annotations

import pytest
from hostgate_vnc import plugin as vnc_plugin

from testsupport.hostile.vnc import hostile_vnc  # noqa: F401
from testsupport.xvnc import xvnc, xvnc_open  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [vnc_plugin]
