"""The ``smb`` adapter against a real smbd: every operation, the awkward names, the errors."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import random
import threading
from collections.abc import AsyncIterator

import pytest
from hostgate import (
    UPLOAD_TEMP_PREFIX,
    Conflict,
    InvalidInput,
    RemoteAuthFailed,
    RemoteNotFound,
    RemotePermissionDenied,
    RemoteUnreachable,
)
from hostgate.testing import StalledBody, plant_upload_leftovers
from hostgate_smb.files import open_files

from testsupport.peers import free_port
from testsupport.streams import file_digest, once, pattern, pattern_digest, read_all

from .conftest import smb_target

MIB = 1024 * 1024
BIG = 200 * MIB


async def test_list_shows_names_with_spaces_unicode_and_empty_files(smb, workdir):
    base, local = workdir
    await smb.mkdir(f"{base}/a folder é")
    assert await smb.write(f"{base}/empty file.txt", once(b"")) == 0
    assert await smb.write(f"{base}/naïve ☃ 東京.txt", once(b"hello")) == 5
    entries = {e.name: e for e in await smb.list(base)}
    assert set(entries) == {"a folder é", "empty file.txt", "naïve ☃ 東京.txt"}
    assert entries["a folder é"].is_dir and entries["a folder é"].size == 0
    assert not entries["empty file.txt"].is_dir and entries["empty file.txt"].size == 0
    assert entries["naïve ☃ 東京.txt"].size == 5
    assert entries["naïve ☃ 東京.txt"].mtime is not None
    assert (local / "naïve ☃ 東京.txt").read_bytes() == b"hello"
    assert (local / "a folder é").is_dir()
    assert await read_all(smb, f"{base}/empty file.txt") == b""
    assert await read_all(smb, f"{base}/naïve ☃ 東京.txt") == b"hello"
    stat = await smb.stat(f"{base}/naïve ☃ 東京.txt")
    assert (stat.name, stat.size, stat.is_dir) == ("naïve ☃ 東京.txt", 5, False)
    assert (await smb.stat(f"{base}/a folder é")).is_dir


async def test_big_file_round_trip_is_byte_identical(smb, workdir):
    base, local = workdir
    expected = pattern_digest(BIG)
    assert await smb.write(f"{base}/big.bin", pattern(BIG)) == BIG
    assert file_digest(local / "big.bin") == expected
    digest = hashlib.sha256()
    largest = 0
    async for chunk in smb.read(f"{base}/big.bin"):
        digest.update(chunk)
        largest = max(largest, len(chunk))
    assert digest.hexdigest() == expected
    assert largest <= 4 * MIB  # streamed in bounded chunks, never the whole file
    with (local / "big.bin").open("rb") as handle:
        handle.seek(BIG - 3 * MIB - 5)
        tail = handle.read(3 * MIB + 5)
    assert await read_all(smb, f"{base}/big.bin", BIG - 3 * MIB - 5, 3 * MIB + 5) == tail
    assert await read_all(smb, f"{base}/big.bin", 10, 0) == b""


async def test_upload_replaces_an_existing_file_and_leaves_no_temporary(smb, workdir):
    base, local = workdir
    (local / "report.txt").write_bytes(b"old contents")
    await smb.write(f"{base}/report.txt", once(b"new"))
    assert (local / "report.txt").read_bytes() == b"new"
    assert sorted(p.name for p in local.iterdir()) == ["report.txt"]


async def test_aborted_upload_leaves_no_file_under_the_final_name(smb, workdir):
    base, local = workdir

    async def broken() -> AsyncIterator[bytes]:
        yield b"x" * (3 * MIB)
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        await smb.write(f"{base}/partial.bin", broken())
    assert list(local.iterdir()) == []
    # the adapter is still usable afterwards
    await smb.write(f"{base}/after.bin", once(b"ok"))
    assert (local / "after.bin").read_bytes() == b"ok"


async def test_an_upload_cancelled_while_its_file_is_created_leaves_nothing(smb, workdir):
    """The client goes away while the temporary file is being created (the create runs on
    in its thread): once it is made, it is deleted; a read cancelled the same way closes."""
    base, local = workdir
    creating, go_on = threading.Event(), threading.Event()
    original = smb._create_temporary

    def slow_create(*args):
        creating.set()
        go_on.wait(10)
        return original(*args)

    smb._create_temporary = slow_create
    task = asyncio.ensure_future(smb.write(f"{base}/cancelled.bin", once(b"x" * MIB)))
    await asyncio.to_thread(creating.wait, 10)
    task.cancel()
    await asyncio.sleep(0.1)
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(local.iterdir()) == []
    smb._create_temporary = original
    await smb.write(f"{base}/after.bin", once(b"ok"))
    assert sorted(p.name for p in local.iterdir()) == ["after.bin"]


async def test_delete_is_recursive_and_deletes_files(smb, workdir):
    base, local = workdir
    tree = local / "tree"
    (tree / "a" / "b c").mkdir(parents=True)
    (tree / "a" / "b c" / "deep é.txt").write_text("deep")
    (tree / "a" / "f.txt").write_text("f")
    (tree / "empty dir").mkdir()
    (local / "single.txt").write_text("1")
    await smb.remove(f"{base}/tree")
    assert not tree.exists()
    await smb.remove(f"{base}/single.txt")
    assert list(local.iterdir()) == []


async def test_rename_across_directories(smb, workdir):
    base, local = workdir
    (local / "src").mkdir()
    (local / "dst").mkdir()
    (local / "src" / "file one.txt").write_text("1")
    (local / "src" / "sub").mkdir()
    (local / "src" / "sub" / "inner.txt").write_text("inner")
    await smb.rename(f"{base}/src/file one.txt", f"{base}/dst/renamed ü.txt")
    await smb.rename(f"{base}/src/sub", f"{base}/dst/moved sub")
    assert (local / "dst" / "renamed ü.txt").read_text() == "1"
    assert (local / "dst" / "moved sub" / "inner.txt").read_text() == "inner"
    assert list((local / "src").iterdir()) == []
    (local / "src" / "clash.txt").write_text("a")
    with pytest.raises(Conflict):
        await smb.rename(f"{base}/src/clash.txt", f"{base}/dst/renamed ü.txt")
    assert (local / "dst" / "renamed ü.txt").read_text() == "1"


async def test_missing_paths_are_remote_not_found(smb, workdir):
    base, _ = workdir
    for call in (
        lambda: smb.list(f"{base}/nope"),
        lambda: smb.stat(f"{base}/nope.txt"),
        lambda: read_all(smb, f"{base}/nope.txt"),
        lambda: smb.remove(f"{base}/nope"),
        lambda: smb.rename(f"{base}/nope", f"{base}/other"),
        lambda: smb.mkdir(f"{base}/no/such/parent"),
        lambda: smb.write(f"{base}/no/such/dir/f.txt", once(b"1")),
    ):
        with pytest.raises(RemoteNotFound):
            await call()


async def test_clean_refusals(smb, workdir):
    base, local = workdir
    (local / "d").mkdir()
    (local / "f.txt").write_text("x")
    with pytest.raises(Conflict):
        await smb.mkdir(f"{base}/d")
    with pytest.raises(InvalidInput):
        await smb.list(f"{base}/f.txt")
    with pytest.raises(InvalidInput):
        await read_all(smb, f"{base}/d")
    with pytest.raises(InvalidInput):
        await smb.remove("/")
    with pytest.raises(InvalidInput):
        await smb.write("/", once(b"x"))


async def test_paths_never_leave_the_share(smb, samba):
    root_names = {e.name for e in await smb.list("/")}
    assert {e.name for e in await smb.list("/../../..")} == root_names
    assert {e.name for e in await smb.list("..\\..")} == root_names
    (samba.share_dir("files") / "inside.txt").write_text("in")
    try:
        assert await read_all(smb, "/../../inside.txt") == b"in"
        with pytest.raises(RemoteNotFound):
            await smb.stat("/../../etc/passwd")
    finally:
        (samba.share_dir("files") / "inside.txt").unlink()


async def test_read_only_share_refuses_writes(samba):
    (samba.share_dir("readonly") / "keep.txt").write_text("keep")
    files = await open_files(None, smb_target(samba, "readonly"))
    try:
        assert [e.name for e in await files.list("/")] == ["keep.txt"]
        for call in (
            lambda: files.mkdir("/new"),
            lambda: files.write("/up.txt", once(b"1")),
            lambda: files.remove("/keep.txt"),
            lambda: files.rename("/keep.txt", "/moved.txt"),
        ):
            with pytest.raises(RemotePermissionDenied):
                await call()
        assert (samba.share_dir("readonly") / "keep.txt").read_text() == "keep"
    finally:
        await files.close()


async def test_guest_session_without_credentials(samba):
    files = await open_files(None, smb_target(samba, "public", username=None, password=None))
    try:
        await files.write("/guest.txt", once(b"from a guest"))
        assert (samba.share_dir("public") / "guest.txt").read_bytes() == b"from a guest"
        await files.remove("/guest.txt")
    finally:
        await files.close()
    with pytest.raises(RemotePermissionDenied):
        await open_files(None, smb_target(samba, "files", username=None, password=None))


async def test_connect_failures_say_what_failed(samba):
    with pytest.raises(RemoteAuthFailed):
        await open_files(None, smb_target(samba, password="wrong password"))
    with pytest.raises(RemoteAuthFailed):
        await open_files(None, smb_target(samba, username="nobody-here", password="x"))
    with pytest.raises(RemoteNotFound, match="no-such-share"):
        await open_files(None, smb_target(samba, "no-such-share"))
    with pytest.raises(RemoteUnreachable):
        await open_files(None, smb_target(samba, port=free_port()))
    with pytest.raises(InvalidInput):
        await open_files(None, smb_target(samba, "a/b"))
    whole = await open_files(None, smb_target(samba, "", password="wrong password"))
    try:
        with pytest.raises(RemoteAuthFailed):
            await whole.list("/")
    finally:
        await whole.close()


async def test_without_a_share_the_server_is_browsed(samba):
    (samba.share_dir("public") / "hello.txt").write_bytes(b"hi")
    files = await open_files(None, smb_target(samba, ""))
    try:
        shares = await files.list("/")
        assert sorted(e.name for e in shares) == ["files", "public", "readonly"]
        assert (await files.stat("/")).is_dir and (await files.stat("/public")).is_dir
        assert "hello.txt" in [e.name for e in await files.list("/public")]
        assert b"".join([c async for c in files.read("/public/hello.txt")]) == b"hi"
        with pytest.raises(RemoteNotFound):
            await files.list("/no-such-share")
    finally:
        await files.close()
        (samba.share_dir("public") / "hello.txt").unlink()


async def test_domain_field_is_used_for_the_login(samba):
    files = await open_files(
        None, smb_target(samba, extra={"share": "files", "domain": "HOSTGATE"})
    )
    try:
        assert isinstance(await files.list("/"), list)
    finally:
        await files.close()


async def test_reconnects_after_the_link_dropped(smb, workdir):
    base, local = workdir
    (local / "x.txt").write_text("x")
    connection = smb.share._connection
    assert connection is not None
    connection.transport.close()
    assert [e.name for e in await smb.list(base)] == ["x.txt"]


async def test_concurrent_transfers_on_one_session(smb, workdir):
    base, local = workdir
    sizes = {"a.bin": 9 * MIB + 1, "b.bin": 7 * MIB, "c.bin": 1}
    for name, size in sizes.items():
        (local / name).write_bytes(random.Random(size).randbytes(size))

    async def fetch(name: str) -> bytes:
        return await read_all(smb, f"{base}/{name}")

    results = await asyncio.gather(
        *(fetch(name) for name in sizes),
        smb.write(f"{base}/up.bin", pattern(5 * MIB, seed=3)),
        smb.list(base),
    )
    for name, data in zip(sizes, results, strict=False):
        assert data == (local / name).read_bytes()
    assert file_digest(local / "up.bin") == pattern_digest(5 * MIB, seed=3)


def test_a_malformed_share_list_answer_is_a_remote_error():
    from hostgate import RemoteError
    from hostgate_smb import srvsvc

    for stub in (b"", b"\x01\x00\x00\x00", b"\x01\x00\x00\x00" * 3 + b"\x05\x00\x00\x00"):
        with pytest.raises(RemoteError):
            srvsvc.parse_share_enum(stub)
    with pytest.raises(RemoteError):
        srvsvc.check_bind_ack(srvsvc.bind_request())  # a bind is not a bind_ack
    with pytest.raises(RemoteError):
        srvsvc.response_stub([b"\x05\x00"])


@pytest.fixture
def write_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every WRITE the uploads of the test send, in order (``_PipelinedWriter``)."""
    from hostgate_smb import files as smb_files

    sizes: list[int] = []
    original = smb_files._PipelinedWriter._send

    def spy(self: smb_files._PipelinedWriter, pieces: list, size: int) -> None:
        sizes.append(size)
        original(self, pieces, size)

    monkeypatch.setattr(smb_files._PipelinedWriter, "_send", spy)
    return sizes


async def test_an_upload_arriving_in_large_pieces_is_written_in_chunk_sized_requests(
    smb, workdir, write_sizes
):
    """A 6 MiB piece (a fast client, a slow server) goes out as 1 MiB writes, 4 MiB ones
    once the window holds them: no request asks for more credits than the window has."""
    from hostgate_smb import share as smb_share

    base, local = workdir
    payload = random.randbytes(6 * MIB + 7)

    async def pieces() -> AsyncIterator[bytes]:
        yield payload

    assert await smb.write(f"{base}/pieces.bin", pieces()) == len(payload)
    assert (local / "pieces.bin").read_bytes() == payload
    assert sum(write_sizes) == len(payload) and max(write_sizes) <= smb_share.WRITE_CHUNK
    assert set(write_sizes[:-1]) <= {MIB, smb_share.WRITE_CHUNK}  # the last is the rest


async def test_writes_grow_to_write_chunk_once_the_window_holds_them(smb, workdir, write_sizes):
    """The first writes of a session are 1 MiB (the window smbd grants at first covers one
    4 MiB write and nothing else); they ask for more credits, and the rest go as 4 MiB."""
    from hostgate_smb import share as smb_share

    base, local = workdir
    size = 40 * MIB + 3
    assert await smb.write(f"{base}/grown.bin", pattern(size, seed=4)) == size
    assert file_digest(local / "grown.bin") == pattern_digest(size, seed=4)
    assert sum(write_sizes) == size
    assert write_sizes[0] == MIB
    assert write_sizes.count(smb_share.WRITE_CHUNK) >= 6, write_sizes
    assert max(write_sizes) == smb_share.WRITE_CHUNK


@pytest.mark.parametrize("size", [1, MIB - 1, MIB, MIB + 1, 3 * MIB + 12345], ids=lambda n: f"{n}B")
async def test_uploads_around_write_boundaries_arrive_intact(smb, workdir, size):
    """Pieces of odd sizes (a few bytes, 300,001, 2.5 MiB) split across 1 MiB writes: every
    byte lands once, in order."""
    base, local = workdir
    payload = random.Random(size).randbytes(size)
    cuts = [0, 3, 300_004, 2_921_444]  # piece sizes 3, 300,001, 2,621,440, then the rest

    async def pieces() -> AsyncIterator[bytes]:
        bounds = sorted({min(cut, size) for cut in cuts} | {size})
        for start, end in itertools.pairwise(bounds):
            yield payload[start:end]

    assert await smb.write(f"{base}/edge.bin", pieces()) == size
    assert (local / "edge.bin").read_bytes() == payload
    assert sorted(p.name for p in local.iterdir()) == ["edge.bin"]


async def test_writes_in_flight_do_not_hold_the_uploaded_bytes(smb, workdir):
    """Memory stays flat: a 48 MiB upload in 64 KiB pieces holds the pieces of the next
    write and the copies smbprotocol makes while it packs and signs that one write (about
    six), never the writes in flight (smbprotocol's ``Request`` keeps each packed message:
    PIPELINE_DEPTH writes more, 54 MiB at the peak, when they are not dropped once sent)."""
    import tracemalloc

    from hostgate_smb import share as smb_share

    base, local = workdir
    size = 48 * MIB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        assert await smb.write(f"{base}/flat.bin", pattern(size, seed=9)) == size
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert file_digest(local / "flat.bin") == pattern_digest(size, seed=9)
    assert peak < 8 * smb_share.WRITE_CHUNK, peak


async def test_the_credit_charge_waited_for_is_the_one_smbprotocol_sends(smb, workdir):
    """``credit_charge`` (what a send waits for) equals the charge smbprotocol writes in
    each request's header: reads and writes of several sizes, a listing, an open."""
    from hostgate_smb.share import CreditWaitingConnection, credit_charge

    base, local = workdir
    (local / "c.bin").write_bytes(bytes(3 * MIB))
    seen: list[tuple[int, int]] = []
    original = CreditWaitingConnection.send

    def spy(self: CreditWaitingConnection, message, *args, **kwargs):
        request = original(self, message, *args, **kwargs)
        seen.append((credit_charge(self, message), request.message["credit_charge"].get_value()))
        return request

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CreditWaitingConnection, "send", spy)
        assert await read_all(smb, f"{base}/c.bin") == bytes(3 * MIB)
        assert await smb.write(f"{base}/d.bin", pattern(5 * MIB + 1, seed=2)) == 5 * MIB + 1
        await smb.list(base)
    charges = {ours for ours, _ in seen}
    assert {1, 16} <= charges  # small requests and 1 MiB reads or writes at least
    assert all(ours == theirs for ours, theirs in seen), seen


async def test_a_cancelled_upload_leaves_nothing_and_the_session_goes_on(smb, workdir):
    """The client goes away in the middle of the body: the kernel's staging removes the
    temporary file once the handle is closed."""
    base, local = workdir
    body = StalledBody(b"x" * (2 * MIB))
    task = asyncio.ensure_future(smb.write(f"{base}/cancelled.bin", body.chunks()))
    await asyncio.wait_for(body.taken.wait(), 30)
    assert [p.name for p in local.iterdir()][0].startswith(UPLOAD_TEMP_PREFIX)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(local.iterdir()) == []
    await smb.write(f"{base}/after.bin", once(b"ok"))
    assert sorted(p.name for p in local.iterdir()) == ["after.bin"]


async def test_an_upload_removes_what_a_killed_gateway_left(samba, workdir):  # noqa: F811
    """A new process (a fresh adapter) sweeps the directory at its first upload into it."""
    base, local = workdir
    planted = plant_upload_leftovers(local)
    files = await open_files(None, smb_target(samba))
    try:
        await files.write(f"{base}/new.txt", once(b"fresh upload"))
    finally:
        await files.close()
    assert sorted(p.name for p in local.iterdir()) == sorted([*planted.kept, "new.txt"])
