"""permessage-deflate, fast, for every WebSocket the gateway serves (wsproto internals).

Browsers negotiate permessage-deflate, and hypercorn (through wsproto) always
accepts it, compressing with zlib at level 6. Terminal output and desktop
framebuffers are large, repetitive and latency-bound, so the gateway compresses
at level 1 with ISA-L (the ``isal`` bindings: the same raw deflate stream, about
ten times zlib's speed at level 1 for a slightly better ratio) and falls back to
zlib level 1 where ``isal`` is not installed.

Messages shorter than ``RAW_BELOW`` bytes (a keystroke's echo, a prompt) are sent
uncompressed: RFC 7692 lets each message choose (RSV1 clear), deflate would make
them longer, and the compressor's window stays in step with the receiver's
because neither side feeds it the raw message.

Private names used: wsproto's ``PerMessageDeflate._compressor`` and
``_compressible_opcode``; hypercorn's ``ws_stream.PerMessageDeflate`` is replaced.
Guarded by ``RANGES``; outside them hypercorn keeps wsproto's own extension.
"""

from __future__ import annotations

import zlib
from types import ModuleType

import hypercorn.protocol.ws_stream as ws_stream
from wsproto.extensions import PerMessageDeflate
from wsproto.frame_protocol import FrameDecoder, FrameProtocol, Opcode, RsvBits

from . import VersionRange, applies

RANGES = (
    VersionRange("wsproto", "1.3.2", "1.4"),
    VersionRange("hypercorn", "0.18.0", "0.19"),
)
"""The versions this patch was written and tested against."""


def _fastest_deflate() -> ModuleType:
    try:
        from isal import isal_zlib
    except ImportError:  # a platform without an isal wheel
        return zlib
    return isal_zlib


DEFLATE = _fastest_deflate()
"""The module compressing outbound messages (``isal_zlib`` or ``zlib``)."""
LEVEL = 1
RAW_BELOW = 64


class FastDeflate(PerMessageDeflate):
    """wsproto's permessage-deflate with a level-1 ISA-L compressor and raw small messages."""

    def frame_outbound(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        data: bytes,
        fin: bool,
    ) -> tuple[RsvBits, bytes]:
        """Compress an outbound message unless it is small (the compressor is made on first use)."""
        if not self._compressible_opcode(opcode):
            return rsv, data
        if opcode is not Opcode.CONTINUATION and fin and len(data) < RAW_BELOW:
            return rsv, data  # a whole small message: RSV1 stays clear
        if self._compressor is None and opcode is not Opcode.CONTINUATION:
            bits = self.client_max_window_bits if proto.client else self.server_max_window_bits
            self._compressor = DEFLATE.compressobj(LEVEL, DEFLATE.DEFLATED, -int(bits))
        return super().frame_outbound(proto, opcode, rsv, data, fin)


_STOCK = ws_stream.PerMessageDeflate


def install() -> bool:
    """Make hypercorn offer ``FastDeflate`` to WebSocket clients (idempotent).

    Outside ``RANGES`` (or with the patches off) hypercorn keeps wsproto's own
    extension; returns whether ``FastDeflate`` is in place.
    """
    if not applies("wsproto.FastDeflate", *RANGES):
        ws_stream.PerMessageDeflate = _STOCK  # type: ignore[misc]
        return False
    ws_stream.PerMessageDeflate = FastDeflate  # type: ignore[misc]
    return True
