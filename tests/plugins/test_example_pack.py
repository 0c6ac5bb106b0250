"""The example third-party pack, installed from its own directory, is found, listed and used."""

import importlib.metadata
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hostgate.adapters import TerminalSize
from hostgate.app import create_app, kernel_of

from testsupport.gateway import GatewayProcess

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "hostgate-echo"


@pytest.fixture(scope="module")
def echo_installed():
    uv = Path(sys.executable).parent / "uv"
    command = [
        str(uv),
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--python",
        sys.executable,
        str(EXAMPLE),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    yield
    subprocess.run([str(uv), "pip", "uninstall", "-q", "--python", sys.executable, "hostgate-echo"])


@pytest.fixture
def broken_pack(tmp_path):
    """A pack whose dependency is missing: an entry point to a module that cannot import."""
    (tmp_path / "hostgate_broken.py").write_text("import dependency_that_is_not_installed\n")
    dist = tmp_path / "hostgate_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hostgate-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[hostgate]\nbroken = hostgate_broken\n")
    return tmp_path


def test_plugins_command_lists_example_and_failed_pack(echo_installed, broken_pack, run_cli):
    env = {"PYTHONPATH": f"{broken_pack}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    code, out, err = run_cli("plugins", "--json", env=env)
    assert code == 0, err
    packs = {p["name"]: p for p in json.loads(out)["plugins"]}
    assert packs["echo"]["state"] == "loaded"
    assert packs["echo"]["distribution"] == "hostgate-echo"
    assert "protocols:echo" in packs["echo"]["provides"]
    assert packs["echo"]["settings"] == ["echo.shout"]
    assert packs["echo"]["permissions"] == ["connections.use_echo"]
    assert packs["broken"]["state"] == "failed"
    assert "dependency_that_is_not_installed" in packs["broken"]["reason"]
    code, out, _ = run_cli("plugins", env=env)
    assert code == 0 and "echo" in out and "failed" in out
    assert "settings echo.shout" in out and "permissions connections.use_echo" in out


def test_plugins_command_honours_disable_list(echo_installed, run_cli):
    code, out, _ = run_cli("plugins", "--json", env={"HOSTGATE_DISABLE_PLUGINS": "echo"})
    packs = {p["name"]: p for p in json.loads(out)["plugins"]}
    assert code == 0 and packs["echo"]["state"] == "disabled"


async def test_example_pack_is_used_by_the_app(echo_installed, config):
    app = create_app(config.with_overrides(load_entry_points=True))
    async with app.test_app():
        kernel = kernel_of(app)
        assert "echo" in kernel.protocols
        assert "connections.use_echo" in kernel.permission_groups["connections"]
        client = app.test_client()
        body = await (await client.get("/api/v1/echo/ping")).get_json()
        assert body == {"pong": True, "shout": False}
        await kernel.settings.update({"echo.shout": True})
        spec = kernel.protocols["echo"]
        terminal = await spec.open_terminal(kernel, None, TerminalSize(80, 24))
        assert await terminal.read() == b"echo ready\r\n"
        await terminal.write(b"hello")
        assert await terminal.read() == b"HELLO"
        await terminal.resize(TerminalSize(100, 30))
        assert await terminal.read() == b"[100x30]"


def bundled_packs() -> dict[str, str]:
    """Every pack under ``plugins/``: entry-point name -> distribution, from its pyproject."""
    packs = {}
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        for name in project["entry-points"]["hostgate"]:
            packs[name] = project["name"]
    return packs


def test_plugins_command_lists_every_bundled_pack_loaded(
    run_cli: Callable[..., tuple[int, str, str]],
) -> None:
    """``hostgate plugins`` (text and --json) shows each bundled pack loaded, with its version.

    The list of packs comes from the repository's ``plugins/*/pyproject.toml``,
    the versions from the installed distributions' metadata.
    """
    expected = bundled_packs()
    assert set(expected) >= {"ssh", "telnet", "vnc", "rdp", "smb", "ftp"}
    assert set(expected) >= {"ldap", "oidc", "passkey", "smtp", "chat"}
    code, out, err = run_cli("plugins", "--json")
    assert code == 0, err
    listed = {p["name"]: p for p in json.loads(out)["plugins"]}
    for name, distribution in expected.items():
        pack = listed[name]
        assert pack["state"] == "loaded" and not pack["reason"], pack
        assert pack["distribution"] == distribution
        assert pack["version"] == importlib.metadata.version(distribution) and pack["version"]
        assert pack["provides"], pack
    code, out, err = run_cli("plugins")
    assert code == 0, err
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line[:1].strip()}
    for name, distribution in expected.items():
        version = importlib.metadata.version(distribution)
        assert lines[name] == [name, distribution, version, "loaded"]


def test_serve_starts_despite_a_pack_that_fails_to_load(tmp_path: Path, broken_pack: Path) -> None:
    """A real ``hostgate serve`` with a pack whose import fails answers /api/v1/health.

    The failure is logged with the pack's name and the reason, and the bundled
    packs still serve (a connection of a bundled pack's protocol is accepted).
    """
    pythonpath = f"{broken_pack}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    gateway = GatewayProcess(tmp_path / "data", env={"PYTHONPATH": pythonpath}).start()
    try:
        health = httpx.get(f"{gateway.url}/api/v1/health", timeout=30)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        token = gateway.setup_admin()
        created = httpx.post(
            f"{gateway.url}/api/v1/connections",
            json={"name": "box", "protocol": "ssh", "host": "127.0.0.1", "username": "u"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert created.status_code == 201, created.text
    finally:
        gateway.stop()
    assert gateway.process is not None and gateway.process.returncode == 0
    log = gateway.log()
    assert "plugin broken failed to load" in log and "dependency_that_is_not_installed" in log
    assert gateway.unhandled() == []
