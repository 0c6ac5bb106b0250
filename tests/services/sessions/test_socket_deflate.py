"""permessage-deflate: the gateway compresses at level 1 with ISA-L (zlib's stream
format), sends small messages raw, and browsers that negotiate it (every one does)
get the same terminal output as those that do not."""

from __future__ import annotations

import base64
import json
import random
import zlib

import hypercorn.protocol.ws_stream as ws_stream
import websockets
from hostgate._compat import patches_enabled
from hostgate._compat import wsproto as compat_wsproto
from hostgate._compat.wsproto import DEFLATE, LEVEL, RAW_BELOW, FastDeflate
from wsproto.frame_protocol import FrameProtocol, Opcode, RsvBits

from .test_live_server import ticket

TEXT = b"".join(
    f"line {n}: some terminal output {n * 7919 % 10007}\r\n".encode() for n in range(4000)
)


def test_outbound_frames_are_compressed_at_the_fast_level():
    extension = FastDeflate()
    proto = FrameProtocol(client=False, extensions=[extension])
    rsv, first = extension.frame_outbound(
        proto, Opcode.BINARY, RsvBits(False, False, False), TEXT, True
    )
    assert rsv.rsv1
    expected = DEFLATE.compressobj(LEVEL, DEFLATE.DEFLATED, -15)
    assert first == (expected.compress(TEXT) + expected.flush(zlib.Z_SYNC_FLUSH))[:-4]
    # the context carries over to the next message, as wsproto's own does
    _, second = extension.frame_outbound(
        proto, Opcode.BINARY, RsvBits(False, False, False), TEXT, True
    )
    assert second == (expected.compress(TEXT) + expected.flush(zlib.Z_SYNC_FLUSH))[:-4]
    assert len(second) < len(first)
    inflate = zlib.decompressobj(-15)
    tail = b"\x00\x00\xff\xff"
    assert inflate.decompress(first + tail) + inflate.decompress(second + tail) == TEXT * 2


def test_isal_compresses_when_installed():
    from isal import isal_zlib

    assert DEFLATE is isal_zlib


def test_small_messages_go_raw_and_the_stream_stays_in_step():
    """A keystroke's echo is not deflated (RSV1 clear); a zlib inflater that is fed only
    the compressed messages, as a browser does, reads every message back."""
    extension = FastDeflate()
    proto = FrameProtocol(client=False, extensions=[extension])
    inflate = zlib.decompressobj(-15)
    tail = b"\x00\x00\xff\xff"
    received = []
    for message in [TEXT, b"x", TEXT[:5000], b"$ ", b"y" * RAW_BELOW, TEXT]:
        rsv, data = extension.frame_outbound(
            proto, Opcode.BINARY, RsvBits(False, False, False), message, True
        )
        assert rsv.rsv1 == (len(message) >= RAW_BELOW)
        received.append(inflate.decompress(data + tail) if rsv.rsv1 else data)
    assert received == [TEXT, b"x", TEXT[:5000], b"$ ", b"y" * RAW_BELOW, TEXT]


def test_a_smaller_window_asked_for_is_honoured():
    extension = FastDeflate(server_max_window_bits=9)
    extension.server_max_window_bits = 9
    proto = FrameProtocol(client=False, extensions=[extension])
    block = base64.b64encode(random.Random(7).randbytes(3000))  # repeats 4 KB back
    _, data = extension.frame_outbound(
        proto, Opcode.BINARY, RsvBits(False, False, False), block * 3, True
    )
    assert zlib.decompressobj(-9).decompress(data + b"\x00\x00\xff\xff") == block * 3
    # no match reaches 4 KB back: each repeat costs as much as the first
    assert len(data) > 2 * len(block)


def test_control_frames_pass_untouched():
    extension = FastDeflate()
    proto = FrameProtocol(client=False, extensions=[extension])
    rsv, data = extension.frame_outbound(
        proto, Opcode.PING, RsvBits(False, False, False), b"hi", True
    )
    assert (rsv.rsv1, data) == (False, b"hi")


def test_the_app_installs_it_into_hypercorn_unless_the_patches_are_off(app):
    expected = FastDeflate if patches_enabled() else compat_wsproto._STOCK
    assert ws_stream.PerMessageDeflate is expected


async def test_a_compressed_terminal_socket_carries_the_output(
    live_server, make_user, make_connection, tmp_path
):
    user = await make_user("alice")
    connection = await make_connection(
        user, "localshell", "127.0.0.1", 1, extra={"home": str(tmp_path)}
    )
    (tmp_path / "text.txt").write_bytes(TEXT.replace(b"\r\n", b"\n"))
    url = (
        f"{live_server.ws_url}/ws/localshell?ticket={await ticket(live_server, user)}"
        f"&connectionId={connection.id}&cols=200&rows=50"
    )
    async with websockets.connect(url, compression="deflate", max_size=2**22) as socket:
        assert socket.response.headers["Sec-WebSocket-Extensions"].startswith("permessage-deflate")
        assert json.loads(await socket.recv()) == {"type": "status", "message": "Connected"}
        await socket.send(
            json.dumps({"type": "data", "data": "cat text.txt; echo END-OF-$((40+2))\r"})
        )
        received = bytearray()
        while b"END-OF-42" not in received:  # the echo of the command reads $((40+2))
            frame = await socket.recv()
            if isinstance(frame, bytes):
                received += frame
        assert TEXT[:200] in received and TEXT[-200:] in received
