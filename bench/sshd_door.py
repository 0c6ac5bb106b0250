"""The SSH front door's speed: OpenSSH's own clients through the door vs straight to sshd.

.venv/bin/python bench/sshd_door.py [--mib 1024] [--cat-mib 64] [--rounds 1]

One sshd, one gateway (``hostgate serve`` with the door on a free port). Each figure
is the same OpenSSH client (``sftp``, ``scp``, ``ssh``) moving the same file straight
to the sshd and through the door (``User=bench:box``), in alternation:

- ``sftp`` download and upload of ``--mib`` MiB (the door relays the SFTP stream and
  records its file events);
- ``scp`` (SFTP mode, OpenSSH's default) download, and legacy ``scp -O`` download;
- ``cat`` of a ``--cat-mib`` MiB text file on a PTY (``ssh -tt``): a recorded terminal
  session through the door.

Beside each ratio: the gateway's CPU seconds per GiB moved through the door and its RSS
growth (the peak while the door's transfers ran, over its RSS before them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import Row, cpu_seconds, free_port, hostgate_server, print_table, rss_mib, text_file  # noqa: E402
from files_smb_ftp import BLOCK, MIB, PASSWORD, block  # noqa: E402

GIB = 2**30
TARGET = ">= 0.9x"
SSH_OPTIONS = (
    "-F",
    "/dev/null",
    "-o",
    "BatchMode=yes",
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    "GlobalKnownHostsFile=/dev/null",
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "IdentityAgent=none",
)


class Side:
    """One way to the sshd: straight, or through the door."""

    cipher = ""
    """``-c`` of every client (``--cipher``), else OpenSSH's default choice."""

    def __init__(self, name: str, port: int, user: str, key: Path, hosts: Path) -> None:
        self.name = name
        self.port = port
        self.user = user
        self.key = key
        self.hosts = hosts

    def options(self) -> list[str]:
        return [
            *SSH_OPTIONS,
            "-o",
            f"UserKnownHostsFile={self.hosts}",
            "-o",
            f"User={self.user}",
            "-i",
            str(self.key),
            *(["-c", self.cipher] if self.cipher else []),
        ]

    def run(self, *command: str, stdin: Path | None = None) -> float:
        """Run a client to its end; its wall-clock seconds (it must succeed)."""
        began = time.perf_counter()
        with open(stdin or os.devnull, "rb") as source:
            done = subprocess.run(
                command, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        elapsed = time.perf_counter() - began
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: {command[0]} failed: {done.stderr.decode()[-500:]}")
        return elapsed

    def sftp(self, batch: str, workdir: Path) -> float:
        script = workdir / f"{self.name}.sftp"
        script.write_text(batch)
        sftp = shutil.which("sftp") or "sftp"
        return self.run(sftp, *self.options(), "-P", str(self.port), "-b", str(script), "127.0.0.1")

    def scp(self, *args: str, legacy: bool) -> float:
        scp = shutil.which("scp") or "scp"
        mode = "-O" if legacy else "-s"
        return self.run(scp, mode, *self.options(), "-P", str(self.port), *args)

    def ssh(self, *args: str) -> float:
        ssh = shutil.which("ssh") or "ssh"
        return self.run(ssh, *self.options(), "-p", str(self.port), "127.0.0.1", *args)


@contextmanager
def peak_rss(pid: int) -> Iterator[list[float]]:
    """The process tree's peak RSS (MiB) while the block runs, sampled every 50 ms."""
    peak = [rss_mib(pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            peak[0] = max(peak[0], rss_mib(pid))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


def make_file(path: Path, size: int) -> None:
    data = block()
    with path.open("wb") as handle:
        for _ in range(max(1, size // BLOCK)):
            handle.write(data)


def measure(args: argparse.Namespace) -> list[Row]:
    """Start the peers, then each figure in ``--rounds`` alternating rounds."""
    from testsupport.sshd import TEST_USER, start_sshd

    size = max(1, args.mib * MIB // BLOCK) * BLOCK
    work = Path(tempfile.mkdtemp(prefix="hg-bench-door-"))
    server = start_sshd()
    door_port = free_port()
    try:
        remote = server.home / f"bench-door-{uuid.uuid4().hex[:6]}"
        remote.mkdir()
        shutil.chown(remote, TEST_USER)
        source = work / "source.bin"
        make_file(source, size)
        shutil.copyfile(source, remote / "big.bin")
        text_file(remote / "text.txt", args.cat_mib)
        cat_size = (remote / "text.txt").stat().st_size
        for path in remote.iterdir():
            shutil.chown(path, TEST_USER)
        direct_key = work / "direct_key"
        direct_key.write_text(server.private_key)
        direct_key.chmod(0o600)
        direct_hosts = work / "direct_hosts"
        host_key = server.host_key_path.with_suffix(".pub")
        if not host_key.exists():
            subprocess.run(
                ["ssh-keygen", "-y", "-f", str(server.host_key_path)],
                stdout=host_key.open("w"),
                check=True,
            )
        direct_hosts.write_text(f"[127.0.0.1]:{server.port} {host_key.read_text().strip()}\n")
        door_key = work / "door_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(door_key)], check=True
        )
        env = {"HOSTGATE_SSHD_LISTEN": f"127.0.0.1:{door_port}"}
        with hostgate_server(extra_env=env) as served:
            api = httpx.Client(base_url=f"{served.url}/api/v1", timeout=60)
            token = api.post(
                "/auth/setup",
                json={"username": "bench", "password": PASSWORD, "displayName": "Bench"},
            ).json()["token"]
            api.headers["Authorization"] = f"Bearer {token}"
            api.post(
                "/connections",
                json={
                    "name": "box",
                    "protocol": "ssh",
                    "host": server.host,
                    "port": server.port,
                    "username": server.username,
                    "password": server.password,
                },
            ).raise_for_status()
            public = (door_key.with_suffix(".pub")).read_text().strip()
            api.post(
                "/profile/ssh-keys", json={"publicKey": public, "name": "bench"}
            ).raise_for_status()
            keys = api.get("/sshd/host-keys").json()
            door_hosts = work / "door_hosts"
            door_hosts.write_text(
                "".join(f"[127.0.0.1]:{keys['port']} {k['publicKey']}\n" for k in keys["hostKeys"])
            )
            direct = Side("direct", server.port, server.username, direct_key, direct_hosts)
            door = Side("door", door_port, "bench:box", door_key, door_hosts)
            return run_figures(args, served.pid, direct, door, remote, source, size, cat_size, work)
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(server.home / "bench-door", ignore_errors=True)
        for leftover in server.home.glob("bench-door-*"):
            shutil.rmtree(leftover, ignore_errors=True)


def run_figures(
    args: argparse.Namespace,
    pid: int,
    direct: Side,
    door: Side,
    remote: Path,
    source: Path,
    size: int,
    cat_size: int,
    work: Path,
) -> list[Row]:
    figures: list[tuple[str, int, Callable[[Side], float]]] = [
        ("sftp download", size, lambda side: side.sftp(f"get {remote}/big.bin /dev/null\n", work)),
        (
            "sftp upload",
            size,
            lambda side: side.sftp(f"put {source} {remote}/up-{side.name}.bin\n", work),
        ),
        (
            "scp download",
            size,
            lambda side: side.scp(f"127.0.0.1:{remote}/big.bin", "/dev/null", legacy=False),
        ),
        (
            "scp -O download",
            size,
            lambda side: side.scp(f"127.0.0.1:{remote}/big.bin", "/dev/null", legacy=True),
        ),
        (
            "cat on a PTY",
            cat_size,
            lambda side: side.ssh("-tt", f"cat {remote}/text.txt"),
        ),
    ]
    rows: list[Row] = []
    baseline_rss = rss_mib(pid)
    peak_all = baseline_rss
    for name, moved, run in figures:
        ratios: list[float] = []
        speeds: dict[str, list[float]] = {"direct": [], "door": []}
        cpu = 0.0
        for _ in range(args.rounds):
            speeds["direct"].append(moved / MIB / run(direct))
            before = cpu_seconds(pid)
            with peak_rss(pid) as peak:
                speeds["door"].append(moved / MIB / run(door))
            cpu += cpu_seconds(pid) - before
            peak_all = max(peak_all, peak[0])
            ratios.append(speeds["door"][-1] / speeds["direct"][-1])
        door_speed = sorted(speeds["door"])[len(speeds["door"]) // 2]
        direct_speed = sorted(speeds["direct"])[len(speeds["direct"]) // 2]
        ratio = sorted(ratios)[len(ratios) // 2]
        rows.append(Row(f"door {name}", door_speed, "MiB/s", direct_speed, TARGET, ratio))
        rows.append(Row(f"door {name} gateway CPU", cpu / (moved * args.rounds / GIB), "s/GiB"))
        print(f"  {name}: door {door_speed:.1f} MiB/s, direct {direct_speed:.1f} MiB/s", flush=True)
    rows.append(Row("door gateway RSS growth", peak_all - baseline_rss, "MiB", target="< 64"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="file size for sftp and scp")
    parser.add_argument("--cat-mib", type=int, default=64, help="text file size for cat")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--cipher", default="", help="ssh -c for every client (default: OpenSSH's own choice)"
    )
    args = parser.parse_args()
    Side.cipher = args.cipher
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs", flush=True)
    print_table(measure(args))


if __name__ == "__main__":
    main()
