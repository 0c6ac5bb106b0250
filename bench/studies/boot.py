"""Start-up cost: ``hostgate serve`` to its first 200, and an in-process app's build and start.

    .venv/bin/python bench/studies/boot.py [--rounds 10] [--baseline COMMIT]

``serve``: wall seconds from spawn to the first 200 of ``/health`` and the CPU
seconds the process used by then (``/proc/<pid>/stat``, less noisy under load),
for a first boot (empty data dir), a second start (the same dir) and a start on
a copied migrated, empty database (the e2e ``gateway`` fixture's). ``app``:
``create_app`` + start-up + shut-down of the suite's ``app`` fixture, in a child
process (median of 10, after one warm-up). ``first app``: the CPU seconds of a
fresh process from its first import to an app with every installed pack built,
started and answering one request (what a test process or a CLI command that
builds an app pays once: the imports). With ``--baseline`` the same rounds run
against that commit's kernel and packs, alternating, and the ratios print; this
tree then runs from a checkout of its ``HEAD`` as well (commit first): kernel and
packs on ``PYTHONPATH`` cost each start about 0.3 s CPU more than the installed
tree (13 more places to look for every module), so both sides pay it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from hostgate.testing import migrated_database  # noqa: E402

from bench._common import BENCH_KEY, checkout, cpu_seconds, free_port, median  # noqa: E402
from testsupport.gateway import write_test_config  # noqa: E402

APP_ROUNDS = """
import asyncio, shutil, statistics, sys, tempfile, time
from pathlib import Path
from hostgate.testing import migrated_database, TEST_KEY, TEST_SETTING_DEFAULTS
from hostgate.config import Config
from hostgate.app import create_app
tmp = Path(tempfile.mkdtemp()); template = migrated_database(tmp / "t.db")
async def one(i):
    d = tmp / f"d{i}"; d.mkdir(); shutil.copy(template, d / "hostgate.db")
    cfg = Config(data_dir=d, encryption_key=TEST_KEY, load_entry_points=False,
                 version_timeout_seconds=1.0, setting_defaults=TEST_SETTING_DEFAULTS)
    cpu, wall = time.process_time(), time.perf_counter()
    app = create_app(cfg, plugins=[])
    built = time.process_time()
    async with app.test_app():
        pass
    return time.perf_counter() - wall, built - cpu, time.process_time() - built
async def main():
    await one(0)
    rows = [await one(i) for i in range(1, 11)]
    print(*(statistics.median(r[k] for r in rows) for k in range(3)))
asyncio.run(main())
"""

FIRST_APP = """
import time
started = time.process_time()
import asyncio, shutil, sys, tempfile
from pathlib import Path
from hostgate.testing import TEST_KEY, TEST_SETTING_DEFAULTS
from hostgate.config import Config
from hostgate.app import create_app
data = Path(sys.argv[1])
cfg = Config(data_dir=data, encryption_key=TEST_KEY, load_entry_points=True,
             version_timeout_seconds=1.0, setting_defaults=TEST_SETTING_DEFAULTS)
async def main():
    app = create_app(cfg)
    async with app.test_app():
        assert (await app.test_client().get("/api/v1/auth/providers")).status_code == 200
asyncio.run(main())
print(time.process_time() - started)
"""


def env_for(source: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGATE_")}
    env.update(HOSTGATE_ENCRYPTION_KEY=BENCH_KEY, HOSTGATE_LOG_LEVEL="WARNING")
    if source is not None:
        paths = [source / "kernel" / "src", *sorted((source / "plugins").glob("*/src"))]
        env["PYTHONPATH"] = os.pathsep.join(str(path) for path in paths)
    return env


def serve_once(data: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds from spawn to the first 200."""
    port = free_port()
    env = {**env, "HOSTGATE_CONFIG": str(write_test_config(data.parent / "boot.toml"))}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "hostgate", "--data-dir", str(data), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(timeout=5) as client:
            while True:
                if process.poll() is not None:
                    raise RuntimeError("hostgate serve exited")
                try:
                    if client.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.01)
        return time.perf_counter() - started, cpu_seconds(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def app_once(env: dict[str, str]) -> tuple[float, float, float]:
    """Median wall, create_app CPU and start/stop CPU seconds of the app fixture's work."""
    out = subprocess.run(
        [sys.executable, "-c", APP_ROUNDS], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def first_app_once(template: Path, env: dict[str, str]) -> float:
    """CPU seconds of a fresh process to an all-pack app built, started and answering."""
    with tempfile.TemporaryDirectory() as work:
        shutil.copy(template, Path(work) / "hostgate.db")
        out = subprocess.run(
            [sys.executable, "-c", FIRST_APP, work],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return float(out.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--baseline", help="a commit to compare with, alternating rounds")
    args = parser.parse_args()
    with ExitStack() as stack:
        variants: dict[str, Path | None] = {"this": None}
        if args.baseline:
            variants = {
                "base": stack.enter_context(checkout(args.baseline)),
                "this": stack.enter_context(checkout("HEAD")),
            }
        results: dict[str, dict[str, list[float]]] = {name: {} for name in variants}
        template = migrated_database(
            Path(stack.enter_context(tempfile.TemporaryDirectory())) / "t.db"
        )
        for _ in range(args.rounds):
            for name, source in variants.items():
                env = env_for(source)
                work = Path(tempfile.mkdtemp(prefix="hg-boot-"))
                try:
                    first = serve_once(work / "data", env)
                    again = serve_once(work / "data", env)
                    (work / "copied").mkdir(mode=0o700)
                    shutil.copy(template, work / "copied" / "hostgate.db")
                    (work / "copied" / "hostgate.db").chmod(0o600)
                    copied = serve_once(work / "copied", env)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                row = results[name]
                for key, value in (
                    (
                        "first app in a process (imports, all packs), CPU s",
                        first_app_once(template, env),
                    ),
                    ("serve first boot, wall s", first[0]),
                    ("serve first boot, CPU s", first[1]),
                    ("serve second start, wall s", again[0]),
                    ("serve second start, CPU s", again[1]),
                    ("serve on a copied migrated database, wall s", copied[0]),
                    ("serve on a copied migrated database, CPU s", copied[1]),
                ):
                    row.setdefault(key, []).append(value)
        for name, source in variants.items():
            wall, build, start = app_once(env_for(source))
            results[name]["app fixture, wall s"] = [wall]
            results[name]["create_app, CPU s"] = [build]
            results[name]["start+stop, CPU s"] = [start]
    print(f"load: {os.getloadavg()}")
    names = list(variants)
    print("| measure | " + " | ".join(names) + (" | this/base |" if len(names) == 2 else " |"))
    print("|---" * (len(names) + 1 + (len(names) == 2)) + "|")
    for key in results["this"]:
        values = [median(results[name][key]) for name in names]
        cells = " | ".join(f"{v:.3f}" for v in values)
        ratio = f" | {values[1] / values[0]:.2f} |" if len(names) == 2 else " |"
        print(f"| {key} | {cells}{ratio}")


if __name__ == "__main__":
    main()
