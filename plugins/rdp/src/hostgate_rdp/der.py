"""The few DER (X.690) pieces RDCleanPath needs: TLVs, INTEGER, strings, explicit tags.

Single-byte tags only (tag numbers up to 30, which is all RDCleanPath uses);
definite lengths only, as DER requires.
"""

from __future__ import annotations

from dataclasses import dataclass

TAG_INTEGER = 0x02
TAG_OCTET_STRING = 0x04
TAG_UTF8_STRING = 0x0C
TAG_SEQUENCE = 0x30
CONTEXT_CONSTRUCTED = 0xA0
MAX_LENGTH_OCTETS = 4


class DerError(ValueError):
    """Bytes that are not the DER this module expects."""


def context_tag(number: int) -> int:
    """The tag byte of an explicit ``[number]`` (context-specific, constructed)."""
    if not 0 <= number <= 30:
        raise ValueError("context tag numbers 0-30 only")
    return CONTEXT_CONSTRUCTED | number


def encode_length(length: int) -> bytes:
    """A definite length: short form below 128, long form above."""
    if length < 0x80:
        return bytes([length])
    octets = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets


def tlv(tag: int, content: bytes) -> bytes:
    """One encoded element."""
    return bytes([tag]) + encode_length(len(content)) + content


def encode_integer(value: int) -> bytes:
    """An INTEGER element (minimal two's complement)."""
    size = max(1, (value.bit_length() + 8) // 8)
    return tlv(TAG_INTEGER, value.to_bytes(size, "big", signed=True))


def encode_utf8(value: str) -> bytes:
    """A UTF8String element."""
    return tlv(TAG_UTF8_STRING, value.encode())


def encode_octets(value: bytes) -> bytes:
    """An OCTET STRING element."""
    return tlv(TAG_OCTET_STRING, value)


def explicit(number: int, inner: bytes) -> bytes:
    """``[number] EXPLICIT`` around an encoded element."""
    return tlv(context_tag(number), inner)


@dataclass(frozen=True)
class Element:
    """One decoded TLV: its tag, content and where it ended in the input."""

    tag: int
    content: bytes
    end: int


def header_size(data: bytes, offset: int = 0) -> tuple[int, int] | None:
    """(header length, content length) of the element at ``offset``; None if incomplete."""
    if len(data) < offset + 2:
        return None
    if data[offset] & 0x1F == 0x1F:
        raise DerError("multi-byte tags are not supported")
    first = data[offset + 1]
    if first < 0x80:
        return 2, first
    count = first & 0x7F
    if count == 0:
        raise DerError("indefinite lengths are not DER")
    if count > MAX_LENGTH_OCTETS:
        raise DerError("element too long")
    if len(data) < offset + 2 + count:
        return None
    length = int.from_bytes(data[offset + 2 : offset + 2 + count], "big")
    if length < 0x80 or data[offset + 2] == 0:
        raise DerError("length not in minimal form")
    return 2 + count, length


def total_size(data: bytes) -> int | None:
    """The size of the first complete element in ``data``; None while it is incomplete."""
    header = header_size(data)
    if header is None:
        return None
    return header[0] + header[1]


def read_element(data: bytes, offset: int = 0) -> Element:
    """Decode the element at ``offset``."""
    header = header_size(data, offset)
    if header is None:
        raise DerError("truncated element")
    head, length = header
    start = offset + head
    end = start + length
    if end > len(data):
        raise DerError("truncated element")
    return Element(tag=data[offset], content=bytes(data[start:end]), end=end)


def read_all(content: bytes) -> list[Element]:
    """Every element in a constructed element's content, in order."""
    elements: list[Element] = []
    offset = 0
    while offset < len(content):
        element = read_element(content, offset)
        elements.append(element)
        offset = element.end
    return elements


def read_single(content: bytes, tag: int) -> bytes:
    """The content of the one element of ``tag`` that fills ``content`` exactly."""
    element = read_element(content)
    if element.tag != tag or element.end != len(content):
        raise DerError(f"expected one element with tag 0x{tag:02x}")
    return element.content


def decode_integer(content: bytes) -> int:
    """An INTEGER's value."""
    if not content:
        raise DerError("empty INTEGER")
    if len(content) > 1 and (
        (content[0] == 0 and content[1] < 0x80) or (content[0] == 0xFF and content[1] >= 0x80)
    ):
        raise DerError("INTEGER not in minimal form")
    return int.from_bytes(content, "big", signed=True)


def decode_utf8(content: bytes) -> str:
    """A UTF8String's value."""
    try:
        return content.decode()
    except UnicodeDecodeError:
        raise DerError("invalid UTF-8 in a UTF8String") from None
