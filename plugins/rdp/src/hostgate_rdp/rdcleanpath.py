"""RDCleanPath PDUs, the DER messages IronRDP browser clients exchange with their proxy.

::

    RDCleanPathPdu ::= SEQUENCE {
        version           [0] INTEGER,                        -- 3390
        error             [1] RDCleanPathErr OPTIONAL,         -- proxy -> client
        destination       [2] UTF8String OPTIONAL,             -- client -> proxy
        proxyAuth         [3] UTF8String OPTIONAL,             -- client -> proxy
        serverAuth        [4] UTF8String OPTIONAL,
        preconnectionBlob [5] UTF8String OPTIONAL,             -- client -> proxy
        x224ConnectionPdu [6] OCTET STRING OPTIONAL,           -- both ways
        serverCertChain   [7] SEQUENCE OF OCTET STRING OPTIONAL, -- proxy -> client
        serverAddr        [9] UTF8String OPTIONAL              -- proxy -> client
    }
    RDCleanPathErr ::= SEQUENCE {
        errorCode      [0] INTEGER,                            -- 1 general, 2 negotiation
        httpStatusCode [1] INTEGER OPTIONAL,
        wsaLastError   [2] INTEGER OPTIONAL,
        tlsAlertCode   [3] INTEGER OPTIONAL
    }

Every field is explicitly tagged.
"""

from __future__ import annotations

from dataclasses import dataclass

from .der import (
    TAG_INTEGER,
    TAG_OCTET_STRING,
    TAG_SEQUENCE,
    TAG_UTF8_STRING,
    DerError,
    context_tag,
    decode_integer,
    decode_utf8,
    encode_integer,
    encode_octets,
    encode_utf8,
    explicit,
    read_all,
    read_element,
    read_single,
    tlv,
)

VERSION = 3390
GENERAL_ERROR = 1
NEGOTIATION_ERROR = 2


@dataclass(frozen=True)
class RDCleanPathError:
    """The ``error`` field of a proxy's answer."""

    error_code: int = GENERAL_ERROR
    http_status_code: int | None = None
    wsa_last_error: int | None = None
    tls_alert_code: int | None = None

    def encode(self) -> bytes:
        """DER of the error SEQUENCE."""
        parts = [explicit(0, encode_integer(self.error_code))]
        for number, value in (
            (1, self.http_status_code),
            (2, self.wsa_last_error),
            (3, self.tls_alert_code),
        ):
            if value is not None:
                parts.append(explicit(number, encode_integer(value)))
        return tlv(TAG_SEQUENCE, b"".join(parts))

    @classmethod
    def decode(cls, data: bytes) -> RDCleanPathError:
        """Parse the error SEQUENCE."""
        values: dict[int, int] = {}
        for element in read_all(_sequence_content(data)):
            number = element.tag - context_tag(0)
            if 0 <= number <= 3:
                values[number] = decode_integer(read_single(element.content, TAG_INTEGER))
        if 0 not in values:
            raise DerError("RDCleanPath error without errorCode")
        return cls(values[0], values.get(1), values.get(2), values.get(3))


@dataclass(frozen=True)
class RDCleanPathPdu:
    """One RDCleanPath message."""

    version: int = VERSION
    error: RDCleanPathError | None = None
    destination: str | None = None
    proxy_auth: str | None = None
    server_auth: str | None = None
    preconnection_blob: str | None = None
    x224_connection_pdu: bytes | None = None
    server_cert_chain: tuple[bytes, ...] | None = None
    server_addr: str | None = None

    def encode(self) -> bytes:
        """DER of the PDU."""
        parts = [explicit(0, encode_integer(self.version))]
        if self.error is not None:
            parts.append(explicit(1, self.error.encode()))
        for number, text in (
            (2, self.destination),
            (3, self.proxy_auth),
            (4, self.server_auth),
            (5, self.preconnection_blob),
        ):
            if text is not None:
                parts.append(explicit(number, encode_utf8(text)))
        if self.x224_connection_pdu is not None:
            parts.append(explicit(6, encode_octets(self.x224_connection_pdu)))
        if self.server_cert_chain is not None:
            chain = b"".join(encode_octets(cert) for cert in self.server_cert_chain)
            parts.append(explicit(7, tlv(TAG_SEQUENCE, chain)))
        if self.server_addr is not None:
            parts.append(explicit(9, encode_utf8(self.server_addr)))
        return tlv(TAG_SEQUENCE, b"".join(parts))

    @classmethod
    def decode(cls, data: bytes) -> RDCleanPathPdu:
        """Parse a PDU that fills ``data`` exactly; unknown context fields are skipped."""
        fields: dict[int, bytes] = {}
        last = -1
        for element in read_all(_sequence_content(data)):
            number = element.tag - context_tag(0)
            if not 0 <= number <= 30:
                raise DerError(f"unexpected tag 0x{element.tag:02x} in an RDCleanPath PDU")
            if number <= last:
                raise DerError("RDCleanPath fields out of order")
            last = number
            fields[number] = element.content
        if 0 not in fields:
            raise DerError("RDCleanPath PDU without a version")

        def text(number: int) -> str | None:
            if number not in fields:
                return None
            return decode_utf8(read_single(fields[number], TAG_UTF8_STRING))

        chain: tuple[bytes, ...] | None = None
        if 7 in fields:
            certificates = read_all(read_single(fields[7], TAG_SEQUENCE))
            if any(cert.tag != TAG_OCTET_STRING for cert in certificates):
                raise DerError("serverCertChain holds something other than OCTET STRINGs")
            chain = tuple(cert.content for cert in certificates)
        return cls(
            version=decode_integer(read_single(fields[0], TAG_INTEGER)),
            error=RDCleanPathError.decode(fields[1]) if 1 in fields else None,
            destination=text(2),
            proxy_auth=text(3),
            server_auth=text(4),
            preconnection_blob=text(5),
            x224_connection_pdu=(read_single(fields[6], TAG_OCTET_STRING) if 6 in fields else None),
            server_cert_chain=chain,
            server_addr=text(9),
        )


def _sequence_content(data: bytes) -> bytes:
    element = read_element(data)
    if element.tag != TAG_SEQUENCE:
        raise DerError("not a SEQUENCE")
    if element.end != len(data):
        raise DerError("bytes after the SEQUENCE")
    return element.content


def response(x224_confirm: bytes, chain: list[bytes], server_addr: str) -> bytes:
    """The proxy's answer once TLS with the server is up."""
    return RDCleanPathPdu(
        x224_connection_pdu=x224_confirm,
        server_cert_chain=tuple(chain),
        server_addr=server_addr,
    ).encode()


def general_error(http_status: int | None = None) -> bytes:
    """A general error (code 1), with an HTTP-like status saying what kind."""
    return RDCleanPathPdu(error=RDCleanPathError(GENERAL_ERROR, http_status)).encode()


def negotiation_error(x224_confirm: bytes) -> bytes:
    """The server refused the security negotiation: its X.224 answer goes to the client."""
    return RDCleanPathPdu(
        error=RDCleanPathError(NEGOTIATION_ERROR), x224_connection_pdu=x224_confirm
    ).encode()
