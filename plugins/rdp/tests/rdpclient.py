"""The client half of an IronRDP session, enough to drive the relay in tests.

RDCleanPath PDUs are built and read with pyasn1 (independently of the pack's own
DER code); the X.224 Connection Request and the MCS Connect Initial are built
by hand after MS-RDPBCGR 2.2.1.1 and 2.2.1.3.
"""

from __future__ import annotations

import struct
from typing import Any

from pyasn1.codec.der import decoder, encoder
from pyasn1.type import char, namedtype, tag, univ

PROTOCOL_RDP = 0
PROTOCOL_SSL = 1
PROTOCOL_HYBRID = 2


def _ctx(number: int) -> tag.Tag:
    return tag.Tag(tag.tagClassContext, tag.tagFormatConstructed, number)


class CleanPathError(univ.Sequence):
    componentType = namedtype.NamedTypes(
        namedtype.NamedType("errorCode", univ.Integer().subtype(explicitTag=_ctx(0))),
        namedtype.OptionalNamedType("httpStatusCode", univ.Integer().subtype(explicitTag=_ctx(1))),
        namedtype.OptionalNamedType("wsaLastError", univ.Integer().subtype(explicitTag=_ctx(2))),
        namedtype.OptionalNamedType("tlsAlertCode", univ.Integer().subtype(explicitTag=_ctx(3))),
    )


class CleanPathPdu(univ.Sequence):
    componentType = namedtype.NamedTypes(
        namedtype.NamedType("version", univ.Integer().subtype(explicitTag=_ctx(0))),
        namedtype.OptionalNamedType("error", CleanPathError().subtype(explicitTag=_ctx(1))),
        namedtype.OptionalNamedType("destination", char.UTF8String().subtype(explicitTag=_ctx(2))),
        namedtype.OptionalNamedType("proxyAuth", char.UTF8String().subtype(explicitTag=_ctx(3))),
        namedtype.OptionalNamedType("serverAuth", char.UTF8String().subtype(explicitTag=_ctx(4))),
        namedtype.OptionalNamedType(
            "preconnectionBlob", char.UTF8String().subtype(explicitTag=_ctx(5))
        ),
        namedtype.OptionalNamedType(
            "x224ConnectionPdu", univ.OctetString().subtype(explicitTag=_ctx(6))
        ),
        namedtype.OptionalNamedType(
            "serverCertChain",
            univ.SequenceOf(componentType=univ.OctetString()).subtype(explicitTag=_ctx(7)),
        ),
        namedtype.OptionalNamedType("serverAddr", char.UTF8String().subtype(explicitTag=_ctx(9))),
    )


def cleanpath_request(
    x224: bytes | None, *, version: int = 3390, preconnection_blob: str | None = None
) -> bytes:
    """An RDCleanPath request as IronRDP sends it."""
    pdu = CleanPathPdu()
    pdu["version"] = version
    pdu["destination"] = "ignored.example:3389"
    pdu["proxyAuth"] = "ignored"
    if preconnection_blob is not None:
        pdu["preconnectionBlob"] = preconnection_blob
    if x224 is not None:
        pdu["x224ConnectionPdu"] = x224
    return bytes(encoder.encode(pdu))


def read_cleanpath(data: bytes) -> dict[str, Any]:
    """Decode an RDCleanPath PDU into plain values (absent fields are None)."""
    pdu, rest = decoder.decode(data, asn1Spec=CleanPathPdu())
    assert rest == b""

    def field(name: str) -> Any:
        value = pdu[name]
        return value if value.isValue else None

    error = field("error")
    chain = field("serverCertChain")
    return {
        "version": int(pdu["version"]),
        "error": None
        if error is None
        else {
            "errorCode": int(error["errorCode"]),
            "httpStatusCode": int(error["httpStatusCode"])
            if error["httpStatusCode"].isValue
            else None,
        },
        "x224": None if field("x224ConnectionPdu") is None else bytes(pdu["x224ConnectionPdu"]),
        "chain": None if chain is None else [bytes(cert) for cert in chain],
        "serverAddr": None if field("serverAddr") is None else str(pdu["serverAddr"]),
    }


def tpkt(payload: bytes) -> bytes:
    """A TPKT packet around ``payload``."""
    return struct.pack(">BBH", 3, 0, len(payload) + 4) + payload


def connection_request(protocols: int, cookie: str = "hgtest") -> bytes:
    """X.224 Connection Request with a cookie and an RDP_NEG_REQ."""
    body = f"Cookie: mstshash={cookie}\r\n".encode()
    body += struct.pack("<BBHI", 0x01, 0, 8, protocols)
    tpdu = bytes([0xE0]) + struct.pack(">HHB", 0, 0, 0) + body
    return tpkt(bytes([len(tpdu)]) + tpdu)


def selected_protocol(confirm: bytes) -> tuple[int, int]:
    """(negotiation message type, value) of an X.224 Connection Confirm."""
    assert confirm[5] & 0xF0 == 0xD0
    kind = confirm[11]
    (value,) = struct.unpack("<I", confirm[15:19])
    return kind, value


def _ber_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    octets = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets


def _ber(tag_bytes: bytes, content: bytes) -> bytes:
    return tag_bytes + _ber_length(len(content)) + content


def _ber_int(value: int) -> bytes:
    size = max(1, (value.bit_length() + 8) // 8)
    return _ber(b"\x02", value.to_bytes(size, "big", signed=True))


def _domain_parameters(*values: int) -> bytes:
    return _ber(b"\x30", b"".join(_ber_int(v) for v in values))


def _per_length(length: int) -> bytes:
    return bytes([length]) if length < 0x80 else struct.pack(">H", 0x8000 | length)


def mcs_connect_initial(width: int = 1024, height: int = 768, selected: int = 1) -> bytes:
    """An X.224 Data TPDU with an MCS Connect Initial (core, security, network data)."""
    name = "hostgate".encode("utf-16-le").ljust(32, b"\0")
    core = struct.pack("<IHHHHII", 0x00080004, width, height, 0xCA01, 0xAA03, 0x409, 2600)
    core += name + struct.pack("<III", 4, 0, 12) + bytes(64)
    core += struct.pack("<HHIHHH", 0xCA01, 1, 0, 24, 0x0F, 0x0001) + bytes(64)
    core += struct.pack("<BBI", 0, 0, selected)
    blocks = struct.pack("<HH", 0xC001, len(core) + 4) + core
    blocks += struct.pack("<HHII", 0xC002, 12, 0x1B, 0)
    blocks += struct.pack("<HHI", 0xC003, 8, 0)
    create = b"\x00\x08\x00\x10\x00\x01\xc0\x00Duca" + _per_length(len(blocks)) + blocks
    gcc = b"\x00\x05\x00\x14\x7c\x00\x01" + _per_length(len(create)) + create
    initial = (
        _ber(b"\x04", b"\x01")
        + _ber(b"\x04", b"\x01")
        + _ber(b"\x01", b"\xff")
        + _domain_parameters(34, 2, 0, 1, 0, 1, 65535, 2)
        + _domain_parameters(1, 1, 1, 1, 0, 1, 1056, 2)
        + _domain_parameters(65535, 64535, 65535, 1, 0, 1, 65535, 2)
        + _ber(b"\x04", gcc)
    )
    return tpkt(b"\x02\xf0\x80" + _ber(b"\x7f\x65", initial))
