"""What any relay can reach on an FTP transfer: minimal relays vs the direct client and the gateway.

.venv/bin/python bench/studies/ftp_relay_ceiling.py [--direction download|upload] [--size 512]
    [--rounds 3] [--variants WAY,...] [--variant-at NAME COMMIT]...
    [--instructions [--profile DIR]]

One vsftpd (testsupport launcher) serves one file of ``--size`` MiB of random
bytes (``--direction upload``: receives a local file of that size, each way
into a file of its own). Every round moves it once each way below, in an order
rotating from round to round:

- ``direct``: aioftp in this process (the baseline of ``bench/studies/file_rounds.py``);
- ``curl-ftp``: curl fetching ``ftp://`` itself (a C client, no relay);
- ``recv``: a minimal relay, a process of its own, serving the same RETR as an
  HTTP/1.1 response (Content-Length from SIZE) to curl: blocking raw sockets,
  ``recv_into`` one reused buffer and ``send`` the filled part, no framework;
- ``splice``: the same relay moving the body data socket -> pipe -> client
  socket with ``os.splice`` (no copy through user space);
- ``uvloop``: the same relay on uvloop with an ``asyncio.Protocol`` on the data
  connection (uvloop copies every ``recv`` into a new ``bytes``), writes to the
  client's transport, paused and resumed by its flow control: the gateway's
  I/O pattern without the HTTP framework;
- ``uvloop-buf``: the same with a ``BufferedProtocol`` reading into a pool of
  buffers, each handed to the client's transport and reused once written;
- ``gateway``: a real ``hostgate serve``, ``/api/v1/ftp/<id>/download`` with curl;

for ``--direction upload`` the same ways the other way round: ``direct`` is
aioftp's ``upload_stream``, ``curl-ftp`` curl's ``-T file ftp://...``, and curl
sends the file (``-X POST -T``, Content-Length) to each relay, which reads the
request head, opens a STOR and moves exactly Content-Length bytes from the
client socket to the data connection (``recv``: ``recv_into`` one buffer and
``send``; ``splice``: client socket -> pipe -> data socket; ``uvloop`` and
``uvloop-buf``: the client's connection as the protocol, the data connection's
transport written; ``recv-part``: ``recv`` storing under a temporary name renamed
over the target, as the gateway does), then closes the data connection, waits for the
226 and answers 201; and to the gateway's ``/api/v1/ftp/<id>/upload?path=``. Each upload
goes to a new file, deleted after it was checked (``--replace``: each way into the same
file every round; on ext4 a rename over a file starts the new file's writeback at once,
in vsftpd's time, which swamps the relays' differences);
- ``gateway-NAME``: one more gateway per ``--variant-at``, running the kernel and
  packs of another commit (``bench/_common.py``'s ``checkout``): a change on and
  off in one run.

Printed per way: median MB/s, the median of the per-round ratios to ``direct``,
and CPU seconds per GiB of the relay process (the gateway; this process for
``direct``; curl for ``curl-ftp``), of vsftpd (its session processes,
``TreeCpu``) and of curl. The relays' CPU is read from ``/proc`` before and
after each transfer, which stays meaningful on a loaded machine where MB/s
does not.

``--instructions`` moves no rounds: each gateway (and variant) runs under
callgrind and its user-space instructions per MiB during one download (or
upload) are printed, copies (``memcpy``) apart; ``--profile DIR`` keeps a per-function
summary of each.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import (  # noqa: E402
    TreeCpu,
    checkout,
    children_cpu,
    cpu_seconds,
    free_port,
    hostgate_server,
    median,
)
from file_rounds import GIB, Samples, gateway_list  # noqa: E402
from files_smb_ftp import BLOCK, MIB, Gateway  # noqa: E402

if TYPE_CHECKING:
    from testsupport.ftpd import FtpServer

BUFFER = 256 * 1024
"""The relays' read size (``--buffer``; uvloop reads 256,000 bytes at a time into a plain
protocol, the ``uvloop`` relay's, whatever this says)."""
PIPE_SIZE = 1024 * 1024
"""The splice relay's pipe capacity."""
RELAYS = ("recv", "splice", "uvloop", "uvloop-buf")
WAYS = ("direct", "curl-ftp", *RELAYS, "gateway")
UPLOAD_WAYS = ("direct", "curl-ftp", *RELAYS, "recv-part", "gateway")
"""``recv-part``: the ``recv`` relay storing as the gateway does, under a temporary name
renamed over the target once the server confirmed the file."""


# -- the relay process ----------------------------------------------------------


def _reply(control: socket.socket, buffered: bytearray) -> str:
    """One FTP reply (multi-line replies to their last line) from the control socket."""
    while True:
        while b"\r\n" not in buffered:
            data = control.recv(4096)
            if not data:
                raise ConnectionError("the FTP server closed the control connection")
            buffered += data
        line, _, rest = bytes(buffered).partition(b"\r\n")
        buffered[:] = rest
        text = line.decode()
        if len(text) >= 4 and text[:3].isdigit() and text[3] == " ":
            return text


def _command(control: socket.socket, buffered: bytearray, line: str, expect: str) -> str:
    control.sendall(line.encode() + b"\r\n")
    reply = _reply(control, buffered)
    if reply[0] not in expect:
        raise ConnectionError(f"{line!r}: {reply}")
    return reply


def _open_ftp(
    host: str, port: int, command: str
) -> tuple[socket.socket, socket.socket, bytearray, int]:
    """Log in anonymously, open ``RETR path`` (after its SIZE) or ``STOR path``:
    (control, data, buffer, size; 0 for a STOR)."""
    control = socket.create_connection((host, port))
    buffered = bytearray()
    _reply(control, buffered)
    if _command(control, buffered, "USER anonymous", "23").startswith("3"):
        _command(control, buffered, "PASS bench@", "2")
    _command(control, buffered, "TYPE I", "2")
    verb, _, path = command.partition(" ")
    size = int(_command(control, buffered, f"SIZE {path}", "2").split()[1]) if verb == "RETR" else 0
    reply = _command(control, buffered, "PASV", "2")
    numbers = reply[reply.index("(") + 1 : reply.index(")")].split(",")
    data = socket.create_connection(
        (".".join(numbers[:4]), int(numbers[4]) * 256 + int(numbers[5]))
    )
    _command(control, buffered, command, "1")
    return control, data, buffered, size


def _headers(size: int) -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Length: {size}\r\nConnection: close\r\n\r\n"
    ).encode()


@dataclass
class Request:
    """An HTTP request head: its path, its body's length, the body bytes read with it."""

    path: str
    length: int
    head: bytes


def _request(client: socket.socket) -> Request:
    """Read one request head; answer ``Expect: 100-continue`` as an HTTP server does."""
    request = b""
    while b"\r\n\r\n" not in request:
        data = client.recv(4096)
        if not data:
            raise ConnectionError("the HTTP client went away")
        request += data
    head, _, body = request.partition(b"\r\n\r\n")
    fields = head.lower().split(b"\r\n")
    length = next((int(f.split(b":")[1]) for f in fields if f.startswith(b"content-length:")), 0)
    if b"expect: 100-continue" in fields:
        client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    return Request(unquote(head.split(b" ", 2)[1].decode()), length, body)


def relay_recv(source: socket.socket, sink: socket.socket, limit: int | None = None) -> int:
    """recv_into one reused buffer, send what it holds: two copies through user space.

    ``limit``: stop after that many bytes (an upload's Content-Length), else at EOF.
    """
    buffer = bytearray(BUFFER)
    view = memoryview(buffer)
    moved = 0
    left = BUFFER if limit is None else limit
    while left and (count := source.recv_into(buffer, min(left, BUFFER))):
        sink.sendall(view[:count])
        moved += count
        if limit is not None:
            left -= count
    return moved


def relay_splice(source: socket.socket, sink: socket.socket, limit: int | None = None) -> int:
    """source socket -> pipe -> sink socket with splice(2): the bytes stay in the kernel."""
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        flags = os.SPLICE_F_MOVE | os.SPLICE_F_MORE
        moved = 0
        left = PIPE_SIZE if limit is None else limit
        while left and (
            count := os.splice(source.fileno(), write_end, min(left, PIPE_SIZE), flags=flags)
        ):
            if limit is not None:
                left -= count
            while count:
                sent = os.splice(read_end, sink.fileno(), count, flags=flags)
                count -= sent
                moved += sent
        return moved
    finally:
        os.close(read_end)
        os.close(write_end)


class _Relaying(asyncio.BaseProtocol):
    """The source connection's side of an in-loop relay: it hands what it reads to the
    sink's transport; done at EOF or after ``limit`` bytes."""

    def __init__(
        self, sink: asyncio.Transport, done: asyncio.Future[int], limit: int | None
    ) -> None:
        self.sink = sink
        self.done = done
        self.limit = limit
        self.moved = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        sink_protocol = self.sink.get_protocol()
        assert isinstance(sink_protocol, _SinkSide)
        sink_protocol.source = transport  # type: ignore[assignment]

    def _count(self, count: int) -> None:
        self.moved += count
        if self.moved == self.limit and not self.done.done():
            self.done.set_result(self.moved)

    def eof_received(self) -> bool:
        if not self.done.done():
            self.done.set_result(self.moved)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(self.moved)


class _Copying(_Relaying, asyncio.Protocol):
    """The source connection as the gateway's: each received piece a new ``bytes``,
    written to the sink's transport."""

    def data_received(self, data: bytes) -> None:
        self.sink.write(data)
        self._count(len(data))


class _Pooled(_Relaying, asyncio.BufferedProtocol):
    """The source connection read into pooled buffers, each handed to the sink's transport.

    A buffer goes back to the pool once the transport holds nothing more
    (``get_write_buffer_size() == 0``): until then it may keep a reference.
    """

    def __init__(
        self, sink: asyncio.Transport, done: asyncio.Future[int], limit: int | None
    ) -> None:
        super().__init__(sink, done, limit)
        self.free = [bytearray(BUFFER) for _ in range(4)]
        self.lent: list[bytearray] = []
        self.current = self.free.pop()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.sink.get_write_buffer_size() == 0:
            self.free += self.lent
            self.lent.clear()
        return memoryview(self.current)

    def buffer_updated(self, nbytes: int) -> None:
        self.sink.write(memoryview(self.current)[:nbytes])
        if self.sink.get_write_buffer_size():
            self.lent.append(self.current)
            self.current = self.free.pop() if self.free else bytearray(BUFFER)
        self._count(nbytes)


class _SinkSide(asyncio.Protocol):
    """The connection written to: its flow control pauses the source connection."""

    source: asyncio.ReadTransport | None = None

    def pause_writing(self) -> None:
        if self.source is not None:
            self.source.pause_reading()

    def resume_writing(self) -> None:
        if self.source is not None:
            self.source.resume_reading()


async def relay_uvloop(
    source: socket.socket,
    sink: socket.socket,
    pooled: bool,
    limit: int | None = None,
    head: bytes = b"",
) -> int:
    """Move ``source`` to ``sink`` on the running loop (``head``: bytes already read).

    The loop gets duplicates of both sockets (their transports close those), so
    the caller's sockets stay open: the upload answers the client after the 226.
    """
    loop = asyncio.get_running_loop()
    sink_transport, _ = await loop.connect_accepted_socket(_SinkSide, sink.dup())
    sink_transport.set_write_buffer_limits(high=1024 * 1024)
    sink_transport.write(head)
    left = None if limit is None else limit - len(head)
    done: asyncio.Future[int] = loop.create_future()
    if left == 0:
        done.set_result(0)
    kind = _Pooled if pooled else _Copying
    source_transport, _ = await loop.connect_accepted_socket(
        lambda: kind(sink_transport, done, left),  # type: ignore[arg-type]
        source.dup(),
    )
    moved = await done + len(head)
    source_transport.pause_reading()
    while sink_transport.get_write_buffer_size():
        await asyncio.sleep(0.001)
    sink_transport.close()
    source_transport.close()
    await asyncio.sleep(0)  # let both transports close their sockets
    return moved


def relay(mode: str, source: socket.socket, sink: socket.socket, request: Request | None) -> int:
    """Move the bytes with ``mode``; ``request``: an upload's (its length, its first bytes)."""
    limit = None if request is None else request.length
    head = b"" if request is None else request.head
    if mode.startswith("uvloop"):
        moved = asyncio.run(relay_uvloop(source, sink, mode == "uvloop-buf", limit, head))
        source.setblocking(True)  # the duplicates shared the sockets' O_NONBLOCK
        sink.setblocking(True)
        return moved
    sink.sendall(head)
    left = None if limit is None else limit - len(head)
    way = relay_recv if mode == "recv" else relay_splice
    return len(head) + (way(source, sink, left) if left != 0 else 0)


def serve(mode: str, host: str, port: int, listener: socket.socket) -> None:
    """Answer each HTTP GET of a server path with that file relayed from the FTP server,
    each POST (or PUT) by storing its body there."""
    renaming = mode.endswith("-part")
    mode = mode.removesuffix("-part")
    if mode.startswith("uvloop"):
        import uvloop

        uvloop.install()
    while True:
        client, _ = listener.accept()
        with client:
            try:
                request = _request(client)
            except ConnectionError:
                continue  # the start-up probe
            if request.length:
                parent, _, name = request.path.rpartition("/")
                stored = f"{parent}/.{name}.{uuid.uuid4().hex[:12]}.part" if renaming else ""
                control, data, buffered, _ = _open_ftp(host, port, f"STOR {stored or request.path}")
                moved = relay(mode, client, data, request)
                data.close()
                _reply(control, buffered)  # 226
                if stored:
                    _command(control, buffered, f"RNFR {stored}", "3")
                    _command(control, buffered, f"RNTO {request.path}", "2")
                size = request.length
            else:
                control, data, buffered, size = _open_ftp(host, port, f"RETR {request.path}")
                client.sendall(_headers(size))
                moved = relay(mode, data, client, None)
                data.close()
                _reply(control, buffered)  # 226
            control.sendall(b"QUIT\r\n")
            control.close()
            if request.length:
                client.sendall(
                    b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            assert moved == size, f"relayed {moved} of {size} bytes"


def start_relay(
    mode: str, host: str, port: int, buffer: int
) -> tuple[subprocess.Popen[bytes], int]:
    """A relay process of ``mode`` in front of the FTP server; (process, its HTTP port)."""
    listen = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--buffer", str(buffer), "--serve", mode, host, str(port)]
        + [str(listen)]
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", listen), timeout=1).close()
            return process, listen
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the {mode} relay did not start")


# -- the rounds -------------------------------------------------------------------


def curl_get(url: str, *options: str) -> int:
    """Download ``url`` with curl into nothing; the bytes it received."""
    output = subprocess.run(
        ["curl", "-sS", "--fail", *options, "-o", "/dev/null", "-w", "%{size_download}", url],
        check=True,
        capture_output=True,
    ).stdout
    return int(output)


def curl_put(source: Path, url: str, *options: str) -> int:
    """Send ``source`` to ``url`` with curl (``-T``; ``POST`` unless an ``ftp://`` URL);
    the bytes it sent."""
    method = [] if url.startswith("ftp://") else ["-X", "POST"]
    output = subprocess.run(
        ["curl", "-sS", "--fail", *method, *options, "-T", str(source), "-o", "/dev/null"]
        + ["-w", "%{size_upload}", url],
        check=True,
        capture_output=True,
    ).stdout
    return int(float(output))


def measured(
    run: Callable[[], int], server_pid: int, process_pid: int | None
) -> tuple[float, float, float, float, int]:
    """(seconds, relay CPU s, server CPU s, curl CPU s, bytes) of one transfer."""
    before = cpu_seconds(process_pid, tree=True) if process_pid else time.process_time()
    curl_before = children_cpu()
    server = TreeCpu(server_pid)
    with server:
        started = time.perf_counter()
        moved = run()
        seconds = time.perf_counter() - started
    after = (
        cpu_seconds(process_pid, tree=True)
        if process_pid
        else time.process_time() - server.overhead
    )
    return seconds, after - before, server.seconds, children_cpu() - curl_before, moved


def gateway_way(
    stack: ExitStack,
    server: FtpServer,
    name: str | Callable[[], str],
    code: Path | None,
    wrapper: list[str] | None = None,
    source: Path | None = None,
) -> tuple[Callable[[], int], int]:
    """A ``hostgate serve`` (of the checkout ``code``, else this tree) with a connection to
    ``server``: (a download of ``name`` through it with curl, the gateway's pid; with
    ``source``: an upload of that file to ``name``, or to what ``name()`` says at each
    upload)."""
    hostgate = stack.enter_context(
        hostgate_server(source=code, wrapper=wrapper, start_timeout=900 if wrapper else 60)
    )
    gateway = Gateway.setup(hostgate.url, hostgate.pid)
    connection = gateway.connection(
        {"name": "ceiling", "protocol": "ftp", "host": server.host, "port": server.port}
    )
    gateway_list(gateway, "ftp", connection, "/pub")
    authorization = f"Authorization: {gateway.headers['Authorization']}"
    if source is not None:
        url = f"{gateway.url}/api/v1/ftp/{connection}/upload?path="
        named = name if callable(name) else lambda: name
        return lambda: curl_put(source, url + quote(named()), "-H", authorization), hostgate.pid
    path = name() if callable(name) else name
    url = f"{gateway.url}/api/v1/ftp/{connection}/download?path={quote(path)}"
    return lambda: curl_get(url, "-H", authorization), hostgate.pid


def count_instructions(
    server: FtpServer,
    name: str,
    variants: dict[str, Path | None],
    work: Path,
    keep: Path | None = None,
    source: Path | None = None,
) -> dict[str, tuple[int, int]]:
    """User-space instructions of each gateway during one download (callgrind): (all, copies).
    With ``source``: during one upload of that file to ``name``.

    Each gateway runs under ``valgrind --tool=callgrind`` with instrumentation
    off; after a warm-up download it is switched on (``callgrind_control -i on``)
    for one more download and the counts dumped. valgrind makes the gateway the
    slowest part by far, so this is the regime where the gateway is the
    bottleneck; the kernel's copies and TCP work are not instructions it counts.
    ``memcpy``/``memmove`` are counted apart: valgrind counts a ``rep movsb``
    (glibc's copy up to a few MiB) as one instruction per byte, a larger copy's
    vector loop as one per 32 bytes, so their count says how many bytes were
    copied rather than how long it took.
    ``keep``: a directory for each gateway's per-function summary (callgrind_annotate).
    """
    counts: dict[str, tuple[int, int]] = {}
    for label, code in variants.items():
        out = work / f"callgrind-{label or 'current'}.out"
        wrapper = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
        wrapper.append(f"--callgrind-out-file={out}")
        with ExitStack() as stack:
            run, pid = gateway_way(stack, server, name, code, wrapper, source)
            run()
            subprocess.run(
                ["callgrind_control", "-i", "on", str(pid)], check=True, capture_output=True
            )
            run()
            for command in (["-i", "off"], ["-d"]):
                subprocess.run(
                    ["callgrind_control", *command, str(pid)], check=True, capture_output=True
                )
        # the counted dump: the one of the largest total
        totals = {
            dump: int(match.group(1))
            for dump in work.glob(f"{out.name}*")
            if (match := re.search(r"^totals: (\d+)", dump.read_text(errors="replace"), re.M))
        }
        dump = max(totals, key=totals.__getitem__)
        summary = subprocess.run(
            ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(dump)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        copies = sum(
            int(line.split()[0].replace(",", ""))
            for line in summary.splitlines()
            if re.search(r":__mem(cpy|move)_", line) and line.split()[0][0].isdigit()
        )
        counts[label or "current"] = (totals[dump], copies)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            text = "\n".join(summary.splitlines()[:60])
            (keep / f"callgrind-{label or 'current'}.txt").write_text(text + "\n")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--direction", choices=("download", "upload"), default="download")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="upload: each way into the same file every round (a new file each time otherwise)",
    )
    parser.add_argument("--size", type=int, default=512, help="file size in MiB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--variants", help=f"a subset of {WAYS} (upload: of {UPLOAD_WAYS}); all by default"
    )
    parser.add_argument(
        "--variant-at",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "COMMIT"),
        help="one more gateway, gateway-NAME, running the kernel and packs of COMMIT",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count each gateway's user-space instructions for one download with callgrind",
    )
    parser.add_argument(
        "--profile", type=Path, help="with --instructions: per-function summaries into DIR"
    )
    parser.add_argument("--buffer", type=int, default=256, help="the relays' buffer in KiB")
    parser.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global BUFFER
    BUFFER = args.buffer * 1024
    if args.serve:
        mode, host, port, listen = args.serve
        listener = socket.create_server(("127.0.0.1", int(listen)))
        serve(mode, host, int(port), listener)
        return

    import aioftp

    from testsupport.ftpd import start_vsftpd
    from testsupport.peers import stop

    commits = dict(args.variant_at)
    every = UPLOAD_WAYS if args.direction == "upload" else WAYS
    ways = [w for w in (args.variants or ",".join(every)).split(",") if w]
    ways += [f"gateway-{n}" for n in commits]
    size = max(1, args.size * MIB // BLOCK) * BLOCK
    base = Path(tempfile.mkdtemp(prefix="hg-bench-ceiling-"))
    started_load = os.getloadavg()
    samples: dict[str, Samples] = {way: Samples() for way in ways}
    try:
        with ExitStack() as stack:
            server, process = start_vsftpd(base)
            stack.callback(stop, process)
            variants = {n: stack.enter_context(checkout(c)) for n, c in commits.items()}
            name = f"/pub/ceiling-{uuid.uuid4().hex[:6]}.bin"
            block = os.urandom(BLOCK)
            with server.local(name).open("wb") as handle:
                for _ in range(size // BLOCK):
                    handle.write(block)
            server.local(name).chmod(0o644)
            upload = args.direction == "upload"
            source = base / "source.bin"
            if upload:
                server.local(name).rename(source)

            def target(way: str) -> str:
                return f"/pub/up-{way}-{uuid.uuid4().hex[:6]}.bin" if upload else name

            if args.instructions:
                counts = count_instructions(
                    server,
                    target("gateway"),
                    {"": None, **variants},
                    base,
                    args.profile,
                    source if upload else None,
                )
                print(
                    f"{args.direction}, file {size // MIB} MiB,"
                    f" load average {os.getloadavg()[0]:.1f}"
                )
                print(f"{'gateway':<12} {'all':>8} {'memcpy':>8} {'other':>8}  M instructions/MiB")
                for label, (count, copies) in counts.items():
                    per = [value / (size / MIB) / 1e6 for value in (count, copies, count - copies)]
                    print(f"{label:<12} {per[0]:>8.3f} {per[1]:>8.3f} {per[2]:>8.3f}")
                return

            async def aioftp_download() -> int:
                moved = 0
                async with (
                    aioftp.Client.context(server.host, server.port) as client,
                    client.download_stream(name) as stream,
                ):
                    async for chunk in stream.iter_by_block(BLOCK):
                        moved += len(chunk)
                return moved

            async def aioftp_upload(path: str) -> int:
                async with (
                    aioftp.Client.context(server.host, server.port) as client,
                    client.upload_stream(path) as stream,
                ):
                    with source.open("rb") as local:
                        while data := local.read(BLOCK):
                            await stream.write(data)
                return size

            targets = {way: target(way) for way in ways}
            # the file each upload goes to: a new one each time unless --replace
            ftp = f"ftp://{server.host}:{server.port}"
            runs: dict[str, tuple[Callable[[], int], int | None]] = {
                "direct": (lambda: asyncio.run(aioftp_download()), None),
                "curl-ftp": (lambda: curl_get(f"{ftp}{name}"), None),
            }
            if upload:
                runs["direct"] = (lambda: asyncio.run(aioftp_upload(targets["direct"])), None)
                runs["curl-ftp"] = (lambda: curl_put(source, ftp + targets["curl-ftp"]), None)
            for mode in (*RELAYS, "recv-part"):
                if mode in ways:
                    relay, listen = start_relay(mode, server.host, server.port, BUFFER // 1024)
                    stack.callback(relay.kill)
                    url = f"http://127.0.0.1:{listen}"
                    if upload:
                        move = lambda u=url, m=mode: curl_put(source, u + quote(targets[m]))  # noqa: E731
                    else:
                        move = lambda u=url: curl_get(u + quote(name))  # noqa: E731
                    runs[mode] = (move, relay.pid)
            for way in ways:
                if way == "gateway" or way.startswith("gateway-"):
                    code = variants[way.partition("-")[2]] if "-" in way else None
                    runs[way] = gateway_way(
                        stack,
                        server,
                        lambda way=way: targets[way],
                        code,
                        source=source if upload else None,
                    )
            for way in ways:  # warm-up: pools, page cache, imports
                runs[way][0]()
            for index in range(args.rounds):
                order = ways[index % len(ways) :] + ways[: index % len(ways)]
                speeds: dict[str, float] = {}
                for way in order:
                    run, pid = runs[way]
                    if upload and not args.replace:
                        targets[way] = target(way)
                    seconds, cpu, server_cpu, curl_cpu, moved = measured(run, process.pid, pid)
                    assert moved == size, f"{way}: {moved} of {size} bytes"
                    if upload:
                        stored = server.local(targets[way]).stat().st_size
                        assert stored == size, f"{way}: {stored} of {size} bytes stored"
                        if not args.replace:
                            server.local(targets[way]).unlink()
                    mine = samples[way]
                    speeds[way] = moved / 1e6 / seconds
                    mine.speeds.append(speeds[way])
                    mine.cpu.append((curl_cpu if way == "curl-ftp" else cpu) * GIB / moved)
                    mine.server_cpu.append(server_cpu * GIB / moved)
                    mine.curl_cpu.append(curl_cpu * GIB / moved)
                if "direct" in speeds:
                    for way, speed in speeds.items():
                        samples[way].ratios.append(speed / speeds["direct"])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"{args.direction}, file {size // MIB} MiB, {args.rounds} rounds,"
        f" load average {started_load[0]:.1f}"
        f" at the start, {load[0]:.1f} / {load[1]:.1f} at the end"
    )
    print(f"{'way':<12} {'MB/s':>9} {'ratio':>7} {'CPU s/GiB':>9} {'vsftpd':>8} {'curl':>8}")
    for way in ways:
        mine = samples[way]
        ratio = f"{median(mine.ratios):>6.2f}x" if mine.ratios else f"{'':>7}"
        print(
            f"{way:<12} {median(mine.speeds):>9,.1f} {ratio} {median(mine.cpu):>9.2f}"
            f" {median(mine.server_cpu):>8.2f} {median(mine.curl_cpu):>8.2f}"
        )


if __name__ == "__main__":
    main()
