"""Plain data connections read into one large buffer (``hostgate_ftp.filling``), against vsftpd."""

from __future__ import annotations

import asyncio
import random
import uuid

from hostgate.chunkreader import ChunkReader
from hostgate_ftp.files import READ_CHUNK, open_files, receive
from hostgate_ftp.filling import CAPACITY, FIRST, FillingProtocol

from testsupport.ftpd import FtpServer

from .conftest import ftp_target

MIB = 1024 * 1024


async def pieces_of_a_download_that_waited(server: FtpServer) -> None:
    """With the whole file received before it is read, the pieces are the buffer's size.

    Not one socket read each (at most 256 KiB, asyncio's and uvloop's read size):
    the socket reads into the buffer, handed on when full (the buffer then doubles,
    up to ``CAPACITY``) and at the end: 7.75 MiB + 12,345 bytes come out as 256 KiB,
    512 KiB, 1, 2 and 4 MiB, and 12,345 bytes (short of the 8 MiB at which the reader
    would pause the socket).
    """
    payload = random.Random(5).randbytes(7 * MIB + 3 * MIB // 4 + 12345)
    name = f"fill-{uuid.uuid4().hex[:8]}.bin"
    local = server.local("/pub") / name
    local.write_bytes(payload)
    local.chmod(0o644)
    files = await open_files(None, ftp_target(server))
    try:
        async with files.pool.client() as client:
            stream = await client.get_stream(f"RETR /pub/{name}", "1xx")
            reader = stream.reader
            assert isinstance(reader, ChunkReader)
            protocol = stream.writer.transport.get_protocol()
            assert isinstance(protocol, FillingProtocol)
            async with asyncio.timeout(60):  # a wait for the server, not a measure
                while not reader._eof:  # type: ignore[attr-defined]
                    await asyncio.sleep(0.01)
            pieces = []
            while piece := await receive(stream, READ_CHUNK):
                pieces.append(piece)
            stream.close()
            await client.command(None, "2xx", "1xx")
        assert b"".join(pieces) == payload  # in order, nothing lost or repeated
        sizes = [len(piece) for piece in pieces]
        assert FIRST == MIB // 4 and CAPACITY == 4 * MIB
        assert sizes == [MIB // 4, MIB // 2, MIB, 2 * MIB, 4 * MIB, 12345]
    finally:
        local.unlink(missing_ok=True)
        await files.close()


async def test_bytes_that_waited_come_out_in_buffer_sized_pieces(vsftpd: FtpServer):
    await pieces_of_a_download_that_waited(vsftpd)


def test_the_same_on_uvloop(vsftpd: FtpServer):
    """uvloop (the gateway's loop) picks the buffered reads up when reading restarts."""
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(pieces_of_a_download_that_waited(vsftpd))


async def test_a_reader_waiting_gets_what_arrived_without_waiting_for_a_full_buffer(
    vsftpd: FtpServer,
):
    """Read as it arrives, a 9 MiB download is whole (each read hands on what is there)."""
    payload = random.Random(6).randbytes(9 * MIB + 7)
    name = f"wait-{uuid.uuid4().hex[:8]}.bin"
    local = vsftpd.local("/pub") / name
    local.write_bytes(payload)
    local.chmod(0o644)
    files = await open_files(None, ftp_target(vsftpd))
    try:
        chunks = [chunk async for chunk in files.read(f"/pub/{name}")]
        assert b"".join(chunks) == payload
        assert all(len(chunk) <= CAPACITY for chunk in chunks)
        # a ranged read (the adapter reads one byte past it to tell the end)
        part = [chunk async for chunk in files.read(f"/pub/{name}", 3, 2 * MIB)]
        assert b"".join(part) == payload[3 : 3 + 2 * MIB]
    finally:
        local.unlink(missing_ok=True)
        await files.close()


async def test_tls_data_connections_keep_asyncios_reads(vsftpd: FtpServer):
    """Under FTPS the transport's protocol is the TLS layer: no filling, bytes intact."""
    payload = random.Random(7).randbytes(2 * MIB + 1)
    name = f"tls-{uuid.uuid4().hex[:8]}.bin"
    local = vsftpd.local("/pub") / name
    local.write_bytes(payload)
    local.chmod(0o644)
    files = await open_files(
        None, ftp_target(vsftpd, extra={"ftps": True}, skip_cert_validation=True)
    )
    try:
        async with files.pool.client() as client:
            stream = await client.get_stream(f"RETR /pub/{name}", "1xx")
            assert not isinstance(stream.writer.transport.get_protocol(), FillingProtocol)
            pieces = []
            while piece := await receive(stream, READ_CHUNK):
                pieces.append(piece)
            stream.close()
            await client.command(None, "2xx", "1xx")
        assert b"".join(pieces) == payload
    finally:
        local.unlink(missing_ok=True)
        await files.close()
