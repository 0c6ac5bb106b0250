"""`pip install hostgate-kernel hostgate-ssh hostgate-web` alone makes a gateway serving the app.

The three wheels are built from this tree (the web wheel carries the built app), installed
into a fresh virtual environment with nothing else of hostgate, and `hostgate serve` from
that environment must serve the app at `/` with SSH (and its SFTP side) as the only
protocols. The build uses uv's cache offline (as `scripts/dev.py setup` left it); the
third-party dependencies are installed at the versions uv.lock pins, from the package
registry (a fresh machine's cache holds the locked wheels but not the registry's index
pages that `uv pip install` resolves pins against); the resolver then checks, offline,
that the wheels' own requirements are met by them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from testsupport.gateway import GatewayProcess

ROOT = Path(__file__).resolve().parents[3]
UV = Path(sys.executable).parent / "uv"
PACKS = {"hostgate-kernel": "kernel", "hostgate-ssh": "plugins/ssh", "hostgate-web": "plugins/web"}


def uv(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [str(UV), *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, f"uv {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the kernel, ssh and web wheels and their dependencies only."""
    work = tmp_path_factory.mktemp("wheel-install")
    wheels = work / "wheels"
    for source in PACKS.values():
        uv("build", "--wheel", "--offline", "--out-dir", str(wheels), str(ROOT / source), cwd=ROOT)
    pins = work / "requirements.txt"
    packages = [arg for name in PACKS for arg in ("--package", name)]
    uv(
        "export", "--frozen", "--no-hashes", "--no-dev", "--no-emit-workspace",
        *packages, "--output-file", str(pins), "--quiet",
        cwd=ROOT,
    )  # fmt: skip
    env = work / "venv"
    uv("venv", "--quiet", "--python", sys.executable, str(env), cwd=work)
    python = str(env / "bin" / "python")
    built = sorted(str(w) for w in wheels.glob("*.whl"))
    uv("pip", "install", "--no-deps", "--python", python, "-r", str(pins), *built,
       cwd=work)  # fmt: skip
    # the resolver, offline, finds the three requirements met by what is installed
    uv("pip", "install", "--offline", "--python", python, "--find-links", str(wheels), *PACKS,
       cwd=work)  # fmt: skip
    assert "All installed packages are compatible" in uv(
        "pip", "check", "--python", python, cwd=work
    )
    return env


def test_the_three_wheels_install_alone(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    freeze = uv("pip", "freeze", "--python", python, cwd=venv)
    ours = [re.split(r"[ =@]", line)[0] for line in freeze.splitlines()]
    assert sorted(n for n in ours if n.startswith("hostgate")) == sorted(PACKS), freeze
    # the web wheel carries the built app, not its sources
    where = "import hostgate_web, pathlib; print(pathlib.Path(hostgate_web.__file__).parent)"
    site = subprocess.run(
        [python, "-c", where], capture_output=True, text=True, check=True
    ).stdout.strip()
    static = Path(site) / "static"
    assert (static / "index.html").is_file()
    assert list((static / "assets").glob("index-*.js"))
    assert not (Path(site) / "ui").exists()


def test_hostgate_serve_from_that_venv_serves_the_app_with_only_ssh(
    venv: Path, tmp_path: Path
) -> None:
    gateway = GatewayProcess(tmp_path / "data", python=str(venv / "bin" / "python")).start()
    try:
        page = httpx.get(gateway.url + "/", timeout=30)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in page.headers["content-security-policy"]
        scripts = re.findall(r'src="(/assets/index-[^"]+\.js)"', page.text)
        assert scripts, page.text
        asset = httpx.get(gateway.url + scripts[0], timeout=30)
        assert asset.status_code == 200 and "javascript" in asset.headers["content-type"]
        assert httpx.get(gateway.url + "/connections/x/files", timeout=30).text == page.text

        token = gateway.setup_admin()
        protocols = httpx.get(
            gateway.url + "/api/v1/protocols",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        ).json()["protocols"]
        assert sorted(p["name"] for p in protocols) == ["sftp", "ssh"]
        assert {p["name"]: p["terminal"] for p in protocols} == {"sftp": False, "ssh": True}
    finally:
        gateway.stop()
    assert not gateway.unhandled(), gateway.unhandled()
