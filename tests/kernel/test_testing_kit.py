"""The pack author's test kit starts its app with the patient harness the suite uses too."""

from __future__ import annotations

import gc

import pytest
from hostgate.config import Config
from hostgate.testing import HARNESS_SECONDS, PatientTestApp
from quart import Quart
from quart.testing.app import DEFAULT_TIMEOUT
from quart.testing.app import TestApp as QuartTestApp


@pytest.fixture
def hostgate_config(hostgate_config: Config, monkeypatch: pytest.MonkeyPatch) -> Config:
    """As in a pack's own suite: Quart's default harness, not this suite's patched one."""
    monkeypatch.setattr(Quart, "test_app_class", QuartTestApp)
    return hostgate_config


async def test_the_kit_app_runs_under_the_patient_harness(hostgate_app: Quart) -> None:
    running = [o for o in gc.get_objects() if isinstance(o, QuartTestApp) and o.app is hostgate_app]
    assert [type(harness) for harness in running] == [PatientTestApp]
    assert running[0].startup_timeout == running[0].shutdown_timeout == HARNESS_SECONDS
    assert HARNESS_SECONDS > DEFAULT_TIMEOUT


def test_the_suite_uses_the_kit_harness() -> None:
    """One implementation: every ``app.test_app()`` of the suite is the kit's harness."""
    assert Quart.test_app_class is PatientTestApp
