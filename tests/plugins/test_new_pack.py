"""``hostgate new-pack NAME``: the generated pack passes its own tests and strict mypy at once.

The command runs in-process through the CLI's ``main()`` (what ``python -m hostgate``
runs), without a new interpreter importing hostgate per invocation; the generated
pack's tests and mypy run as subprocesses, as its author would run them.
"""

import os
import subprocess
import sys
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
    env = {**os.environ, "PYTHONPATH": str(pack / "src")}
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=pack,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "4 passed" in tests.stdout
    mypy = Path(sys.executable).parent / "mypy"
    typed = subprocess.run(
        [str(mypy), "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=pack,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert typed.returncode == 0, typed.stdout[-3000:]


def test_new_pack_refuses_bad_names_and_existing_directories(tmp_path, capsys):
    for name in ("Weather", "1pack", "has-dash", "a" * 41, ""):
        code, _, err = new_pack(capsys, name, "--directory", str(tmp_path))
        assert code == 2 and "is not a pack name" in err, name
    assert list(tmp_path.iterdir()) == []
    assert new_pack(capsys, "once", "--directory", str(tmp_path))[0] == 0
    code, _, err = new_pack(capsys, "once", "--directory", str(tmp_path))
    assert code == 1 and "already exists" in err
