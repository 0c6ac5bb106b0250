"""Which modules a fresh process holds once an app with one pack has started and answered.

The login packs import their protocol libraries (ldap3, authlib, py_webauthn)
where a login first needs them, not at start, and the kernel its terminal
emulator (pyte) and QR code maker; their tests check that here, in a child
process, since the test process itself has imported everything.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SCRIPT = """
import asyncio, importlib, json, sys
from pathlib import Path
from hostgate.app import create_app
from hostgate.config import Config
from hostgate.testing import TEST_KEY, TEST_SETTING_DEFAULTS, PatientTestApp

packs = [importlib.import_module(sys.argv[1])] if sys.argv[1] else []
data, then = Path(sys.argv[2]), sys.argv[3]
config = Config(data_dir=data, encryption_key=TEST_KEY, load_entry_points=False,
                version_timeout_seconds=1.0, setting_defaults=TEST_SETTING_DEFAULTS)

async def main():
    app = create_app(config, plugins=packs)
    async with PatientTestApp(app):
        answer = await app.test_client().get("/api/v1/auth/providers")
        assert answer.status_code == 200, answer.status_code
        started = sorted(sys.modules)
        exec(then, {})
    print(json.dumps([started, sorted(sys.modules)]))

asyncio.run(main())
"""


@dataclass(frozen=True)
class Loaded:
    """Top-level package names in ``sys.modules``: after start, and after ``then`` ran."""

    started: frozenset[str]
    then: frozenset[str]


def _packages(names: list[str]) -> frozenset[str]:
    return frozenset(name.split(".")[0] for name in names)


def loaded_after_start(pack: str, template_db: Path, work: Path, then: str = "") -> Loaded:
    """Start an app with the plugin module ``pack`` (none: ``""``) in a child process, answer
    one request (``GET /auth/providers``), then run the statements ``then``; what was imported
    by each point.
    """
    data = work / "lazy-data"
    data.mkdir()
    shutil.copy(template_db, data / "hostgate.db")
    child = subprocess.run(
        [sys.executable, "-c", SCRIPT, pack, str(data), then],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    started, after = json.loads(child.stdout.splitlines()[-1])
    return Loaded(_packages(started), _packages(after))
