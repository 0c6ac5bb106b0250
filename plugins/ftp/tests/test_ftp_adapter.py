"""The ``ftp`` adapter against real vsftpd (LIST) and pyftpdlib (MLSD) servers."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hostgate import (
    Conflict,
    InvalidInput,
    RemoteAuthFailed,
    RemoteError,
    RemoteNotFound,
    RemotePermissionDenied,
    RemoteUnreachable,
)
from hostgate.chunkreader import SMALL_CHUNK, ChunkReader
from hostgate.testing import StalledBody, plant_upload_leftovers
from hostgate_ftp.files import FtpFiles, open_files

from testsupport.ftpd import READER_PASSWORD, READER_USER, FtpServer, start_pyftpd
from testsupport.peers import free_port, running
from testsupport.streams import file_digest, once, pattern, pattern_digest, read_all

from .conftest import Work, ftp_target

MIB = 1024 * 1024
BIG = 200 * MIB


def make_tree(root: Path, files: dict[str, str]) -> None:
    """Files (and their directories) that the FTP server's user may change."""
    for relative, text in files.items():
        path = root / relative
        for parent in reversed(path.relative_to(root).parents):
            directory = root / parent
            directory.mkdir(exist_ok=True)
            directory.chmod(0o777)
        if relative.endswith("/"):
            path.mkdir(exist_ok=True)
            path.chmod(0o777)
            continue
        path.write_text(text)
        path.chmod(0o666)


async def test_list_stat_and_awkward_names(work: Work):
    files, base, local = work.files, work.base, work.local
    await files.mkdir(f"{base}/a folder é")
    assert await files.write(f"{base}/empty file.txt", once(b"")) == 0
    assert await files.write(f"{base}/naïve ☃ 東京 [1].txt", once(b"hello")) == 5
    make_tree(local, {".hidden": "h"})
    entries = {e.name: e for e in await files.list(base)}
    assert set(entries) == {"a folder é", "empty file.txt", "naïve ☃ 東京 [1].txt", ".hidden"}
    assert entries["a folder é"].is_dir
    assert (entries["empty file.txt"].size, entries["empty file.txt"].is_dir) == (0, False)
    assert entries["naïve ☃ 東京 [1].txt"].size == 5
    assert (local / "naïve ☃ 東京 [1].txt").read_bytes() == b"hello"
    assert await read_all(files, f"{base}/empty file.txt") == b""
    stat = await files.stat(f"{base}/naïve ☃ 東京 [1].txt")
    assert (stat.name, stat.size, stat.is_dir) == ("naïve ☃ 東京 [1].txt", 5, False)
    assert stat.mtime is not None
    local_mtime = (local / "naïve ☃ 東京 [1].txt").stat().st_mtime
    assert abs(stat.mtime.timestamp() - local_mtime) < 2
    folder = await files.stat(f"{base}/a folder é")
    assert folder.is_dir and folder.name == "a folder é"
    assert (await files.stat("/")).is_dir
    assert await files.list("/../..") == await files.list("/")


async def test_big_file_round_trip_is_byte_identical(vsftpd: FtpServer):
    base = "/pub/big"
    local = vsftpd.local(base)
    local.mkdir()
    local.chmod(0o777)
    files = await open_files(None, ftp_target(vsftpd))
    try:
        await _round_trip(files, base, local)
    finally:
        await files.close()


async def _round_trip(files: FtpFiles, base: str, local: Path) -> None:
    expected = pattern_digest(BIG)
    assert await files.write(f"{base}/big.bin", pattern(BIG)) == BIG
    assert file_digest(local / "big.bin") == expected
    digest = hashlib.sha256()
    largest = 0
    async for chunk in files.read(f"{base}/big.bin"):
        digest.update(chunk)
        largest = max(largest, len(chunk))
    assert digest.hexdigest() == expected
    assert largest <= 4 * MIB
    with (local / "big.bin").open("rb") as handle:
        handle.seek(5 * MIB + 3)
        middle = handle.read(MIB + 7)
    assert await read_all(files, f"{base}/big.bin", 5 * MIB + 3, MIB + 7) == middle


async def test_full_length_reads_keep_the_control_connection(work: Work):
    files, base, local = work.files, work.base, work.local
    make_tree(local, {"f.bin": "0123456789"})
    first = await read_all(files, f"{base}/f.bin", 0, 10)
    assert first == b"0123456789"
    assert len(files.pool._idle) == 1  # settled, back in the pool
    assert await read_all(files, f"{base}/f.bin", 2, 3) == b"234"
    assert await files.list(base)  # a new connection replaced the aborted one


async def test_upload_replaces_existing_and_leaves_no_temporary(work: Work):
    files, base, local = work.files, work.base, work.local
    make_tree(local, {"report.txt": "old contents"})
    await files.write(f"{base}/report.txt", once(b"new"))
    assert (local / "report.txt").read_bytes() == b"new"
    assert sorted(p.name for p in local.iterdir()) == ["report.txt"]


async def test_aborted_upload_leaves_no_file_under_the_final_name(work: Work):
    files, base, local = work.files, work.base, work.local

    async def broken() -> AsyncIterator[bytes]:
        yield b"x" * (3 * MIB)
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        await files.write(f"{base}/partial.bin", broken())
    assert list(local.iterdir()) == []
    await files.write(f"{base}/after.bin", once(b"ok"))
    assert (local / "after.bin").read_bytes() == b"ok"


async def test_delete_is_recursive(work: Work):
    files, base, local = work.files, work.base, work.local
    make_tree(
        local,
        {
            "tree/a/b c/deep é.txt": "deep",
            "tree/a/f.txt": "f",
            "tree/.dotfile": "d",
            "tree/empty dir/": "",
            "single.txt": "1",
        },
    )
    await files.remove(f"{base}/tree")
    assert not (local / "tree").exists()
    await files.remove(f"{base}/single.txt")
    assert list(local.iterdir()) == []


async def test_rename_across_directories(work: Work):
    files, base, local = work.files, work.base, work.local
    make_tree(local, {"src/file one.txt": "1", "src/sub/inner.txt": "inner", "dst/": ""})
    await files.rename(f"{base}/src/file one.txt", f"{base}/dst/renamed ü.txt")
    await files.rename(f"{base}/src/sub", f"{base}/dst/moved sub")
    assert (local / "dst" / "renamed ü.txt").read_text() == "1"
    assert (local / "dst" / "moved sub" / "inner.txt").read_text() == "inner"
    assert list((local / "src").iterdir()) == []
    make_tree(local, {"src/clash.txt": "a"})
    with pytest.raises(Conflict):
        await files.rename(f"{base}/src/clash.txt", f"{base}/dst/renamed ü.txt")
    assert (local / "dst" / "renamed ü.txt").read_text() == "1"


async def test_missing_paths_are_remote_not_found(work: Work):
    files, base = work.files, work.base
    for call in (
        lambda: files.list(f"{base}/nope"),
        lambda: files.stat(f"{base}/nope.txt"),
        lambda: read_all(files, f"{base}/nope.txt"),
        lambda: files.remove(f"{base}/nope"),
        lambda: files.rename(f"{base}/nope", f"{base}/other"),
        lambda: files.mkdir(f"{base}/no/such/parent"),
        lambda: files.write(f"{base}/no/such/dir/f.txt", once(b"1")),
    ):
        with pytest.raises(RemoteNotFound):
            await call()


async def test_clean_refusals(work: Work):
    files, base, local = work.files, work.base, work.local
    make_tree(local, {"d/": "", "f.txt": "x"})
    with pytest.raises(Conflict):
        await files.mkdir(f"{base}/d")
    with pytest.raises(InvalidInput):
        await files.list(f"{base}/f.txt")
    with pytest.raises(InvalidInput):
        await read_all(files, f"{base}/d")
    with pytest.raises(InvalidInput):
        await files.remove("/")
    with pytest.raises(InvalidInput):
        await files.list(f"{base}\r\nDELE {base}/f.txt")
    assert (local / "f.txt").exists()


async def test_vsftpd_permission_denied(vsftpd: FtpServer):
    files = await open_files(None, ftp_target(vsftpd))
    try:
        assert [e.name for e in await files.list("/locked")] == ["keep.txt"]
        for call in (
            lambda: files.mkdir("/locked/new"),
            lambda: files.write("/locked/up.txt", once(b"1")),
            lambda: files.remove("/locked/keep.txt"),
            lambda: files.rename("/locked/keep.txt", "/pub/stolen.txt"),
        ):
            with pytest.raises(RemotePermissionDenied):
                await call()
        assert vsftpd.local("/locked/keep.txt").exists()
    finally:
        await files.close()


async def test_read_only_user_is_refused(pyftpd: FtpServer):
    make_tree(pyftpd.root, {"ro/keep.txt": "keep"})
    files = await open_files(
        None, ftp_target(pyftpd, username=READER_USER, password=READER_PASSWORD)
    )
    try:
        assert await read_all(files, "/ro/keep.txt") == b"keep"
        for call in (
            lambda: files.mkdir("/ro/new"),
            lambda: files.write("/ro/up.txt", once(b"1")),
            lambda: files.remove("/ro/keep.txt"),
            lambda: files.rename("/ro/keep.txt", "/ro/moved.txt"),
        ):
            with pytest.raises(RemotePermissionDenied):
                await call()
        assert sorted(p.name for p in pyftpd.local("/ro").iterdir()) == ["keep.txt"]
    finally:
        await files.close()


async def test_login_failures_and_unreachable(vsftpd: FtpServer, pyftpd: FtpServer):
    with pytest.raises(RemoteAuthFailed):
        await open_files(None, ftp_target(pyftpd, password="wrong password"))
    with pytest.raises(RemoteAuthFailed):
        await open_files(None, ftp_target(vsftpd, username="nobody-here", password="x"))
    with pytest.raises(RemoteUnreachable):
        await open_files(None, ftp_target(vsftpd, port=free_port()))


async def test_anonymous_by_default(vsftpd: FtpServer):
    files = await open_files(None, ftp_target(vsftpd, username=None, password=None))
    try:
        assert {"pub", "locked"} <= {e.name for e in await files.list("/")}
    finally:
        await files.close()


async def test_explicit_ftps(vsftpd: FtpServer, monkeypatch: pytest.MonkeyPatch):
    tls = {"ftps": True}
    # Not trusted: refused with a message that says why.
    with pytest.raises(RemoteError, match="certificate"):
        await open_files(None, ftp_target(vsftpd, extra=tls))
    # Skipping validation is the connection's explicit choice.
    files = await open_files(None, ftp_target(vsftpd, extra=tls, skip_cert_validation=True))
    try:
        await files.write("/pub/tls é.txt", once(b"secret bytes"))
        assert await read_all(files, "/pub/tls é.txt") == b"secret bytes"
        client = files.pool._idle[0]
        assert client.stream.writer.transport.get_extra_info("ssl_object") is not None
        await files.remove("/pub/tls é.txt")
    finally:
        await files.close()
    # Trusted certificate: verified against the connection's host name, not the address.
    assert vsftpd.certificate is not None
    monkeypatch.setenv("SSL_CERT_FILE", str(vsftpd.certificate))
    files = await open_files(None, ftp_target(vsftpd, host="localhost", extra=tls))
    try:
        assert "pub" in {e.name for e in await files.list("/")}
    finally:
        await files.close()
    with pytest.raises(RemoteError, match="certificate"):
        await open_files(None, ftp_target(vsftpd, host="wrong.example", extra=tls))


async def test_stale_control_connection_is_replaced(work: Work):
    files, base, local = work.files, work.base, work.local
    make_tree(local, {"x.txt": "x"})
    await files.list(base)
    idle = files.pool._idle[0]
    idle.close()
    idle.last_used = 0.0
    assert [e.name for e in await files.list(base)] == ["x.txt"]


async def test_concurrent_operations_on_one_adapter(work: Work):
    files, base, local = work.files, work.base, work.local
    sizes = {"a.bin": 3 * MIB + 1, "b.bin": 2 * MIB, "c.bin": 1}
    for name, size in sizes.items():
        (local / name).write_bytes(random.Random(size).randbytes(size))

    results = await asyncio.gather(
        *(read_all(files, f"{base}/{name}") for name in sizes),
        files.write(f"{base}/up.bin", pattern(2 * MIB, seed=3)),
        files.list(base),
    )
    for name, data in zip(sizes, results, strict=False):
        assert data == (local / name).read_bytes()
    assert file_digest(local / "up.bin") == pattern_digest(2 * MIB, seed=3)


def test_paths_are_normalised_and_relative_paths_start_at_home():
    from hostgate_ftp.files import ftp_path

    assert ftp_path("/a//b/./c/") == "/a/b/c"
    assert ftp_path("/../../etc") == "/etc"
    assert ftp_path(".", "/home/alice") == "/home/alice"
    assert ftp_path("docs/../x.txt", "/home/alice") == "/home/alice/x.txt"
    assert ftp_path("..\\..\\..", "/home/alice") == "/"
    assert ftp_path("/abs", "/home/alice") == "/abs"
    for bad in ("a\r\nDELE x", "a\nb", "nul\x00"):
        with pytest.raises(InvalidInput):
            ftp_path(bad)


async def test_relative_paths_on_a_server(vsftpd: FtpServer):
    files = await open_files(None, ftp_target(vsftpd))
    try:
        assert files.home == "/"
        assert await files.list("pub") == await files.list("/pub")
        assert {e.name for e in await files.list(".")} >= {"pub", "locked"}
    finally:
        await files.close()


class _Transport:
    """Just the flow control a reader drives."""

    def __init__(self) -> None:
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


async def test_chunk_reader_hands_on_received_pieces_in_order_without_copies():
    reader = ChunkReader(limit=1000)
    transport = _Transport()
    reader.set_transport(transport)  # type: ignore[arg-type]
    pieces = [bytes([n]) * 600 for n in range(1, 5)]
    for piece in pieces:
        reader.feed_data(piece)
    assert transport.paused is True  # above twice the limit: the socket is not read
    assert await reader.read(1024) is pieces[0]  # the very object received, not a copy
    assert await reader.read(1024) is pieces[1]
    assert transport.paused is True  # 1,200 bytes still buffered
    assert await reader.read(300) == pieces[2][:300]  # longer than asked: split
    assert transport.paused is False  # at the limit again: reading resumes
    # Pieces shorter than SMALL_CHUNK in a row are joined, up to the size asked for.
    assert await reader.read(1024) == pieces[2][300:] + pieces[3]
    reader.feed_data(bytearray(b"tail"))  # a view into a reused buffer is copied once
    reader.feed_data(b"more")
    reader.feed_eof()
    assert await reader.read(1024) == b"tailmore"
    assert await reader.read(1024) == b""
    assert reader.at_eof()


async def test_a_download_hands_on_the_received_bytes_in_order(
    vsftpd: FtpServer, monkeypatch: pytest.MonkeyPatch
):
    received: list[bytes] = []
    feed = ChunkReader.feed_data

    def keep(self: ChunkReader, data: bytes) -> None:
        received.append(data)
        feed(self, data)

    monkeypatch.setattr(ChunkReader, "feed_data", keep)
    payload = random.Random(3).randbytes(3 * MIB + 12345)  # an odd size
    pieces = [payload[start : start + 100_003] for start in range(0, len(payload), 100_003)]

    async def upload() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    name = f"odd-{uuid.uuid4().hex[:8]}.bin"
    local = vsftpd.local("/pub")
    files = await open_files(None, ftp_target(vsftpd))
    try:
        assert await files.write(f"/pub/{name}", upload()) == len(payload)
        assert (local / name).read_bytes() == payload
        chunks = [chunk async for chunk in files.read(f"/pub/{name}")]
        assert b"".join(chunks) == payload  # in order, nothing lost
        big = [chunk for chunk in chunks if len(chunk) >= SMALL_CHUNK]
        # The pieces the socket delivered, handed on as they are (not copies).
        assert big and all(any(chunk is r for r in received) for chunk in big)
    finally:
        (local / name).unlink(missing_ok=True)
        await files.close()


async def test_an_upload_sends_each_piece_as_it_arrives(
    vsftpd: FtpServer, monkeypatch: pytest.MonkeyPatch
):
    from hostgate_ftp import files as ftp_files

    sent: list[bytes] = []
    queue = ftp_files.queue

    def spy(stream: object, data: bytes) -> bool:
        sent.append(data)
        return queue(stream, data)  # type: ignore[arg-type]

    monkeypatch.setattr(ftp_files, "queue", spy)
    rng = random.Random(11)
    pieces = [rng.randbytes(size) for size in (100_003, 17, 300_000, 5, 64 * 1024, 1)]

    async def upload() -> AsyncIterator[bytes]:
        for index, piece in enumerate(pieces):
            # the pieces before this one are on the data connection already: none waits
            # for more to arrive (the server would idle meanwhile)
            assert len(sent) == index
            yield piece

    name = f"each-{uuid.uuid4().hex[:8]}.bin"
    local = vsftpd.local("/pub") / name
    files = await open_files(None, ftp_target(vsftpd))
    try:
        assert await files.write(f"/pub/{name}", upload()) == sum(map(len, pieces))
        assert local.read_bytes() == b"".join(pieces)
        assert all(out is piece for out, piece in zip(sent, pieces, strict=True))  # not copies
    finally:
        local.unlink(missing_ok=True)
        await files.close()


async def test_an_upload_awaits_the_data_connection_only_when_its_buffer_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A piece under the high-water mark goes out without awaiting drain;
    a full buffer still waits (the upload's memory stays bounded), and the bytes arrive whole.

    The test's own server is stopped (SIGSTOP) once the small pieces are sent, so the big
    ones fill every buffer between here and it whatever the machine's speed; the first wait
    lets it go on. pyftpdlib, as one process, takes that in its stride; vsftpd's session
    processes watch each other and end the session."""
    from hostgate_ftp import client as ftp_client
    from hostgate_ftp import files as ftp_files

    server, process = start_pyftpd(tmp_path)
    monkeypatch.setattr(ftp_client, "STREAM_LIMIT", 256 * 1024)  # a buffer the test can fill
    waits: list[int] = []
    stopped: list[int] = []
    drained = ftp_files.drained

    def resume() -> None:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        stopped.clear()

    async def counting(stream: ftp_files.DataConnectionThrottleStreamIO) -> None:
        waits.append(stream.writer.transport.get_write_buffer_size())
        resume()
        await drained(stream)

    monkeypatch.setattr(ftp_files, "drained", counting)
    small = [bytes([i]) * 1000 for i in range(50)]  # 50 kB: the buffer never fills
    # 32 MiB in pieces of 4 MiB, more than the sockets to a stopped server hold
    big = [random.Random(seed).randbytes(4 * MIB) for seed in range(8)]
    name = f"quick-{uuid.uuid4().hex[:8]}.bin"
    local = server.local("/") / name

    async def upload() -> AsyncIterator[bytes]:
        for piece in small:
            yield piece
        os.kill(process.pid, signal.SIGSTOP)
        stopped.append(process.pid)
        # never left stopped: a wait that does not come fails the assertions below
        asyncio.get_running_loop().call_later(10, resume)
        for piece in big:
            yield piece

    with running(process):
        files = await open_files(None, ftp_target(server))
        try:
            assert await files.write(f"/{name}", upload()) == 50_000 + 32 * MIB
            assert stopped == []  # the first wait resumed the server
            assert local.read_bytes() == b"".join(small + big)
            # only pieces that left the buffer over its high-water mark waited
            assert 1 <= len(waits) <= len(big)
            assert all(size >= 256 * 1024 for size in waits)
        finally:
            resume()
            await files.close()


async def test_a_cancelled_upload_leaves_nothing(work: Work):
    """The client goes away in the middle of the body: the temporary file goes too."""
    files, base, local = work.files, work.base, work.local
    body = StalledBody(b"x" * (2 * MIB))
    task = asyncio.ensure_future(files.write(f"{base}/cancelled.bin", body.chunks()))
    await asyncio.wait_for(body.taken.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(local.iterdir()) == []
    await files.write(f"{base}/after.bin", once(b"ok"))
    assert sorted(p.name for p in local.iterdir()) == ["after.bin"]


async def test_an_upload_removes_what_a_killed_gateway_left(work: Work):
    """A new process (a fresh adapter) sweeps the directory at its first upload into it."""
    planted = plant_upload_leftovers(work.local)
    await work.files.write(f"{work.base}/new.txt", once(b"fresh upload"))
    assert sorted(p.name for p in work.local.iterdir()) == sorted([*planted.kept, "new.txt"])
