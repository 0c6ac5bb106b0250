"""TPKT-framed X.224 Connection Request / Confirm (MS-RDPBCGR 2.2.1.1 and 2.2.1.2)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

TPKT_VERSION = 3
TPKT_HEADER = 4
X224_CONNECTION_REQUEST = 0xE0
X224_CONNECTION_CONFIRM = 0xD0
NEG_RESPONSE = 0x02
NEG_FAILURE = 0x03
MAX_CONNECTION_PDU = 4096

PROTOCOL_RDP = 0x00
PROTOCOL_SSL = 0x01
PROTOCOL_HYBRID = 0x02
PROTOCOL_RDSTLS = 0x04
PROTOCOL_HYBRID_EX = 0x08
PROTOCOL_RDSAAD = 0x10
TLS_PROTOCOLS = (
    PROTOCOL_SSL | PROTOCOL_HYBRID | PROTOCOL_RDSTLS | PROTOCOL_HYBRID_EX | PROTOCOL_RDSAAD
)

FAILURE_REASONS = {
    1: "the server requires TLS (SSL_REQUIRED_BY_SERVER)",
    2: "the server does not allow TLS (SSL_NOT_ALLOWED_BY_SERVER)",
    3: "the server has no certificate for TLS (SSL_CERT_NOT_ON_SERVER)",
    4: "inconsistent negotiation flags (INCONSISTENT_FLAGS)",
    5: "the server requires Network Level Authentication (HYBRID_REQUIRED_BY_SERVER)",
    6: "the server requires TLS with user authentication (SSL_WITH_USER_AUTH_REQUIRED_BY_SERVER)",
}


class X224Error(ValueError):
    """Bytes that are not the X.224 PDU expected."""


def tpkt_length(header: bytes) -> int:
    """The total length a TPKT header announces."""
    if len(header) < TPKT_HEADER or header[0] != TPKT_VERSION:
        raise X224Error("not a TPKT packet")
    (length,) = struct.unpack(">H", header[2:4])
    if length < TPKT_HEADER + 3 or length > MAX_CONNECTION_PDU:
        raise X224Error(f"implausible TPKT length {length}")
    return int(length)


def _check_tpdu(data: bytes, code: int, name: str) -> None:
    if tpkt_length(data) != len(data):
        raise X224Error(f"the {name} length does not match its TPKT header")
    indicator = data[TPKT_HEADER]
    if indicator + 1 != len(data) - TPKT_HEADER:
        raise X224Error(f"the {name} length indicator does not match")
    if data[TPKT_HEADER + 1] & 0xF0 != code:
        raise X224Error(f"not an X.224 {name}")


def check_connection_request(data: bytes) -> None:
    """Raise ``X224Error`` unless ``data`` is one TPKT X.224 Connection Request."""
    _check_tpdu(data, X224_CONNECTION_REQUEST, "Connection Request")


@dataclass(frozen=True)
class ConnectionConfirm:
    """What the server's Connection Confirm says about the security protocol."""

    selected_protocol: int | None
    failure_code: int | None

    @property
    def uses_tls(self) -> bool:
        """True when the server picked a protocol that starts with TLS."""
        return self.selected_protocol is not None and bool(self.selected_protocol & TLS_PROTOCOLS)

    def failure_reason(self) -> str:
        """Why the negotiation failed, readable."""
        code = self.failure_code or 0
        return FAILURE_REASONS.get(code, f"negotiation failure code {code}")


def parse_connection_confirm(data: bytes) -> ConnectionConfirm:
    """Read the negotiation result of an X.224 Connection Confirm."""
    _check_tpdu(data, X224_CONNECTION_CONFIRM, "Connection Confirm")
    negotiation = data[TPKT_HEADER + 7 :]
    if len(negotiation) < 8:
        # No RDP_NEG_RSP: an old server that speaks standard RDP security only.
        return ConnectionConfirm(selected_protocol=PROTOCOL_RDP, failure_code=None)
    kind = negotiation[0]
    (value,) = struct.unpack("<I", negotiation[4:8])
    if kind == NEG_RESPONSE:
        return ConnectionConfirm(selected_protocol=int(value), failure_code=None)
    if kind == NEG_FAILURE:
        return ConnectionConfirm(selected_protocol=None, failure_code=int(value))
    raise X224Error(f"unknown negotiation message type {kind}")
