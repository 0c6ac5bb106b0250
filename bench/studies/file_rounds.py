"""File relays in alternating rounds: direct client vs gateway variants, profiles, the curve.

.venv/bin/python bench/studies/file_rounds.py [--size 1024] [--rounds 3] [--only sftp,smb,ftp]
    [--variant-at NAME COMMIT]... [--profile DIR]
    [--parallel 1,8 --curve-size 256] [--gateway-log DIR] [--smb-uploads upload,replace,in-place]

Each protocol's real peer (OpenSSH sshd, smbd, vsftpd; testsupport launchers)
serves the same file (``--size`` MiB of random bytes). Every round moves it
once with the protocol's Python client (asyncssh, smbprotocol's ``smbclient``,
aioftp: the baseline) and once through each gateway variant (a real
``hostgate serve`` each; ``/api/v1/<protocol>/<id>/upload|download`` with curl),
upload then download, the order of the variants rotating from round to round.
Printed per protocol and direction: the median MB/s, the median of the
per-round ratios to the direct client, CPU seconds per GiB (the gateway
process and its children for a variant, this process for the direct client:
steadier than MB/s on a shared machine) and the gateway's largest RSS growth
during a transfer; then the CPU seconds per GiB of the file server (its
processes and what they forked, sampled by ``TreeCpu``) and, through the
gateway, of curl: where the rest of the machine's two cores went.
``current`` is the code as it is; ``--variant-at base COMMIT`` starts another
gateway running the kernel and packs of another commit (``git archive``), so a
change (a tunable's new value too: commit it) is measured on and off against the
same peers in the same run.

SMB uploads are measured into a deleted target by default, for the direct
client and the gateway alike (the row ``upload``; why in ``upload_ways``).
``--smb-uploads`` names the rows to measure in each round: ``upload``;
``replace``, both clients replacing the previous round's file the way the
gateway does (a temporary file renamed over it); ``in-place``, the direct
client overwriting its file in place while the gateway replaces (how this
benchmark compared them before 2026-11-28).

``--profile DIR`` records the ``current`` gateway with py-spy during one more
transfer per protocol and direction (flame graph SVGs, 100 samples/s, native
frames off), after the rounds. ``--parallel 1,8`` measures the curve instead:
N transfers through the ``current`` gateway at once (each on its own stored
connection, so the per-user pool of 4 sessions does not queue them), each of
``--curve-size`` MiB: aggregate MB/s and gateway CPU seconds per GiB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import TreeCpu, checkout, children_cpu, cpu_seconds, hostgate_server, median  # noqa: E402
from files_smb_ftp import BLOCK, MIB, Gateway, RssSampler, source_file  # noqa: E402

GIB = 2**30
PROTOCOLS = ("sftp", "smb", "ftp")
Transfer = Callable[[], Coroutine[Any, Any, int]]


@dataclass
class Peer:
    """A running file server, its direct client, and what the gateway needs to reach it."""

    protocol: str
    connection: dict[str, object]
    directory: str
    direct_upload: Transfer
    direct_download: Transfer
    local: Callable[[str], Path]
    """The server-side file behind a gateway path (to check an upload's size)."""
    pid: int
    """The server's main process (its CPU and that of the processes it forks count)."""
    direct_target: Path | None = None
    """The server-side file the direct client uploads to: set, uploads are measured in the
    rows ``--smb-uploads`` names; None: one ``upload`` row over the previous round's file."""
    direct_replace: Transfer | None = None
    """The direct client's upload done as the gateway does it: a temporary file renamed
    over the previous round's (the ``replace`` row)."""


@contextmanager
def sftp_peer(source: Path) -> Iterator[Peer]:
    import asyncssh
    from hostgate_ssh.sftp import TRANSFER_CIPHERS

    from testsupport.sshd import start_sshd

    size = source.stat().st_size
    server = start_sshd()
    direct = server.home / "direct.bin"

    async def client() -> asyncssh.SSHClientConnection:
        return await asyncssh.connect(
            server.host,
            server.port,
            username=server.username,
            password=server.password,
            known_hosts=None,
            client_keys=(),
            agent_path=None,
            config=None,
            encryption_algs=TRANSFER_CIPHERS,
        )

    async def upload() -> int:
        async with await client() as connection, connection.start_sftp_client() as sftp:
            await sftp.put(str(source), str(direct))
        return size

    async def download() -> int:
        async with await client() as connection, connection.start_sftp_client() as sftp:
            await sftp.get(str(direct), os.devnull)
        return size

    try:
        yield Peer(
            "sftp",
            {
                "protocol": "sftp",
                "host": server.host,
                "port": server.port,
                "username": server.username,
                "password": server.password,
            },
            str(server.home),
            upload,
            download,
            Path,
            server.process.pid if server.process else 0,
        )
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


@contextmanager
def smb_peer(source: Path) -> Iterator[Peer]:
    import smbclient

    from testsupport.peers import stop
    from testsupport.samba import start_samba

    size = source.stat().st_size
    server, process = start_samba(Path(tempfile.mkdtemp(prefix="hg-bench-smb-")))
    unc = rf"\\{server.host}\files"
    kwargs = {"username": server.username, "password": server.password, "port": server.port}
    cache: dict[str, object] = {}
    smbclient.register_session(server.host, connection_cache=cache, **kwargs)

    async def upload() -> int:
        with (
            source.open("rb") as local,
            smbclient.open_file(
                rf"{unc}\direct.bin", mode="wb", connection_cache=cache, **kwargs
            ) as handle,
        ):
            while data := local.read(BLOCK):
                handle.write(data)
        return size

    async def replace() -> int:
        temporary = rf"{unc}\.direct.bin.part"
        with (
            source.open("rb") as local,
            smbclient.open_file(temporary, mode="wb", connection_cache=cache, **kwargs) as handle,
        ):
            while data := local.read(BLOCK):
                handle.write(data)
        smbclient.replace(temporary, rf"{unc}\direct.bin", connection_cache=cache, **kwargs)
        return size

    async def download() -> int:
        moved = 0
        with smbclient.open_file(
            rf"{unc}\direct.bin", mode="rb", buffering=0, connection_cache=cache, **kwargs
        ) as handle:
            while chunk := handle.read(BLOCK):
                moved += len(chunk)
        return moved

    try:
        yield Peer(
            "smb",
            {
                "protocol": "smb",
                "host": server.host,
                "port": server.port,
                "username": server.username,
                "password": server.password,
                "extraConfig": {"share": "files"},
            },
            "",
            upload,
            download,
            lambda path: server.share_dir("files") / path.lstrip("/"),
            process.pid,
            server.share_dir("files") / "direct.bin",
            replace,
        )
    finally:
        smbclient.reset_connection_cache(connection_cache=cache)
        stop(process)


@contextmanager
def ftp_peer(source: Path) -> Iterator[Peer]:
    import aioftp

    from testsupport.ftpd import start_vsftpd
    from testsupport.peers import stop

    size = source.stat().st_size
    server, process = start_vsftpd(Path(tempfile.mkdtemp(prefix="hg-bench-ftp-")))

    async def upload() -> int:
        async with (
            aioftp.Client.context(server.host, server.port) as client,
            client.upload_stream("/pub/direct.bin") as stream,
        ):
            with source.open("rb") as local:
                while data := local.read(BLOCK):
                    await stream.write(data)
        return size

    async def download() -> int:
        moved = 0
        async with (
            aioftp.Client.context(server.host, server.port) as client,
            client.download_stream("/pub/direct.bin") as stream,
        ):
            async for chunk in stream.iter_by_block(BLOCK):
                moved += len(chunk)
        return moved

    try:
        yield Peer(
            "ftp",
            {"protocol": "ftp", "host": server.host, "port": server.port},
            "/pub",
            upload,
            download,
            server.local,
            process.pid,
        )
    finally:
        stop(process)


PEERS = {"sftp": sftp_peer, "smb": smb_peer, "ftp": ftp_peer}


@dataclass
class Samples:
    """One way's readings, one per round (ftp_relay_ceiling.py's too): MB/s, CPU per GiB
    of the measured process, ratio to the direct way, the server's and curl's CPU per GiB."""

    speeds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    server_cpu: list[float] = field(default_factory=list)
    curl_cpu: list[float] = field(default_factory=list)
    rss: float = 0.0


def gateway_list(gateway: Gateway, protocol: str, connection_id: str, path: str) -> None:
    import httpx

    response = httpx.post(
        f"{gateway.url}/api/v1/{protocol}/{connection_id}/list",
        json={"path": path},
        headers=gateway.headers,
        timeout=60,
    )
    response.raise_for_status()


def run_timed(run: Transfer) -> tuple[float, int]:
    started = time.perf_counter()
    moved = asyncio.run(run())
    return time.perf_counter() - started, moved


def direct_once(run: Transfer, server: TreeCpu) -> tuple[float, float]:
    """(MB/s, CPU seconds per GiB) of the direct client in this process.

    ``server`` samples the file server meanwhile; its thread's CPU is not the client's.
    """
    cpu = time.process_time()
    with server:
        seconds, moved = run_timed(run)
    used = time.process_time() - cpu - server.overhead
    return moved / 1e6 / seconds, used * GIB / moved


def gateway_once(
    gateway: Gateway, run: Transfer, server: TreeCpu | None = None
) -> tuple[float, float, float]:
    """(MB/s, gateway CPU seconds per GiB, RSS growth MiB) of one transfer."""
    cpu = cpu_seconds(gateway.pid, tree=True)
    with RssSampler(gateway.pid) as sampler, server or contextlib.nullcontext():
        seconds, moved = run_timed(run)
    return (
        moved / 1e6 / seconds,
        (cpu_seconds(gateway.pid, tree=True) - cpu) * GIB / moved,
        sampler.growth,
    )


@contextmanager
def profiled(pid: int, svg: Path) -> Iterator[None]:
    """py-spy recording the gateway while the block runs; the SVG is written on exit."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    process = subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--rate", "100", "--output", str(svg), "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(1.0)  # attach before the transfer starts
    try:
        yield
    finally:
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=120)
        if process.returncode not in (0, -signal.SIGINT) or not svg.exists():
            print(f"py-spy failed for {svg.name}: {errors.decode(errors='replace')[-400:]}")


UPLOAD_ROWS = ("upload", "replace", "in-place")


def upload_ways(peer: Peer, directions: tuple[str, ...], rows: str) -> list[str]:
    """The rows to measure for ``directions``: for SMB, the upload rows of ``rows``.

    The direct client overwrites its file (the server truncates it, then writes into the
    page-cache pages just freed); the gateway writes a temporary file and renames it over
    the old one, so the server needs new pages and frees the old ones after. On a VM that
    hands free memory back to its host (free page reporting, as here) new pages cost the
    server about 2 s of CPU per GiB in host faults (docs/performance-log/2026-11-lab-notes.md,
    2026-11-28 07:30).
    ``upload`` deletes the previous copy first, for both clients alike; ``replace`` has the
    direct client replace its file as the gateway does; ``in-place`` compares them as they are.
    """
    ways: list[str] = []
    for direction in directions:
        if direction == "upload" and peer.direct_target is not None:
            ways += [row for row in rows.split(",") if row]
        else:
            ways.append(direction)
    return ways


def rounds(
    peer: Peer,
    source: Path,
    gateways: dict[str, Gateway],
    count: int,
    profile: Path | None,
    directions: tuple[str, ...] = ("upload", "download"),
    upload_rows: str = "upload",
) -> list[str]:
    """Alternating rounds for one protocol; the printed lines of its table."""
    size = source.stat().st_size
    ids = {
        name: gw.connection({"name": f"bench {name}", **peer.connection})
        for name, gw in gateways.items()
    }
    paths = {name: f"{peer.directory}/gw-{name}-{uuid.uuid4().hex[:6]}.bin" for name in gateways}
    names = list(gateways)
    for name, gateway in gateways.items():
        # the first request opens the session (handshake, host-key trust); transfers reuse it
        gateway_list(gateway, peer.protocol, ids[name], peer.directory or "/")
    if "upload" not in directions:  # the files to download
        asyncio.run(peer.direct_upload())
        for name, gateway in gateways.items():
            asyncio.run(gateway.upload(peer.protocol, ids[name], paths[name], source))
    samples: dict[tuple[str, str], Samples] = {}
    ways = upload_ways(peer, directions, upload_rows)
    for index in range(count):
        order = names[index % len(names) :] + names[: index % len(names)]
        for way in ways:
            direction = "download" if way == "download" else "upload"
            fresh = way == "upload" and peer.direct_target is not None
            direct = samples.setdefault(("direct", way), Samples())
            run = peer.direct_upload if direction == "upload" else peer.direct_download
            if way == "replace" and peer.direct_replace is not None:
                run = peer.direct_replace
            if fresh and peer.direct_target is not None:
                peer.direct_target.unlink(missing_ok=True)
            server = TreeCpu(peer.pid)
            speed, cpu = direct_once(run, server)
            direct.server_cpu.append(server.seconds * GIB / size)
            direct.speeds.append(speed)
            direct.cpu.append(cpu)
            for name in order:
                gateway = gateways[name]
                if direction == "upload":
                    transfer: Transfer = lambda g=gateway, n=name: g.upload(  # noqa: E731
                        peer.protocol, ids[n], paths[n], source
                    )
                else:
                    transfer = lambda g=gateway, n=name: g.download(  # noqa: E731
                        peer.protocol, ids[n], paths[n]
                    )
                mine = samples.setdefault((name, way), Samples())
                if fresh:
                    peer.local(paths[name]).unlink(missing_ok=True)
                server, curl_cpu = TreeCpu(peer.pid), children_cpu()
                speed_gw, cpu_gw, rss = gateway_once(gateway, transfer, server)
                mine.server_cpu.append(server.seconds * GIB / size)
                mine.curl_cpu.append((children_cpu() - curl_cpu) * GIB / size)
                mine.speeds.append(speed_gw)
                mine.cpu.append(cpu_gw)
                mine.ratios.append(speed_gw / speed)
                mine.rss = max(mine.rss, rss)
                if direction == "upload":
                    got = peer.local(paths[name]).stat().st_size
                    assert got == size, f"{name}: the upload wrote {got} of {size} bytes"
    if profile is not None:
        gateway = gateways[names[0]]
        for direction in directions:
            svg = profile / f"{peer.protocol}-{direction}.svg"
            with profiled(gateway.pid, svg):
                if direction == "upload":
                    asyncio.run(
                        gateway.upload(peer.protocol, ids[names[0]], paths[names[0]], source)
                    )
                else:
                    asyncio.run(gateway.download(peer.protocol, ids[names[0]], paths[names[0]]))
    lines = []
    for way in ways:
        direct = samples[("direct", way)]
        lines.append(
            f"{peer.protocol:<4} {way:<8} {'direct':<12} {median(direct.speeds):>9,.1f}"
            f" {'':>7} {median(direct.cpu):>8.2f} {'':>8} {median(direct.server_cpu):>8.2f}"
        )
        for name in names:
            mine = samples[(name, way)]
            lines.append(
                f"{peer.protocol:<4} {way:<8} {name:<12} {median(mine.speeds):>9,.1f}"
                f" {median(mine.ratios):>6.2f}x {median(mine.cpu):>8.2f} {mine.rss:>8.1f}"
                f" {median(mine.server_cpu):>8.2f} {median(mine.curl_cpu):>8.2f}"
            )
    return lines


def curve(peer: Peer, source: Path, gateway: Gateway, counts: list[int]) -> list[str]:
    """N transfers at once through one gateway, each way: aggregate MB/s and CPU s/GiB."""
    size = source.stat().st_size
    most = max(counts)
    ids = [gateway.connection({"name": f"curve {i}", **peer.connection}) for i in range(most)]
    paths = [f"{peer.directory}/curve-{i}-{uuid.uuid4().hex[:6]}.bin" for i in range(most)]
    # the first file request loads the protocol's modules: not part of a transfer's memory
    gateway_list(gateway, peer.protocol, ids[0], peer.directory or "/")
    lines = []
    for direction in ("upload", "download"):
        for n in counts:

            async def together(n: int = n, direction: str = direction) -> int:
                if direction == "upload":
                    jobs = [
                        gateway.upload(peer.protocol, ids[i], paths[i], source) for i in range(n)
                    ]
                else:
                    jobs = [gateway.download(peer.protocol, ids[i], paths[i]) for i in range(n)]
                return sum(await asyncio.gather(*jobs))

            speed, cpu, rss = gateway_once(gateway, together)
            if direction == "upload":
                for i in range(n):
                    assert peer.local(paths[i]).stat().st_size == size
            lines.append(
                f"{peer.protocol:<4} {direction:<8} {n:>3} at once {speed:>9,.1f}"
                f" {cpu:>8.2f} {rss:>8.1f}"
            )
    return lines


def gateway_log(directory: Path | None, name: str) -> Path | None:
    """``DIR/<variant>.log`` when ``--gateway-log DIR`` was given."""
    if directory is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{name}.log"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="file size in MiB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(PROTOCOLS))
    parser.add_argument(
        "--variant-at",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "COMMIT"),
        help="a gateway running the kernel and packs of another commit",
    )
    parser.add_argument("--profile", type=Path)
    parser.add_argument(
        "--gateway-log", type=Path, metavar="DIR", help="keep each gateway's output in DIR"
    )
    parser.add_argument("--direction", choices=("upload", "download"), help="only this way")
    parser.add_argument("--parallel", help="the curve: comma-separated counts, e.g. 1,8")
    parser.add_argument("--curve-size", type=int, default=256, help="MiB per transfer")
    parser.add_argument(
        "--smb-uploads",
        default="upload",
        help="SMB upload rows, comma-separated: upload (into a deleted target), replace"
        " (both clients rename a temporary file over it), in-place (the direct client"
        " overwrites in place)",
    )
    args = parser.parse_args()
    if not set(args.smb_uploads.split(",")) <= set(UPLOAD_ROWS):
        parser.error(f"--smb-uploads takes {', '.join(UPLOAD_ROWS)}")
    protocols = [p for p in args.only.split(",") if p]
    directions = (args.direction,) if args.direction else ("upload", "download")
    counts = [int(n) for n in args.parallel.split(",")] if args.parallel else []
    mib = args.curve_size if counts else args.size
    size = max(1, mib * MIB // BLOCK) * BLOCK
    variants: list[tuple[str, dict[str, str]]] = [("current", {})]
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    source = source_file(size)
    started_load = os.getloadavg()
    lines: list[str] = []
    try:
        with ExitStack() as stack:
            gateways: dict[str, Gateway] = {}
            server = stack.enter_context(
                hostgate_server(log=gateway_log(args.gateway_log, "current"))
            )
            gateways["current"] = Gateway.setup(server.url, server.pid)
            for name, commit in [] if counts else args.variant_at:
                code = stack.enter_context(checkout(commit))
                server = stack.enter_context(
                    hostgate_server(source=code, log=gateway_log(args.gateway_log, name))
                )
                gateways[name] = Gateway.setup(server.url, server.pid)
                variants.append((name, {"commit": commit}))
            for protocol in protocols:
                with PEERS[protocol](source) as peer:
                    rows = len(upload_ways(peer, directions, args.smb_uploads))
                    if counts:
                        lines += curve(peer, source, gateways["current"], counts)
                    else:
                        lines += rounds(
                            peer,
                            source,
                            gateways,
                            args.rounds,
                            args.profile,
                            directions,
                            args.smb_uploads,
                        )
                print(
                    "\n".join(
                        lines[-(2 * len(counts) if counts else rows * (len(variants) + 1)) :]
                    ),
                    flush=True,
                )
    finally:
        shutil.rmtree(source.parent, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"\nfile {size // MIB} MiB, {'curve' if counts else f'{args.rounds} rounds'}, load average"
        f" {started_load[0]:.1f} at the start, {load[0]:.1f} / {load[1]:.1f} at the end"
    )
    for name, commit in variants[1:]:
        print(f"variant {name}: {commit}")
    if counts:
        print(f"{'':<4} {'':<8} {'transfers':>11} {'MB/s':>9} {'CPU s/GiB':>8} {'RSS+MiB':>8}")
    else:
        header = (
            f"{'client':<12} {'MB/s':>9} {'ratio':>7} {'CPU s/GiB':>8} {'RSS+MiB':>8}"
            f" {'server':>8} {'curl':>8}"
        )
        print(f"{'':<4} {'':<8} {header}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
