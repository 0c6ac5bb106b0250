"""The ``rdp`` relay: an RDCleanPath proxy for IronRDP browser clients.

The browser's first binary message is an RDCleanPath request carrying its X.224
Connection Request. The gateway connects to the connection's approved address
(never to the ``destination`` the browser names), forwards the request, reads
the server's Connection Confirm, opens TLS to the server (the certificate is
verified unless the connection says ``skipCertValidation``), and answers with
an RDCleanPath response: the Confirm, the server's certificate chain (the
browser needs the leaf's public key for CredSSP) and the server address. From
then on the browser's bytes are the plaintext of that TLS session, both ways.

Errors before that point answer with an RDCleanPath error PDU, then close the
socket: 4004 for a malformed request, 4003 for everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import ssl

from hostgate import (
    CloseReason,
    ConnectionTarget,
    KernelAPI,
    SessionClosed,
    open_tcp,
    peer_certificate_chain,
)

from . import rdcleanpath
from .der import TAG_SEQUENCE, DerError, total_size
from .x224 import (
    TPKT_HEADER,
    X224Error,
    check_connection_request,
    parse_connection_confirm,
    tpkt_length,
)

log = logging.getLogger("hostgate.rdp")

CONNECT_TIMEOUT = 15.0
NEGOTIATION_TIMEOUT = 15.0
READ_SIZE = 64 * 1024
MAX_REQUEST = 64 * 1024
CLOSE_TIMEOUT = 5.0
BAD_REQUEST = 4004
FAILED = 4003


class RelayFailure(Exception):
    """The RDCleanPath exchange failed: what to tell the browser, and how to close."""

    def __init__(
        self,
        message: str,
        pdu: bytes,
        code: int = FAILED,
        reason_code: CloseReason = CloseReason.REMOTE_ERROR,
    ) -> None:
        super().__init__(message)
        self.pdu = pdu
        self.code = code
        self.reason_code = reason_code


def _bad_request(message: str) -> RelayFailure:
    return RelayFailure(
        message, rdcleanpath.general_error(400), BAD_REQUEST, CloseReason.BAD_REQUEST
    )


def socket_address(address: str, port: int) -> str:
    """``ip:port``, with brackets around an IPv6 address."""
    try:
        if ipaddress.ip_address(address).version == 6:
            return f"[{address}]:{port}"
    except ValueError:
        pass
    return f"{address}:{port}"


def tls_context(target: ConnectionTarget) -> ssl.SSLContext:
    """Verify the server's certificate and name, unless the connection skips that."""
    context = ssl.create_default_context()
    if target.skip_cert_validation:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class RdpStream:
    """One relayed RDP session (implements ``hostgate.Stream``)."""

    def __init__(self, target: ConnectionTarget) -> None:
        self.target = target
        self._request = bytearray()
        self._pending = bytearray()
        self._failure: SessionClosed | None = None
        self._changed = asyncio.Event()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._relaying = False
        self._closed = False

    @property
    def relaying(self) -> bool:
        """True once TLS with the server is up and bytes pass straight through."""
        return self._relaying

    async def read(self) -> bytes:
        """The RDCleanPath answer first, then the server's (decrypted) output."""
        while True:
            self._changed.clear()
            if self._pending:
                data = bytes(self._pending)
                self._pending.clear()
                return data
            if self._failure is not None:
                raise self._failure
            if self._closed:
                return b""
            if self._relaying and self._reader is not None:
                return await self._reader.read(READ_SIZE)
            await self._changed.wait()

    async def write(self, data: bytes) -> None:
        """The RDCleanPath request, then the browser's RDP bytes for the server."""
        if self._closed or self._failure is not None or not data:
            return
        if self._relaying:
            await self._to_server(data)
            return
        self._request += data
        try:
            if self._request[0] != TAG_SEQUENCE:
                raise _bad_request("The first message is not an RDCleanPath request")
            if len(self._request) > MAX_REQUEST:
                raise _bad_request("The RDCleanPath request is too large")
            try:
                size = total_size(bytes(self._request))
            except DerError as exc:
                raise _bad_request(f"Malformed RDCleanPath request: {exc}") from None
            if size is None or size > len(self._request):
                if size is not None and size > MAX_REQUEST:
                    raise _bad_request("The RDCleanPath request is too large")
                return
            request = bytes(self._request[:size])
            leftover = bytes(self._request[size:])
            self._request.clear()
            answer = await self._open(request)
            if self._closed:  # the session ended while we were connecting
                await self._close_server()
                return
            self._pending += answer
            self._relaying = True
        except RelayFailure as failure:
            self._pending += failure.pdu
            self._failure = SessionClosed(failure.code, str(failure), failure.reason_code)
            await self._close_server()
            self._changed.set()
            return
        self._changed.set()
        if leftover:
            await self._to_server(leftover)

    async def _open(self, request: bytes) -> bytes:
        """Connect, negotiate, start TLS; the RDCleanPath response to send."""
        try:
            pdu = rdcleanpath.RDCleanPathPdu.decode(request)
        except DerError as exc:
            raise _bad_request(f"Malformed RDCleanPath request: {exc}") from None
        if pdu.version != rdcleanpath.VERSION:
            raise _bad_request(f"Unsupported RDCleanPath version {pdu.version}")
        if pdu.x224_connection_pdu is None:
            raise _bad_request("The RDCleanPath request carries no X.224 Connection Request")
        try:
            check_connection_request(pdu.x224_connection_pdu)
        except X224Error as exc:
            raise _bad_request(f"Bad X.224 Connection Request: {exc}") from None
        if pdu.preconnection_blob is not None:
            raise RelayFailure(
                "Preconnection blobs (Hyper-V console connections) are not supported",
                rdcleanpath.general_error(501),
                reason_code=CloseReason.BAD_REQUEST,
            )
        where = f"{self.target.host}:{self.target.port}"
        await self._connect(where)
        confirm = await self._negotiate(pdu.x224_connection_pdu, where)
        return await self._start_tls(confirm, where)

    async def _connect(self, where: str) -> None:
        try:
            self._reader, self._writer = await open_tcp(self.target, timeout=CONNECT_TIMEOUT)
        except TimeoutError:
            raise RelayFailure(
                f"Timed out connecting to the RDP server at {where}",
                rdcleanpath.general_error(504),
                reason_code=CloseReason.UNREACHABLE,
            ) from None
        except OSError as exc:
            raise RelayFailure(
                f"Cannot reach the RDP server at {where}: {exc.strerror or exc}",
                rdcleanpath.general_error(502),
                reason_code=CloseReason.UNREACHABLE,
            ) from None

    async def _negotiate(self, connection_request: bytes, where: str) -> bytes:
        assert self._reader is not None
        try:
            await self._to_server(connection_request)
            header = await asyncio.wait_for(
                self._reader.readexactly(TPKT_HEADER), NEGOTIATION_TIMEOUT
            )
            rest = await asyncio.wait_for(
                self._reader.readexactly(tpkt_length(header) - TPKT_HEADER), NEGOTIATION_TIMEOUT
            )
            confirm = header + rest
            negotiation = parse_connection_confirm(confirm)
        except TimeoutError:
            raise RelayFailure(
                f"The RDP server at {where} did not answer the connection request",
                rdcleanpath.general_error(504),
            ) from None
        except (asyncio.IncompleteReadError, OSError):
            raise RelayFailure(
                f"The RDP server at {where} closed the connection during negotiation",
                rdcleanpath.general_error(502),
            ) from None
        except X224Error as exc:
            raise RelayFailure(
                f"The server at {where} did not answer as an RDP server: {exc}",
                rdcleanpath.general_error(502),
            ) from None
        if negotiation.failure_code is not None:
            raise RelayFailure(
                f"The RDP server refused the security negotiation: {negotiation.failure_reason()}",
                rdcleanpath.negotiation_error(confirm),
            )
        if not negotiation.uses_tls:
            raise RelayFailure(
                "The RDP server chose standard RDP security; the browser client needs "
                "TLS or NLA (enable TLS on the server)",
                rdcleanpath.negotiation_error(confirm),
            )
        return confirm

    async def _start_tls(self, confirm: bytes, where: str) -> bytes:
        assert self._writer is not None
        try:
            await asyncio.wait_for(
                self._writer.start_tls(tls_context(self.target), server_hostname=self.target.host),
                NEGOTIATION_TIMEOUT,
            )
        except TimeoutError:
            raise RelayFailure(
                f"TLS with the RDP server at {where} timed out",
                rdcleanpath.general_error(504),
            ) from None
        except ssl.SSLCertVerificationError as exc:
            raise RelayFailure(
                f"The RDP server's certificate is not trusted ({exc.verify_message}); "
                "set skipCertValidation on the connection to accept it",
                rdcleanpath.general_error(502),
            ) from None
        except (ssl.SSLError, OSError) as exc:
            raise RelayFailure(
                f"TLS with the RDP server at {where} failed: {exc}",
                rdcleanpath.general_error(502),
            ) from None
        ssl_object = self._writer.get_extra_info("ssl_object")
        chain = peer_certificate_chain(ssl_object) if ssl_object is not None else []
        if not chain:
            raise RelayFailure(
                f"The RDP server at {where} sent no certificate",
                rdcleanpath.general_error(502),
            )
        log.debug("RDP %s: TLS up, %d certificate(s)", where, len(chain))
        return rdcleanpath.response(
            confirm, chain, socket_address(self.target.address, self.target.port)
        )

    async def _to_server(self, data: bytes) -> None:
        assert self._writer is not None
        self._writer.write(data)
        await self._writer.drain()

    async def _close_server(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), CLOSE_TIMEOUT)

    async def close(self) -> None:
        """Close the connection to the RDP server."""
        if self._closed:
            return
        self._closed = True
        self._changed.set()
        await self._close_server()


async def open_stream(kernel: KernelAPI, target: ConnectionTarget) -> RdpStream:
    """A relay that connects once the browser's RDCleanPath request arrives."""
    return RdpStream(target)
