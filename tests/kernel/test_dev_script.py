"""``scripts/dev.py test``: the pytest run lists the slowest tests in every log; setup
waits for another apt to finish."""

import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def dev_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_script", ROOT / "scripts" / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(command: list[str], cwd: Path) -> str:
    """Run a pytest command line in ``cwd`` (pytest's own plugins only: a second each
    instead of the installed ones' 3 s of CPU); its output."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_test_command_reports_the_40_slowest_tests_unless_told_otherwise(tmp_path):
    dev = dev_script()
    (tmp_path / "test_two.py").write_text(
        "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n"
    )
    command = dev.pytest_command(["-q", "-p", "no:cacheprovider", "test_two.py"])
    assert command[-4:] == ["-q", "-p", "no:cacheprovider", "test_two.py"]
    assert "slowest 40 durations" in run(command, tmp_path)
    # a --durations of the caller's comes later on the line and wins
    assert "slowest 1 durations" in run(dev.pytest_command(["-q", "--durations=1"]), tmp_path)


def test_the_test_command_runs_the_patched_paths_again_with_the_patches_off():
    dev = dev_script()
    command = dev.patches_off_command(["-q", "-p", "no:cacheprovider"])
    assert command is not None
    assert command[-len(dev.PATCHES_OFF_TESTS) :] == list(dev.PATCHES_OFF_TESTS)
    assert all((ROOT / path).is_file() for path in dev.PATCHES_OFF_TESTS)
    assert "-q" in command and "tests/kernel/test_compat.py" in command
    # a run of chosen tests stays that run
    assert dev.patches_off_command(["-q", "tests/kernel/test_docs.py"]) is None
    assert dev.patches_off_command(["tests/kernel/test_docs.py::test_x"]) is None


def test_setup_waits_for_another_apt_to_let_go_of_its_lock(tmp_path):
    """A fresh machine's own apt-get (first-boot updates) held the lists lock once when
    the suite's setup ran ``apt-get update``, which refused at once: setup now waits."""
    dev = dev_script()
    locks = (tmp_path / "lock-frontend", tmp_path / "absent", tmp_path / "lists-lock")
    for lock in (locks[0], locks[2]):
        lock.touch()
    holder = subprocess.Popen(  # another process: fcntl locks are per process
        [
            sys.executable,
            "-c",
            f"import fcntl,os,sys; fd=os.open({str(locks[2])!r},os.O_RDWR); "
            "fcntl.lockf(fd,fcntl.LOCK_EX); print('held',flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert dev.wait_for_locks(locks, timeout=0.5) is False  # still held
        done = threading.Event()
        waiter = threading.Thread(
            target=lambda: done.set() if dev.wait_for_locks(locks, 120) else None
        )
        waiter.start()
        assert not done.wait(1.5)  # waits while the other holds it
        assert holder.stdin is not None
        holder.stdin.close()  # the other apt finishes
        waiter.join(120)
        assert done.is_set()
    finally:
        holder.kill()
        holder.wait()


def test_a_whole_suite_run_uses_three_workers_and_a_picked_test_runs_in_one_process(monkeypatch):
    dev = dev_script()
    monkeypatch.delenv("HOSTGATE_TEST_WORKERS", raising=False)
    monkeypatch.setattr(dev.os, "cpu_count", lambda: 8)
    assert dev.worker_options(["-q"]) == ["-n", "3", "--dist", "loadfile", "--no-loadscope-reorder"]
    assert dev.worker_options(["-q", "tests/kernel"]) == []
    assert dev.worker_options(["tests/kernel/test_dev_script.py::x"]) == []
    assert dev.worker_options(["-n", "4"]) == []
    monkeypatch.setenv("HOSTGATE_TEST_WORKERS", "1")
    assert dev.worker_options(["-q"]) == []
    monkeypatch.setenv("HOSTGATE_TEST_WORKERS", "4")
    monkeypatch.setattr(dev.os, "cpu_count", lambda: 2)
    assert dev.worker_options(["-q"]) == ["-n", "3", "--dist", "loadfile", "--no-loadscope-reorder"]
