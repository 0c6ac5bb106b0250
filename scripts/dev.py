#!/usr/bin/env python3
"""One command each: ``python3 scripts/dev.py serve`` and ``python3 scripts/dev.py test``
(``setup`` and ``lint`` run their parts alone).

Sets up everything that is missing, then runs. Needs only Python 3.11+ and the
package registries; as root it installs the Debian servers the tests talk to.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / "bin"

# Real peers the test suite starts on 127.0.0.1 (binaries only; services stay stopped).
TEST_DEBIAN_PACKAGES = [
    "openssh-server",
    "openssh-client",
    "samba",
    "smbclient",
    "vsftpd",
    "slapd",
    "ldap-utils",
    "postgresql",
    "tigervnc-standalone-server",
    "inetutils-telnetd",
    "asciinema",
    "xrdp",
    # several gateway nodes (docs/admin.md "Scaling out"): the shared Redis, and the
    # load balancer the multi-node tests put in front of them
    "redis-server",
    "haproxy",
    # jump-host tests put their servers in a network namespace (ip netns)
    "iproute2",
    # the browser app's end-to-end tests drive Debian's Chromium (Playwright cannot
    # download its own here); a font so screenshots show text
    "chromium",
    "fonts-dejavu-core",
    # recordings in object storage: a one-node Ceph (monitor, in-memory OSD, radosgw)
    # is the S3-compatible server the tests start (testsupport/s3server.py)
    "radosgw",
    "ceph-mon",
    "ceph-osd",
    # bench/api.py's load generator (its Python fallback saturates before the server does)
    "wrk",
]
# Commands whose presence shows each package is installed.
PROBES = {
    "openssh-server": "/usr/sbin/sshd",
    "openssh-client": "/usr/bin/ssh-keygen",
    "samba": "/usr/sbin/smbd",
    "smbclient": "/usr/bin/smbclient",
    "vsftpd": "/usr/sbin/vsftpd",
    "slapd": "/usr/sbin/slapd",
    "ldap-utils": "/usr/bin/ldapadd",
    "postgresql": "/usr/lib/postgresql",
    "tigervnc-standalone-server": "/usr/bin/Xtigervnc",
    "inetutils-telnetd": "/usr/sbin/telnetd",
    "asciinema": "/usr/bin/asciinema",
    "xrdp": "/usr/sbin/xrdp",
    "redis-server": "/usr/bin/redis-server",
    "haproxy": "/usr/sbin/haproxy",
    "wrk": "/usr/bin/wrk",
    "radosgw": "/usr/bin/radosgw",
    "ceph-mon": "/usr/bin/ceph-mon",
    "ceph-osd": "/usr/bin/ceph-osd",
    "iproute2": "/bin/ip",
    "chromium": "/usr/bin/chromium",
    "fonts-dejavu-core": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
}


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def run(*cmd: str, env: dict[str, str] | None = None, check: bool = True) -> int:
    return subprocess.run(cmd, cwd=ROOT, env=env, check=check).returncode


# The locks apt and dpkg take; another apt-get (a machine's first-boot updates, another
# checkout's setup) holds them for minutes, and `apt-get update` refuses at once then.
APT_LOCKS = (
    Path("/var/lib/dpkg/lock-frontend"),
    Path("/var/lib/dpkg/lock"),
    Path("/var/lib/apt/lists/lock"),
    Path("/var/cache/apt/archives/lock"),
)
APT_LOCK_WAIT_SECONDS = 900


def wait_for_locks(locks: tuple[Path, ...], timeout: float) -> bool:
    """Wait until nobody holds any of ``locks`` (fcntl locks, as apt and dpkg take them);
    False after ``timeout`` seconds. A lock file that does not exist is free."""
    deadline = time.monotonic() + timeout
    told = False
    for lock in locks:
        while True:
            try:
                fd = os.open(lock, os.O_RDWR)
            except FileNotFoundError:
                break
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break  # free (closing the file below lets go of it again)
            except OSError:
                if time.monotonic() > deadline:
                    return False
                if not told:
                    say(f"waiting for another apt or dpkg to finish ({lock} is held)")
                    told = True
                time.sleep(1)
            finally:
                os.close(fd)
    return True


def apt_get(*args: str) -> None:
    """``apt-get ARGS`` once no other apt or dpkg runs (they share one lock)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ("apt-get", "-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_SECONDS}", *args)
    # Another apt may take the lists lock between the wait and the run (apt-get update
    # does not wait for it): wait again and retry while that is why it failed.
    for _ in range(3):
        wait_for_locks(APT_LOCKS, APT_LOCK_WAIT_SECONDS)
        if run(*command, env=env, check=False) == 0:
            return
    run(*command, env=env)


def ensure_debian_packages() -> None:
    missing = [pkg for pkg in TEST_DEBIAN_PACKAGES if not Path(PROBES[pkg]).exists()]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        say(f"cannot install {', '.join(missing)} (need root and apt-get); tests needing them fail")
        return
    say(f"installing Debian packages: {' '.join(missing)}")
    apt_get("update", "-q")
    # another apt may have installed some meanwhile (the wait above)
    missing = [pkg for pkg in missing if not Path(PROBES[pkg]).exists()]
    if missing:
        apt_get("install", "-y", "-q", "--no-install-recommends", *missing)
    # Debian starts some daemons on install; the tests start their own.
    for service in (
        "ssh",
        "smbd",
        "nmbd",
        "vsftpd",
        "slapd",
        "postgresql",
        "xrdp",
        "xrdp-sesman",
        "redis-server",
        "haproxy",
    ):
        subprocess.run(["service", service, "stop"], capture_output=True)


def ensure_venv(dev: bool) -> None:
    if not (BIN / "python").exists():
        say("creating .venv")
        run(sys.executable, "-m", "venv", str(VENV))
    if not (BIN / "uv").exists():
        say("installing uv into .venv")
        run(str(BIN / "python"), "-m", "pip", "install", "-q", "uv")
    say("syncing Python packages")
    args = [
        str(BIN / "uv"),
        "sync",
        "--all-packages",
        "--frozen",
        "--compile-bytecode",
        "--python",
        str(BIN / "python"),
    ]
    if not dev:
        # Node and npm (the `ui` group) build the browser app for serve too
        args += ["--no-dev", "--group", "ui"]
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(VENV)}
    run(*args, env=env)
    # Byte-compile our own sources too: every CLI subprocess then starts fast, even
    # where PYTHONDONTWRITEBYTECODE is set.
    sources = [str(p) for p in (ROOT / "kernel" / "src", ROOT / "testsupport") if p.exists()]
    sources += [str(p) for p in sorted((ROOT / "plugins").glob("*/src"))]
    run(str(BIN / "python"), "-m", "compileall", "-q", *sources, env=_bytecode_env())
    build_web_assets()


def build_web_assets() -> None:
    """Compile the browser app (plugins/web/ui) when its assets are missing or stale."""
    if (ROOT / "plugins" / "web" / "ui" / "package.json").exists():
        run(str(BIN / "python"), "-m", "hostgate_web.assets", env=_bytecode_env())


def _bytecode_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def serve(extra: list[str]) -> int:
    ensure_venv(dev=False)
    say("starting hostgate on http://127.0.0.1:7443 (Ctrl+C stops)")
    return subprocess.call([str(BIN / "hostgate"), "serve", *extra], cwd=ROOT)


# how many of the slowest tests (setup, call, teardown) each test run lists at its end
SLOWEST_SHOWN = 40

LINT_CHECKS = [
    ["ruff", "check", "-q", "."],
    ["ruff", "format", "--check", "-q", "."],
    ["mypy"],
    ["lint-imports", "--no-cache"],
]


def lint() -> int:
    """ruff (lint and format), mypy and the import-linter layers over the whole tree."""
    say("linting: ruff check, ruff format --check, mypy, lint-imports")
    failed = 0
    for name, *args in LINT_CHECKS:
        failed |= subprocess.call([str(BIN / name), *args], cwd=ROOT, env=_bytecode_env())
    return failed


def start_lint() -> list[tuple[str, subprocess.Popen[bytes]]]:
    """Start every lint check in the background (their output is kept for later).

    The checks run beside the test suite: on two cores the suite leaves spare CPU while
    it waits on its servers, and mypy alone takes a minute on a clean clone.
    """
    return [
        (
            " ".join(check),
            subprocess.Popen(
                [str(BIN / check[0]), *check[1:]],
                cwd=ROOT,
                env=_bytecode_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            ),
        )
        for check in LINT_CHECKS
    ]


def finish_lint(running: list[tuple[str, subprocess.Popen[bytes]]]) -> int:
    """Wait for the background checks; print each one's output and say which failed."""
    failed = 0
    for name, process in running:
        output, _ = process.communicate()
        if output.strip():
            sys.stdout.write(output.decode(errors="replace"))
        if process.returncode:
            say(f"lint failed: {name}")
            failed = 1
    return failed


def pytest_command(extra: list[str]) -> list[str]:
    """The suite's pytest command line: ``extra`` after the slowest-tests report.

    ``--durations=40`` puts the 40 slowest tests in every log (a CI log is often all there
    is to tell where the suite's time went); an ``extra`` ``--durations`` overrides it.
    """
    return [str(BIN / "python"), "-m", "pytest", f"--durations={SLOWEST_SHOWN}", *extra]


PATCHES_OFF_TESTS = (
    "tests/kernel/test_compat.py",
    "tests/kernel/test_socketreads.py",
    "tests/kernel/test_shutdown_upload.py",
    "tests/services/sessions/test_socket_deflate.py",
    "tests/services/sessions/files/test_request_body.py",
    "tests/services/sessions/files/test_file_routes.py",
)
"""Tests through the paths ``hostgate._compat`` patches (HTTP bodies, WebSockets, file
transfers), run a second time with every patch off: the stock libraries must do too."""


def worker_options(extra: list[str]) -> list[str]:
    """pytest-xdist options for a whole-suite run: ``HOSTGATE_TEST_WORKERS`` workers
    (default 3), at most one more than the machine has cores, a module's tests on one
    worker (``loadfile``: module-scoped gateways and servers are shared as written). A run
    that picks its own tests, names ``-n`` itself or sets the variable to 1 stays in one
    process.

    One more worker than cores: the tests wait on real servers, browsers and sockets for
    about a third of the run (2 workers kept CI's 2 cores 62 % busy), and the suite passed
    whole at a load of 9-15 (ci13), so a third worker fills the waits."""
    wanted = int(os.environ.get("HOSTGATE_TEST_WORKERS", "3"))
    workers = min(wanted, (os.cpu_count() or 1) + 1)
    picks = [arg for arg in extra if "::" in arg or (ROOT / arg).exists()]
    if workers < 2 or picks or any(arg == "-n" or arg.startswith("-n") for arg in extra):
        return []
    # --no-loadscope-reorder: xdist would otherwise hand out modules by test count, most
    # first, which put the fuzz and several-node modules (few tests, minutes each) last
    # and left one worker on them alone at the end; the conftest's order puts them first
    return ["-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder"]


def patches_off_command(extra: list[str]) -> list[str] | None:
    """The second run's command line (``extra``'s options), or None when ``extra`` picks
    its own tests (a path or node id): then only those run."""
    picks = [arg for arg in extra if "::" in arg or (ROOT / arg).exists()]
    if picks:
        return None
    return pytest_command([*extra, *PATCHES_OFF_TESTS])


def test(extra: list[str]) -> int:
    ensure_debian_packages()
    ensure_venv(dev=True)
    say("linting in the background: " + ", ".join(check[0] for check in LINT_CHECKS))
    running = start_lint()
    say("running the test suite")
    command = pytest_command([*worker_options(extra), *extra])
    code = subprocess.call(command, cwd=ROOT, env=_bytecode_env())
    off = patches_off_command(extra)
    if off is not None:
        say("running the patched paths' tests again with HOSTGATE_COMPAT_PATCHES=off")
        env = {**_bytecode_env(), "HOSTGATE_COMPAT_PATCHES": "off"}
        off_code = subprocess.call(off, cwd=ROOT, env=env)
        # 5: a -k or -m of the caller's selected none of these tests
        code = code or (0 if off_code == 5 else off_code)
    say("lint results")
    lint_failed = finish_lint(running)
    return code or lint_failed


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in {"serve", "test", "setup", "lint"}:
        print("usage: python3 scripts/dev.py serve|test|setup|lint [args...]", file=sys.stderr)
        return 2
    command, extra = sys.argv[1], sys.argv[2:]
    if command == "serve":
        return serve(extra)
    if command == "setup":
        ensure_debian_packages()
        ensure_venv(dev=True)
        return 0
    if command == "lint":
        ensure_venv(dev=True)
        return lint()
    return test(extra)


if __name__ == "__main__":
    raise SystemExit(main())
