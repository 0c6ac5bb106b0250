"""Clipboard rights in the VNC relay: cut-text messages dropped where they are denied.

RFB carries the clipboard in its own messages: ``ClientCutText`` (the browser's
clipboard to the desktop: a paste) and ``ServerCutText`` (the desktop's clipboard to
the browser: a copy). When the user may not copy or paste on the connection, the
relay reads both directions as RFB messages (``ClipboardGate``):

- the browser's ``SetEncodings`` loses the extended-clipboard pseudo-encoding (its
  messages mix both directions) and, while copying is denied, every encoding whose
  updates the gate cannot step over without decoding (Tight, Hextile...): what is left
  (Raw, CopyRect, RRE, Zlib, ZRLE and the usual pseudo-encodings) says each update's
  length, so the server's messages are framed without decoding a pixel;
- paste denied: every ``ClientCutText`` is dropped; copy denied: every
  ``ServerCutText`` is dropped, so the text never leaves the gateway;
- a message the gate cannot frame ends the session (``ValueError``): it never guesses
  and lets a clipboard through.

Each refusal is audited (``session.action_denied``), at most ``AUDIT_CAP`` times per
action in one session (a desktop that changes its clipboard in a loop would flood the
log otherwise).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Generator

ENC_RAW, ENC_COPYRECT, ENC_RRE, ENC_ZLIB, ENC_ZRLE = 0, 1, 2, 6, 16
ENC_CURSOR = -239
ENC_DESKTOP_SIZE = -223
ENC_LAST_RECT = -224
ENC_DESKTOP_NAME = -307
ENC_EXTENDED_DESKTOP_SIZE = -308
ENC_FENCE = -312
ENC_CONTINUOUS_UPDATES = -313
ENC_QEMU_EXTENDED_KEY = -258
ENC_EXTENDED_CLIPBOARD = -1063131698
NO_DATA = frozenset(
    {
        ENC_DESKTOP_SIZE,
        ENC_FENCE,
        ENC_CONTINUOUS_UPDATES,
        ENC_QEMU_EXTENDED_KEY,
        *range(-256, -246),  # compression level
        *range(-32, -22),  # JPEG quality level
    }
)
FRAMED = frozenset(
    {
        ENC_RAW,
        ENC_COPYRECT,
        ENC_RRE,
        ENC_ZLIB,
        ENC_ZRLE,
        ENC_CURSOR,
        ENC_LAST_RECT,
        ENC_DESKTOP_NAME,
        ENC_EXTENDED_DESKTOP_SIZE,
        *NO_DATA,
    }
)
"""Encodings whose rectangles the gate can step over (while copying is denied)."""

CLIENT_SET_PIXEL_FORMAT, CLIENT_SET_ENCODINGS, CLIENT_CUT_TEXT = 0, 2, 6
CLIENT_FIXED = {0: 20, 3: 10, 4: 8, 5: 6, 150: 10, 250: 4}
SERVER_CUT_TEXT = 3
AUDIT_CAP = 20
CLIPBOARD = frozenset({"copy", "paste"})
MAX_NAME = 64 * 1024


class ClipboardGate:
    """Drops the clipboard messages of denied directions (one per relayed session)."""

    def __init__(self, denied: frozenset[str], refuse: Callable[[str], None]) -> None:
        self.copy_denied = "copy" in denied
        self.paste_denied = "paste" in denied
        self._refuse = refuse
        self._refused = {"copy": 0, "paste": 0}
        # the browser's side
        self._client = bytearray()
        self._client_started = False
        self._client_skip = 0  # bytes of a dropped cut text still to drop
        self._client_pass = 0  # bytes of an allowed long cut text still to pass, unheld
        self._bpp = 4
        # the server's side (framed only while copying is denied)
        self._buffer = bytearray()
        self._pos = 0
        self._kept = 0
        self._dropping = False
        self._out = bytearray()
        self._parser = self._server_messages()
        self._want = next(self._parser)

    def _refusal(self, action: str) -> None:
        if self._refused[action] < AUDIT_CAP:
            self._refused[action] += 1
            self._refuse(action)

    # -- browser to server ----------------------------------------------------------

    def from_browser(self, data: bytes) -> bytes:
        """The browser's bytes less denied cut text, encodings filtered; whole messages only."""
        self._client += data
        out = bytearray()
        buffer = self._client
        if not self._client_started and buffer:
            out += buffer[:1]  # ClientInit
            del buffer[:1]
            self._client_started = True
        while buffer:
            if self._client_skip:
                taken = min(self._client_skip, len(buffer))
                del buffer[:taken]
                self._client_skip -= taken
                continue
            if self._client_pass:
                taken = min(self._client_pass, len(buffer))
                out += buffer[:taken]
                del buffer[:taken]
                self._client_pass -= taken
                continue
            kind = buffer[0]
            if kind == CLIENT_CUT_TEXT:
                if len(buffer) < 8:
                    break
                (length,) = struct.unpack_from(">i", buffer, 4)
                if self.paste_denied:
                    del buffer[:8]
                    self._client_skip = abs(length)  # dropped as it comes, never held
                    self._refusal("paste")
                    continue
                out += buffer[:8]
                del buffer[:8]
                self._client_pass = abs(length)
                continue
            length = _client_length(buffer)
            if length is None or len(buffer) < length:
                break
            message = bytes(buffer[:length])
            del buffer[:length]
            if kind == CLIENT_SET_ENCODINGS:
                message = self._encodings(message)
            elif kind == CLIENT_SET_PIXEL_FORMAT:
                self._bpp = max(1, message[4] // 8)
            out += message
        return bytes(out)

    def _encodings(self, message: bytes) -> bytes:
        (count,) = struct.unpack_from(">H", message, 2)
        kept = [
            number
            for number in struct.unpack_from(f">{count}i", message, 4)
            if number != ENC_EXTENDED_CLIPBOARD and (not self.copy_denied or number in FRAMED)
        ]
        return struct.pack(f">BxH{len(kept)}i", CLIENT_SET_ENCODINGS, len(kept), *kept)

    # -- server to browser ----------------------------------------------------------

    def from_server(self, data: bytes) -> bytes:
        """The server's bytes less ``ServerCutText`` (while copying is denied)."""
        if not self.copy_denied:
            return data
        self._buffer += data
        self._out = bytearray()
        try:
            while len(self._buffer) - self._pos >= self._want:
                self._want = self._parser.send(None)
        except (struct.error, StopIteration) as exc:
            raise ValueError(f"unreadable server message: {exc}") from None
        self._keep(self._pos)
        del self._buffer[: self._pos]
        self._kept -= self._pos
        self._pos = 0
        return bytes(self._out)

    def _keep(self, upto: int) -> None:
        if not self._dropping and upto > self._kept:
            self._out += self._buffer[self._kept : upto]
        self._kept = max(self._kept, upto)

    def _take(self, count: int) -> bytes:
        data = bytes(self._buffer[self._pos : self._pos + count])
        self._pos += count
        return data

    def _skip(self, count: int) -> Generator[int, None, None]:
        while count > 0:
            available = len(self._buffer) - self._pos
            if available <= 0:
                yield 1
                continue
            step = min(count, available)
            self._pos += step
            count -= step

    def _server_messages(self) -> Generator[int, None, None]:
        yield 24  # ServerInit
        head = self._take(24)
        self._bpp = max(1, head[4] // 8)
        (length,) = struct.unpack(">I", head[20:24])
        if length > MAX_NAME:
            raise ValueError("desktop name too long")
        yield from self._skip(length)
        while True:
            yield 1
            start = self._pos
            (kind,) = self._take(1)
            if kind == 0:
                yield from self._update()
            elif kind == 1:  # SetColourMapEntries
                yield 5
                (count,) = struct.unpack(">xxxH", self._take(5))
                yield from self._skip(count * 6)
            elif kind == SERVER_CUT_TEXT:
                self._keep(start)
                self._dropping = True
                yield 7
                (length,) = struct.unpack(">xxxi", self._take(7))
                yield from self._skip(abs(length))
                self._kept = self._pos
                self._dropping = False
                self._refusal("copy")
            elif kind == 248:  # ServerFence
                yield 8
                (length,) = struct.unpack(">xxxxxxxB", self._take(8))
                yield from self._skip(length)
            elif kind not in (2, 150):  # Bell, EndOfContinuousUpdates: no body
                raise ValueError(f"server message type {kind}")

    def _update(self) -> Generator[int, None, None]:
        yield 3
        (count,) = struct.unpack(">xH", self._take(3))
        for _ in range(count):
            yield 12
            _x, _y, w, h, encoding = struct.unpack(">HHHHi", self._take(12))
            bpp = self._bpp
            if encoding == ENC_LAST_RECT:
                return
            if encoding == ENC_RAW:
                yield from self._skip(w * h * bpp)
            elif encoding == ENC_COPYRECT:
                yield from self._skip(4)
            elif encoding == ENC_RRE:
                yield 4
                (subrects,) = struct.unpack(">I", self._take(4))
                yield from self._skip(bpp + subrects * (bpp + 8))
            elif encoding in (ENC_ZLIB, ENC_ZRLE, ENC_DESKTOP_NAME):
                yield 4
                (length,) = struct.unpack(">I", self._take(4))
                yield from self._skip(length)
            elif encoding == ENC_CURSOR:
                yield from self._skip(w * h * bpp + ((w + 7) // 8) * h)
            elif encoding == ENC_EXTENDED_DESKTOP_SIZE:
                yield 4
                screens = self._take(4)[0]
                yield from self._skip(16 * screens)
            elif encoding not in NO_DATA:
                raise ValueError(f"encoding {encoding}")


def _client_length(buffer: bytearray) -> int | None:
    """The length of the browser message at the buffer's start (None: not known yet)."""
    kind = buffer[0]
    if kind in CLIENT_FIXED:
        return CLIENT_FIXED[kind]
    if kind == CLIENT_SET_ENCODINGS:
        return None if len(buffer) < 4 else 4 + 4 * struct.unpack_from(">H", buffer, 2)[0]
    if kind == CLIENT_CUT_TEXT:
        return None if len(buffer) < 8 else 8 + abs(struct.unpack_from(">i", buffer, 4)[0])
    if kind == 248:  # ClientFence
        return None if len(buffer) < 9 else 9 + buffer[8]
    if kind == 251:  # SetDesktopSize
        return None if len(buffer) < 7 else 8 + 16 * buffer[6]
    if kind == 255:  # QEMU extended key event
        if len(buffer) < 2:
            return None
        if buffer[1] == 0:
            return 12
    raise ValueError(f"browser message type {kind}")
