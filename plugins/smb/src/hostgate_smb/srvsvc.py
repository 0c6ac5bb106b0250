"""The server's share list: ``NetrShareEnum`` (MS-SRVS, level 1) over the ``srvsvc`` pipe.

smbprotocol speaks SMB2/3 but no DCE/RPC, and listing shares needs exactly one
call: bind to SRVSVC on ``IPC$``, send ``NetrShareEnum``, read the NDR reply.
This module builds and parses those few PDUs (connection-oriented DCE/RPC 5.0,
no RPC-level authentication: the SMB session is the authentication).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from hostgate import RemoteError

SRVSVC = uuid.UUID("4b324fc8-1670-01d3-1278-5a47bf6ee188")
SRVSVC_VERSION = 3
NDR = uuid.UUID("8a885d04-1ceb-11c9-9fe8-08002b104860")
NDR_VERSION = 2
FRAGMENT = 4280
"""Largest fragment either side sends (the value Windows uses)."""

_BIND, _BIND_ACK, _REQUEST, _RESPONSE, _FAULT = 11, 12, 0, 2, 3
_FIRST_AND_LAST = 0x03
_LAST = 0x02
_LITTLE_ENDIAN = b"\x10\x00\x00\x00"
_NET_SHARE_ENUM = 15
_DISK = 0x0
_TYPE_MASK = 0x0FFFFFFF
_SPECIAL = 0x80000000
_HEADER = struct.Struct("<BBBB4sHHI")


@dataclass(frozen=True)
class Share:
    """One share the server offers."""

    name: str
    type: int
    remark: str

    @property
    def browsable(self) -> bool:
        """A plain disk share (not IPC$, a printer or an administrative ``C$``)."""
        return self.type & _TYPE_MASK == _DISK and not self.type & _SPECIAL


def _pdu(kind: int, call_id: int, body: bytes) -> bytes:
    length = _HEADER.size + len(body)
    return _HEADER.pack(5, 0, kind, _FIRST_AND_LAST, _LITTLE_ENDIAN, length, 0, call_id) + body


def bind_request(call_id: int = 1) -> bytes:
    """The bind PDU for SRVSVC v3.0 with the NDR transfer syntax."""
    body = struct.pack("<HHI", FRAGMENT, FRAGMENT, 0)
    body += struct.pack("<BBH", 1, 0, 0)  # one presentation context
    body += struct.pack("<HBB", 0, 1, 0)  # context 0, one transfer syntax
    body += SRVSVC.bytes_le + struct.pack("<HH", SRVSVC_VERSION, 0)
    body += NDR.bytes_le + struct.pack("<I", NDR_VERSION)
    return _pdu(_BIND, call_id, body)


def share_enum_request(call_id: int = 2) -> bytes:
    """``NetrShareEnum(NULL, {level 1, empty container}, MAX, NULL)``."""
    stub = struct.pack(
        "<IIIIIIII",
        0,  # ServerName: null pointer
        1,  # InfoStruct.Level
        1,  # union discriminant
        0x00020000,  # referent of the SHARE_INFO_1_CONTAINER
        0,  # EntriesRead
        0,  # Buffer: null pointer
        0xFFFFFFFF,  # PreferedMaximumLength
        0,  # ResumeHandle: null pointer
    )
    body = struct.pack("<IHH", len(stub), 0, _NET_SHARE_ENUM) + stub
    return _pdu(_REQUEST, call_id, body)


def _header(pdu: bytes) -> tuple[int, int, int]:
    """(type, flags, fragment length) of a PDU."""
    if len(pdu) < _HEADER.size:
        raise RemoteError("The SMB server's share list answer is truncated")
    version, _, kind, flags, _, length, _, _ = _HEADER.unpack_from(pdu)
    if version != 5:
        raise RemoteError("The SMB server answered the share list in an unknown RPC version")
    return kind, flags, length


def check_bind_ack(pdu: bytes) -> None:
    """Raise unless the server accepted the SRVSVC presentation context."""
    kind, _, _ = _header(pdu)
    if kind != _BIND_ACK:
        raise RemoteError("The SMB server refused to list its shares (RPC bind rejected)")
    offset = _HEADER.size + 8
    (address_length,) = struct.unpack_from("<H", pdu, offset)
    offset += 2 + address_length
    offset += -offset % 4
    count, _, _ = struct.unpack_from("<BBH", pdu, offset)
    (result,) = struct.unpack_from("<H", pdu, offset + 4)
    if count < 1 or result != 0:
        raise RemoteError("The SMB server refused to list its shares (RPC bind rejected)")


def response_stub(fragments: list[bytes]) -> bytes:
    """The NDR stub of a response, from its fragments (raises on a fault)."""
    stub = b""
    for pdu in fragments:
        kind, _, length = _header(pdu)
        if kind == _FAULT:
            (status,) = struct.unpack_from("<I", pdu, _HEADER.size + 8)
            raise RemoteError(f"The SMB server could not list its shares (RPC fault {status:#x})")
        if kind != _RESPONSE:
            raise RemoteError("The SMB server's share list answer is not an RPC response")
        stub += pdu[_HEADER.size + 8 : length]
    return stub


def is_last(pdu: bytes) -> bool:
    """Whether this fragment ends the response."""
    return bool(_header(pdu)[1] & _LAST)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def u32(self) -> int:
        if self.offset + 4 > len(self.data):
            raise RemoteError("The SMB server's share list answer is truncated")
        (value,) = struct.unpack_from("<I", self.data, self.offset)
        self.offset += 4
        return int(value)

    def string(self) -> str:
        """A conformant varying UTF-16 string, then alignment to 4."""
        self.u32()  # maximum count
        self.u32()  # offset
        count = self.u32()
        end = self.offset + 2 * count
        if end > len(self.data):
            raise RemoteError("The SMB server's share list answer is truncated")
        text = self.data[self.offset : end].decode("utf-16-le", "replace")
        self.offset = end + (-end % 4)
        return text.rstrip("\x00")


def parse_share_enum(stub: bytes) -> list[Share]:
    """The shares in a ``NetrShareEnum`` level-1 response stub."""
    reader = _Reader(stub)
    reader.u32()  # Level
    reader.u32()  # union discriminant
    if reader.u32() == 0:  # container pointer
        return []
    entries = reader.u32()
    if reader.u32() == 0 or entries == 0:  # Buffer pointer
        return []
    if reader.u32() != entries:  # conformant array size
        raise RemoteError("The SMB server's share list answer is inconsistent")
    flat = [(reader.u32(), reader.u32(), reader.u32()) for _ in range(entries)]
    shares = []
    for name_pointer, kind, remark_pointer in flat:
        name = reader.string() if name_pointer else ""
        remark = reader.string() if remark_pointer else ""
        shares.append(Share(name=name, type=kind, remark=remark))
    reader.u32()  # TotalEntries
    if reader.u32():  # ResumeHandle pointer
        reader.u32()
    status = reader.u32()
    if status != 0:
        raise RemoteError(f"The SMB server could not list its shares (status {status:#x})")
    return shares
