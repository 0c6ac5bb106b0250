"""``hostgate new-pack NAME``: the generated pack passes its own tests and strict mypy at once.

The command runs in-process through the CLI's ``main()`` (what ``python -m hostgate``
runs), without a new interpreter importing hostgate per invocation; the generated
pack's tests and mypy run as subprocesses, as its author would run them, side by side.
Its tests get the pytest plugins of the pack's own ``test`` extra only (``hostgate-kernel
[testing]``: the test kit and pytest-asyncio), not every plugin of this repository's
environment: what a pack author has, and half the start-up CPU (schemathesis,
Hypothesis and Playwright's plugins are not imported).
"""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hostgate.cli import main


def new_pack(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``hostgate new-pack ARGS``: ``(code, stdout, stderr)``."""
    code = main(["new-pack", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_new_pack_passes_its_own_tests_and_mypy(tmp_path, capsys):
    code, out, err = new_pack(capsys, "weather_desk", "--directory", str(tmp_path))
    assert code == 0, err
    pack = tmp_path / "hostgate-weather-desk"
    assert (pack / "src" / "hostgate_weather_desk" / "plugin.py").is_file()
    assert (pack / "src" / "hostgate_weather_desk" / "py.typed").is_file()
    assert 'weather_desk = "hostgate_weather_desk.plugin"' in (pack / "pyproject.toml").read_text()
    # the README's `pip install -e '.[test]'` brings every tool it then runs
    project = tomllib.loads((pack / "pyproject.toml").read_text())["project"]
    assert any(req.startswith("mypy") for req in project["optional-dependencies"]["test"])
    readme = (pack / "README.md").read_text()
    assert "pip install -e '.[test]'" in readme and "mypy" in readme
    env = {**os.environ, "PYTHONPATH": str(pack / "src")}
    own_plugins = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    pytest_args = ["-p", "pytest_asyncio.plugin", "-p", "hostgate.testing"]
    mypy = Path(sys.executable).parent / "mypy"
    checks = {
        "tests": subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
            cwd=pack,
            env=own_plugins,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
        "mypy": subprocess.Popen(
            [str(mypy), "--cache-dir", str(tmp_path / "mypy-cache")],
            cwd=pack,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
    }
    try:
        outputs = {name: check.communicate(timeout=300)[0] for name, check in checks.items()}
    finally:
        for check in checks.values():
            check.kill()
            check.wait()
    assert checks["tests"].returncode == 0, outputs["tests"][-5000:]
    assert "5 passed" in outputs["tests"]
    assert checks["mypy"].returncode == 0, outputs["mypy"][-3000:]


def test_new_pack_refuses_bad_names_and_existing_directories(tmp_path, capsys):
    for name in ("Weather", "1pack", "has-dash", "a" * 41, ""):
        code, _, err = new_pack(capsys, name, "--directory", str(tmp_path))
        assert code == 2 and "is not a pack name" in err, name
    assert list(tmp_path.iterdir()) == []
    assert new_pack(capsys, "once", "--directory", str(tmp_path))[0] == 0
    code, _, err = new_pack(capsys, "once", "--directory", str(tmp_path))
    assert code == 1 and "already exists" in err
