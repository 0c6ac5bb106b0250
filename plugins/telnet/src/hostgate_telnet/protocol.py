"""Telnet option negotiation and data framing (RFC 854, 855, 1073 NAWS, 1091 TTYPE, 856 BINARY).

``TelnetCodec`` is transport-free: ``receive(bytes)`` returns the terminal data
and queues the replies; ``replies()`` hands them over. Option state follows the
"only answer a change" rule of RFC 1143, so two sides never loop.
"""

from __future__ import annotations

import re
import struct

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
BINARY, ECHO, SGA, TTYPE, NAWS = 0, 1, 3, 24, 31
TTYPE_IS, TTYPE_SEND = 0, 1

LOCAL_OPTIONS = frozenset({TTYPE, NAWS, SGA, BINARY})
"""Options we agree to perform (answer DO with WILL)."""
REMOTE_OPTIONS = frozenset({ECHO, SGA, BINARY})
"""Options we let the server perform (answer WILL with DO)."""
MAX_SUBNEGOTIATION = 1024
_BARE_CR = re.compile(rb"\r(?![\n\x00])")


def escape(data: bytes) -> bytes:
    """Double IAC bytes so data cannot be read as a command."""
    return data.replace(b"\xff", b"\xff\xff")


class TelnetCodec:
    """The client side of a telnet session's byte stream."""

    def __init__(self, term_type: str, cols: int, rows: int) -> None:
        self.term_type = term_type
        self.cols, self.rows = cols, rows
        self.local: set[int] = set()
        self.remote: set[int] = set()
        self._out = bytearray()
        self._state = "data"
        self._command = 0
        self._sub = bytearray()
        self._after_cr = False

    def replies(self) -> bytes:
        """Negotiation bytes to send to the server (and forget)."""
        out, self._out = bytes(self._out), bytearray()
        return out

    # -- sending ----------------------------------------------------------------------

    def encode(self, data: bytes) -> bytes:
        """Terminal input as telnet data: IAC doubled; a bare CR is CR NUL unless binary."""
        data = escape(data)
        if BINARY not in self.local:
            data = _BARE_CR.sub(b"\r\x00", data)
        return data

    def window_size(self, cols: int, rows: int) -> bytes:
        """A NAWS report for a new size (empty when NAWS is not agreed)."""
        self.cols, self.rows = cols, rows
        if NAWS not in self.local:
            return b""
        return self._naws()

    def _naws(self) -> bytes:
        size = escape(
            struct.pack(">HH", max(0, min(self.cols, 65535)), max(0, min(self.rows, 65535)))
        )
        return bytes([IAC, SB, NAWS]) + size + bytes([IAC, SE])

    # -- receiving --------------------------------------------------------------------

    def receive(self, raw: bytes) -> bytes:
        """Strip commands from server bytes; return the data for the terminal."""
        data = bytearray()
        for byte in raw:
            state = self._state
            if state == "data":
                if byte == IAC:
                    self._state = "iac"
                elif self._after_cr and byte == 0 and BINARY not in self.remote:
                    pass
                else:
                    data.append(byte)
                self._after_cr = byte == 13
            elif state == "iac":
                if byte == IAC:
                    data.append(IAC)
                    self._state = "data"
                elif byte in (DO, DONT, WILL, WONT):
                    self._command = byte
                    self._state = "option"
                elif byte == SB:
                    self._sub = bytearray()
                    self._state = "sub"
                else:
                    self._state = "data"
            elif state == "option":
                self._negotiate(self._command, byte)
                self._state = "data"
            elif state == "sub":
                if byte == IAC:
                    self._state = "sub-iac"
                elif len(self._sub) < MAX_SUBNEGOTIATION:
                    self._sub.append(byte)
            else:  # "sub-iac"
                if byte == SE:
                    self._subnegotiation(bytes(self._sub))
                    self._state = "data"
                else:
                    if byte == IAC and len(self._sub) < MAX_SUBNEGOTIATION:
                        self._sub.append(IAC)
                    self._state = "sub"
        return bytes(data)

    def _send(self, command: int, option: int) -> None:
        self._out += bytes([IAC, command, option])

    def _negotiate(self, command: int, option: int) -> None:
        if command == DO:
            if option in LOCAL_OPTIONS:
                if option not in self.local:
                    self.local.add(option)
                    self._send(WILL, option)
                    if option == NAWS:
                        self._out += self._naws()
            else:
                self._send(WONT, option)
        elif command == DONT:
            if option in self.local:
                self.local.discard(option)
                self._send(WONT, option)
        elif command == WILL:
            if option in REMOTE_OPTIONS:
                if option not in self.remote:
                    self.remote.add(option)
                    self._send(DO, option)
            else:
                self._send(DONT, option)
        elif command == WONT and option in self.remote:
            self.remote.discard(option)
            self._send(DONT, option)

    def _subnegotiation(self, body: bytes) -> None:
        if body[:2] == bytes([TTYPE, TTYPE_SEND]) and TTYPE in self.local:
            name = self.term_type.encode("ascii", "replace")
            self._out += bytes([IAC, SB, TTYPE, TTYPE_IS]) + escape(name) + bytes([IAC, SE])
