"""SMB2 WRITE requests sent from an upload's pieces as they are, without copying them.

smbprotocol copies a write's bytes seven times before its ``send()``: the
request's ``pack`` and the header's (``bytes +=``), twice for the signature
(the header with the signature zeroed) and twice to put the signature in,
and once more for the Direct TCP length prefix; the gateway joined the
upload's pieces into the write before that. Here the 112 bytes of header and
WRITE fields are packed alone, the signature is computed over them and the
pieces in turn (AES-GMAC, AES-CMAC and HMAC-SHA256 all take their input in
parts), and one ``sendmsg`` hands the prefix, the header and the pieces to
the kernel. The request is registered with the connection as smbprotocol's
own ``send`` would (message id, credit window, outstanding request), so its
receiver thread matches, verifies and answers the response as before.
Encrypted sessions and shares take smbprotocol's path (``share.py`` decides).
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Sequence
from typing import Any

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from smbprotocol import MAX_PAYLOAD_SIZE, Dialects
from smbprotocol.connection import Connection, Request, SigningAlgorithms
from smbprotocol.exceptions import SMBException
from smbprotocol.header import Commands, Smb2Flags, SMB2HeaderRequest
from smbprotocol.open import SMB2WriteRequest
from smbprotocol.tree import TreeConnect

Buffer = bytes | memoryview

_WRITE_FIELDS = struct.Struct("<HHIQ16sIIHHI")
"""SMB2 WRITE: StructureSize 49, DataOffset (header + these 48 bytes), Length, Offset,
FileId, Channel, RemainingBytes, WriteChannelInfoOffset/Length, Flags."""
_DATA_OFFSET = 64 + _WRITE_FIELDS.size
_PREFIX = struct.Struct(">I")
"""Direct TCP: the message's length, big-endian."""
_SIGNATURE = slice(48, 64)


def write_charge(connection: Connection, length: int) -> int:
    """The credit charge of a WRITE of ``length`` bytes (as smbprotocol computes it)."""
    if not connection.supports_multi_credit:
        return 0
    return (max(0, length - 1) // int(MAX_PAYLOAD_SIZE)) + 1


def encrypted(tree: TreeConnect) -> bool:
    """Whether the session or the share encrypts (then smbprotocol packs the write)."""
    session = tree.session
    return bool(session.encrypt_data or tree.encrypt_data)


def signature(
    connection: Connection, key: bytes, message_id: int, parts: Sequence[Buffer]
) -> bytes:
    """A request's signature over ``parts`` (the header first, its signature zeroed).

    The algorithm as smbprotocol's ``_generate_signature`` picks it: the negotiated one on
    SMB 3.1.1, AES-CMAC on 3.0, HMAC-SHA256 before.
    """
    dialect = connection.dialect
    if dialect >= Dialects.SMB_3_1_1 and connection.signing_algorithm_id is not None:
        algorithm = connection.signing_algorithm_id
    elif dialect >= Dialects.SMB_3_0_0:
        algorithm = SigningAlgorithms.AES_CMAC
    else:
        algorithm = SigningAlgorithms.HMAC_SHA256
    if algorithm == SigningAlgorithms.AES_GMAC:
        nonce = message_id.to_bytes(8, "little") + bytes(4)  # a request, not a cancel
        gmac = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
        for part in parts:  # cryptography takes any buffer; its stubs say bytes
            gmac.authenticate_additional_data(part)  # type: ignore[arg-type]
        gmac.finalize()
        return gmac.tag
    if algorithm == SigningAlgorithms.AES_CMAC:
        mac = cmac.CMAC(algorithms.AES(key))
        for part in parts:
            mac.update(part)  # type: ignore[arg-type]
        return mac.finalize()
    digest = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(part)
    return digest.digest()[:16]


def send_write(
    connection: Connection,
    tree: TreeConnect,
    file_id: bytes,
    pieces: Sequence[Buffer],
    offset: int,
    credit_request: int,
) -> Any:
    """Send one WRITE of ``pieces`` at ``offset``; the ``Request`` to collect its answer.

    The caller has made sure the credit window covers the request (``SmbShare``).
    """
    length = sum(len(piece) for piece in pieces)
    session_id = tree.session.session_id
    session = connection.session_table.get(session_id)
    charge = write_charge(connection, length)
    with connection.sequence_lock:
        window = connection.sequence_window
        if charge > window["high"] - window["low"]:
            raise SMBException(
                f"Request requires {charge} credits but only "
                f"{window['high'] - window['low']} credits are available"
            )
        message_id = window["low"]
        window["low"] += charge if charge > 0 else 1

    header = SMB2HeaderRequest()
    header["tree_id"] = tree.tree_connect_id
    header["credit_charge"] = charge
    header["command"] = Commands.SMB2_WRITE
    header["credit_request"] = credit_request or charge
    header["message_id"] = message_id
    header["session_id"] = session_id
    header["data"] = _WRITE_FIELDS.pack(49, _DATA_OFFSET, length, offset, file_id, 0, 0, 0, 0, 0)
    if tree.is_dfs_share:
        header["flags"].set_flag(Smb2Flags.SMB2_FLAGS_DFS_OPERATIONS)
    if session is not None and session.signing_required and session.signing_key:
        header["flags"].set_flag(Smb2Flags.SMB2_FLAGS_SIGNED)
        packed = header.pack()
        signed = signature(connection, session.signing_key, message_id, [packed, *pieces])
        packed = packed[: _SIGNATURE.start] + signed + packed[_SIGNATURE.stop :]
        header["signature"] = signed
    else:
        packed = header.pack()

    request = Request(header, SMB2WriteRequest, connection, session_id=session_id)
    connection.outstanding_requests[message_id] = request
    connection._check_worker_running()
    transport = connection.transport
    with transport._sock_lock:
        send_all(transport._sock, [_PREFIX.pack(len(packed) + length) + packed, *pieces])
    return request


def send_all(sock: Any, buffers: Sequence[Buffer]) -> None:
    """``sendmsg`` until every buffer went out (a blocking socket may still take part)."""
    views = [memoryview(buffer) for buffer in buffers]
    first = 0
    while first < len(views):
        sent = sock.sendmsg(views[first:])
        while first < len(views) and sent >= len(views[first]):
            sent -= len(views[first])
            first += 1
        if sent:
            views[first] = views[first][sent:]
