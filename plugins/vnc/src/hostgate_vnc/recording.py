"""Recording a VNC session at the gateway: RFB messages cut at their boundaries, key frames.

While a session is recorded the relay reads both directions as RFB messages:

- the browser's ``SetEncodings`` keeps only encodings whose updates decode on
  their own (Raw, CopyRect, RRE, Hextile and the pseudo-encodings below): a
  zlib stream (ZRLE, Tight, Zlib) carries state from the first update on, so a
  player could not start at a key frame;
- the server's bytes are recorded as read; a ``FramebufferUpdate`` whose pixel
  rectangles cover the whole screen (no CopyRect) is a key frame: it follows a
  sync record (a ServerInit with the current size), put in before every update
  while one is due (half an interval after the last), and indexed once the
  update has proved to be full;
- every ``KEY_FRAME_SECONDS`` the relay asks the server for a full
  (non-incremental) update, between two of the browser's messages;
- the pointer's shape (the Cursor pseudo-encoding) comes only when it changes:
  the relay keeps the last one (up to ``MAX_CURSOR`` bytes) and repeats it right
  after each key frame's sync record, as an update of its own holding just that
  rectangle, so a player starting at a key frame draws the pointer too;
- pointer and key events go to the input channel, keys without their keysym (a
  recording must not be a keylogger for every password typed into the desktop);
  presses are the timeline's ``click`` and ``key``.

A message this module does not know stops the scanning (the session goes on,
recorded as it comes, without further key frames).
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Generator

from hostgate import StreamRecorder

log = logging.getLogger("hostgate.vnc")

KEY_FRAME_SECONDS = 10.0
"""How often the relay asks for a full update (bench/vnc_recording.py measures the cost)."""

ENC_RAW = 0
ENC_COPYRECT = 1
ENC_RRE = 2
ENC_HEXTILE = 5
ENC_CURSOR = -239
ENC_DESKTOP_SIZE = -223
ENC_LAST_RECT = -224
ENC_EXTENDED_DESKTOP_SIZE = -308
ENC_QEMU_EXTENDED_KEY = -258
ENC_EXTENDED_CLIPBOARD = -1063131698  # 0xC0A1E5CE: UTF-8 clipboard in (negative-length) cut text
PIXEL_ENCODINGS = {ENC_RAW, ENC_COPYRECT, ENC_RRE, ENC_HEXTILE}
PSEUDO_ENCODINGS = {
    ENC_CURSOR,
    ENC_DESKTOP_SIZE,
    ENC_LAST_RECT,
    ENC_EXTENDED_DESKTOP_SIZE,
    ENC_QEMU_EXTENDED_KEY,
    ENC_EXTENDED_CLIPBOARD,
    *range(-256, -246),  # compression level
    *range(-32, -22),  # JPEG quality level
}
ALLOWED_ENCODINGS = PIXEL_ENCODINGS | PSEUDO_ENCODINGS

HEXTILE_RAW = 1
HEXTILE_BACKGROUND = 2
HEXTILE_FOREGROUND = 4
HEXTILE_ANY_SUBRECTS = 8
HEXTILE_COLOURED = 16

CLIENT_SET_PIXEL_FORMAT = 0
CLIENT_SET_ENCODINGS = 2
CLIENT_UPDATE_REQUEST = 3
CLIENT_KEY = 4
CLIENT_POINTER = 5
CLIENT_CUT_TEXT = 6
CLIENT_ENABLE_CONTINUOUS = 150
CLIENT_FENCE = 248
CLIENT_XVP = 250
CLIENT_SET_DESKTOP_SIZE = 251
CLIENT_QEMU = 255
CLICK_BUTTONS = 0b111  # left, middle, right; wheel "buttons" are not clicks
MAX_CURSOR = 128 * 128 * 4 + 16 * 128
"""The largest pointer shape kept to repeat at key frames (128x128 at 32 bpp, with its mask)."""
MAX_HELD = 64 * 1024
"""A browser message longer than this (a pasted text) passes in pieces, not held whole."""


def filter_encodings(message: bytes) -> bytes:
    """A ``SetEncodings`` message keeping only the encodings a recording can seek through."""
    (count,) = struct.unpack_from(">H", message, 2)
    kept = [
        number
        for number in struct.unpack_from(f">{count}i", message, 4)
        if number in ALLOWED_ENCODINGS
    ]
    if not any(number in PIXEL_ENCODINGS for number in kept):
        kept.insert(0, ENC_RAW)
    return struct.pack(f">BxH{len(kept)}i", CLIENT_SET_ENCODINGS, len(kept), *kept)


def update_request(width: int, height: int, *, incremental: bool = False) -> bytes:
    """A FramebufferUpdateRequest for the whole screen."""
    return struct.pack(">BBHHHH", CLIENT_UPDATE_REQUEST, int(incremental), 0, 0, width, height)


class ServerScanner:
    """Hands the server's output to the recorder and finds key frames in it.

    ``feed`` takes bytes as read; a resumable parser (a generator that yields how
    many bytes it needs next) keeps its place inside a message, so a large update
    arriving in pieces is parsed once and nothing is held past the read. Before a
    ``FramebufferUpdate`` starts while a key frame is due, a sync record goes in;
    when the update turns out to cover the whole screen it is indexed
    (``recorder.key_frame``), else it stays an unindexed sync record.
    """

    def __init__(self, recorder: StreamRecorder, clock: Callable[[], float] = time.monotonic):
        self.recorder = recorder
        self.clock = clock
        self.width = 0
        self.height = 0
        self.bpp = 4
        self.pixel_format = b"\x00" * 16
        self.name = b""
        self.broken = False
        self._ready = False
        self._budget = 0
        self.last_key_frame = 0.0
        self.cursor: bytes | None = None
        """The last Cursor rectangle (header and body), repeated after each sync record."""
        self._buffer = bytearray()
        self._emitted = 0
        """Bytes of the buffer already handed to the recorder."""
        self._pos = 0
        self._parser = self._messages()
        self._want = next(self._parser)

    def set_pixel_format(self, pixel_format: bytes) -> None:
        """The browser chose a pixel format (``SetPixelFormat``)."""
        self.pixel_format = bytes(pixel_format)
        self.bpp = max(1, pixel_format[0] // 8)

    def feed(self, data: bytes) -> None:
        """Bytes the server sent."""
        if self.broken:
            self.recorder.server(data)
            return
        self._buffer += data
        self._budget = self._step_budget()
        try:
            while len(self._buffer) - self._pos >= self._want:
                self._want = self._parser.send(None)
                self._budget -= 1
                if self._budget < 0:
                    raise ValueError("too many tiny messages or tiles in one read")
        except (ValueError, struct.error, StopIteration) as exc:
            self._give_up(str(exc) or "unreadable server message")
            return
        if self._ready:
            self._emit(self._pos)
        else:  # the ServerInit is the opening sync record, not server bytes
            self._emitted = self._pos
        del self._buffer[: self._pos]
        self._emitted -= self._pos
        self._pos = 0

    def _emit(self, upto: int) -> None:
        if upto > self._emitted:
            self.recorder.server(bytes(self._buffer[self._emitted : upto]))
            self._emitted = upto

    def _step_budget(self) -> int:
        """Parser steps (messages, rectangles, tiles) one read may take: 8 screens of tiles.

        A server that sends a flood of empty updates or one-byte tiles would
        otherwise make the gateway do Python work per byte; past this the scanning
        stops (the bytes are still relayed and recorded).
        """
        tiles = ((self.width + 15) // 16) * ((self.height + 15) // 16)
        return 8 * tiles + 4096

    def _give_up(self, why: str) -> None:
        log.info("VNC recording: no more key frames (%s)", why)
        self.broken = True
        self._emit(len(self._buffer))
        self._buffer.clear()
        self._emitted = self._pos = 0

    def _take(self, count: int) -> bytes:
        data = bytes(self._buffer[self._pos : self._pos + count])
        self._pos += count
        return data

    def _skip(self, count: int) -> Generator[int, None, None]:
        """Skip ``count`` bytes as they come."""
        while count > 0:
            available = len(self._buffer) - self._pos
            if available <= 0:
                yield 1
                continue
            step = min(count, available)
            self._pos += step
            count -= step

    def server_init(self) -> bytes:
        """A ServerInit with the current size and pixel format (a sync record's body)."""
        return (
            struct.pack(">HH", self.width, self.height)
            + self.pixel_format
            + struct.pack(">I", len(self.name))
            + self.name
        )

    def _messages(self) -> Generator[int, None, None]:
        yield 24
        head = self._take(24)
        self.width, self.height = struct.unpack(">HH", head[:4])
        self.set_pixel_format(head[4:20])
        (length,) = struct.unpack(">I", head[20:24])
        if length > 4096:
            raise ValueError("desktop name too long")
        yield length
        self.name = self._take(length)
        self._emitted = self._pos
        self.recorder.sync(self.server_init())
        self.last_key_frame = float("-inf")  # the first full picture is a key frame too
        self._ready = True
        while True:
            yield 1
            (kind,) = self._take(1)
            if kind == 0:
                sync: int | None = None
                now = self.clock()
                if now - self.last_key_frame >= KEY_FRAME_SECONDS / 2:
                    self._emit(self._pos - 1)  # up to this message's first byte
                    sync = self.recorder.sync(self.server_init())
                    if sync is not None and self.cursor is not None:
                        self.recorder.server(struct.pack(">BxH", 0, 1) + self.cursor)
                full = yield from self._update()
                if full and sync is not None:
                    self.recorder.key_frame(sync)
                    self.last_key_frame = now
            elif kind == 1:  # SetColourMapEntries
                yield 5
                (count,) = struct.unpack(">xxxH", self._take(5))
                yield from self._skip(count * 6)
            elif kind == 3:  # ServerCutText (a negative length: extended clipboard)
                yield 7
                (length,) = struct.unpack(">xxxi", self._take(7))
                yield from self._skip(abs(length))
            elif kind == 248:  # ServerFence
                yield 8
                (length,) = struct.unpack(">xxxxxxxB", self._take(8))
                yield from self._skip(length)
            elif kind not in (2, 150):  # Bell, EndOfContinuousUpdates: no body
                raise ValueError(f"server message type {kind}")

    def _update(self) -> Generator[int, None, bool]:
        yield 3
        (count,) = struct.unpack(">xH", self._take(3))
        area = 0
        copied = False
        for _ in range(count):
            yield 12
            x, y, w, h, encoding = struct.unpack(">HHHHi", self._take(12))
            if encoding == ENC_LAST_RECT:
                break
            if encoding == ENC_RAW:
                yield from self._skip(w * h * self.bpp)
            elif encoding == ENC_COPYRECT:
                copied = True
                yield from self._skip(4)
            elif encoding == ENC_RRE:
                yield 4
                (subrects,) = struct.unpack(">I", self._take(4))
                yield from self._skip(self.bpp + subrects * (self.bpp + 8))
            elif encoding == ENC_HEXTILE:
                yield from self._hextile(w, h)
            elif encoding == ENC_CURSOR:
                size = w * h * self.bpp + ((w + 7) // 8) * h
                if size > MAX_CURSOR:
                    self.cursor = None
                    yield from self._skip(size)
                    continue
                yield size
                body = self._take(size)
                self.cursor = struct.pack(">HHHHi", x, y, w, h, encoding) + body
                continue
            elif encoding == ENC_DESKTOP_SIZE:
                self.width, self.height = w, h
                continue
            elif encoding == ENC_EXTENDED_DESKTOP_SIZE:
                yield 4
                screens = self._take(4)[0]
                yield from self._skip(16 * screens)
                if y == 0:
                    self.width, self.height = w, h
                continue
            elif encoding in PSEUDO_ENCODINGS:
                continue
            else:
                raise ValueError(f"encoding {encoding}")
            area += w * h
        return not copied and self.width * self.height > 0 and area >= self.width * self.height

    def _hextile(self, width: int, height: int) -> Generator[int, None, None]:
        """Skip a Hextile rectangle: a tight loop over the tiles already read.

        Only a tile cut by the end of what has arrived makes the parser wait.
        """
        bpp = self.bpp
        cols, rows = (width + 15) // 16, (height + 15) // 16
        last_w, last_h = width - (cols - 1) * 16, height - (rows - 1) * 16
        row = col = 0
        while row < rows:
            buffer, pos, end = self._buffer, self._pos, len(self._buffer)
            need = 0
            tiles = 0
            while row < rows:
                if pos >= end:
                    need = 1
                    break
                flags = buffer[pos]
                if flags & HEXTILE_RAW:
                    tw = 16 if col < cols - 1 else last_w
                    th = 16 if row < rows - 1 else last_h
                    size = 1 + tw * th * bpp
                else:
                    size = 1
                    if flags & HEXTILE_BACKGROUND:
                        size += bpp
                    if flags & HEXTILE_FOREGROUND:
                        size += bpp
                    if flags & HEXTILE_ANY_SUBRECTS:
                        if pos + size >= end:
                            need = size + 1
                            break
                        per = 2 + bpp if flags & HEXTILE_COLOURED else 2
                        size += 1 + buffer[pos + size] * per
                if pos + size > end:
                    need = size
                    break
                pos += size
                tiles += 1
                col += 1
                if col == cols:
                    col = 0
                    row += 1
            self._pos = pos
            self._budget -= tiles
            if need:
                yield need


class ClientScanner:
    """The browser's messages: filtered encodings, input events recorded, key frames asked for.

    ``feed`` returns what to send the server: whole messages only, so the relay
    can put a request of its own between two of them.
    """

    def __init__(self, recorder: StreamRecorder, server: ServerScanner) -> None:
        self.recorder = recorder
        self.server = server
        self.broken = False
        self._buffer = bytearray()
        self._started = False
        self._buttons = 0
        self._passing = 0
        """Bytes of a long ClientCutText still to pass through unheld."""

    @property
    def at_boundary(self) -> bool:
        """True when no partial message is held (a message of the relay's may go now)."""
        return not self._buffer and not self._passing and self._started and not self.broken

    def feed(self, data: bytes) -> bytes:
        """Browser bytes; returns the bytes for the server."""
        if self.broken:
            return data
        self._buffer += data
        out = bytearray()
        if not self._started and self._buffer:
            out += self._buffer[:1]  # ClientInit
            del self._buffer[:1]
            self._started = True
        while self._buffer:
            if self._passing:  # the rest of a long cut text: straight on, never held
                taken = min(self._passing, len(self._buffer))
                out += self._buffer[:taken]
                del self._buffer[:taken]
                self._passing -= taken
                continue
            if self._buffer[0] == CLIENT_CUT_TEXT and len(self._buffer) >= 8:
                (length,) = struct.unpack_from(">i", self._buffer, 4)
                if abs(length) > MAX_HELD:
                    out += self._buffer[:8]
                    del self._buffer[:8]
                    self._passing = abs(length)
                    continue
            length = self._length()
            if length is None:
                break
            if length < 0:
                log.info("VNC recording: unknown browser message %d", self._buffer[0])
                self.broken = True
                out += self._buffer
                self._buffer.clear()
                break
            if len(self._buffer) < length:
                break
            message = bytes(self._buffer[:length])
            del self._buffer[:length]
            out += self._handle(message)
        return bytes(out)

    def _length(self) -> int | None:
        """The length of the message at the buffer's start; None: unknown yet; -1: unknown type."""
        buffer = self._buffer
        kind = buffer[0]
        fixed = {
            CLIENT_SET_PIXEL_FORMAT: 20,
            CLIENT_UPDATE_REQUEST: 10,
            CLIENT_KEY: 8,
            CLIENT_POINTER: 6,
            CLIENT_ENABLE_CONTINUOUS: 10,
            CLIENT_XVP: 4,
        }
        if kind in fixed:
            return fixed[kind]
        if kind == CLIENT_SET_ENCODINGS:
            return None if len(buffer) < 4 else 4 + 4 * struct.unpack_from(">H", buffer, 2)[0]
        if kind == CLIENT_CUT_TEXT:
            return None if len(buffer) < 8 else 8 + abs(struct.unpack_from(">i", buffer, 4)[0])
        if kind == CLIENT_FENCE:
            return None if len(buffer) < 9 else 9 + buffer[8]
        if kind == CLIENT_SET_DESKTOP_SIZE:
            return None if len(buffer) < 7 else 8 + 16 * buffer[6]
        if kind == CLIENT_QEMU:
            if len(buffer) < 2:
                return None
            return 12 if buffer[1] == 0 else -1
        return -1

    def _handle(self, message: bytes) -> bytes:
        kind = message[0]
        if kind == CLIENT_SET_ENCODINGS:
            return filter_encodings(message)
        if kind == CLIENT_SET_PIXEL_FORMAT:
            self.server.set_pixel_format(message[4:20])
        elif kind == CLIENT_POINTER:
            buttons = message[1]
            if buttons & CLICK_BUTTONS & ~self._buttons:
                self.recorder.input_event("click")
            self._buttons = buttons
            self.recorder.client(message)
        elif kind == CLIENT_KEY:
            if message[1]:
                self.recorder.input_event("key")
            self.recorder.client(message[:2] + b"\x00" * 6)  # not which key
        elif kind == CLIENT_QEMU:
            down = struct.unpack_from(">H", message, 2)[0]
            if down:
                self.recorder.input_event("key")
            self.recorder.client(bytes([CLIENT_KEY, 1 if down else 0]) + b"\x00" * 6)
        return message
