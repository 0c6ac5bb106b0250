"""Opening an aioftp control connection to a stored connection's target.

The control and the data connections go to ``target.address`` (the address
the network policy approved): the address a server names in its PASV reply
is ignored and the control connection's peer is used instead, as curl does,
so a server cannot point the gateway at another host. The port it names is
checked before the gateway connects: it must be a TCP port, and the network
policy must allow it on that address (it refuses the gateway's own listening
port, so a server cannot make the gateway talk to its own API). With the
``ftps`` field the session is upgraded with ``AUTH TLS`` before login and
certificates are verified against ``target.host`` unless the connection
says to skip certificate validation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import aioftp
from aioftp.client import DataConnectionThrottleStreamIO
from aioftp.common import SSLSessionBoundContext
from hostgate import ChunkReader, ConnectionTarget, RemoteError, open_tcp

from .errors import mapped
from .filling import fill_reads

log = logging.getLogger("hostgate.ftp")

DataCheck = Callable[[str, int], Awaitable[object]]
"""``await check(address, port)``: raises when the policy refuses a data connection there."""

CONNECT_TIMEOUT = 15.0
SOCKET_TIMEOUT = 60.0
STREAM_LIMIT = 4 * 1024 * 1024
ANONYMOUS_USER = "anonymous"
ANONYMOUS_PASSWORD = "anonymous@"


def tls_context(target: ConnectionTarget) -> ssl.SSLContext:
    """A client TLS context; verification off only when the connection says so."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if target.skip_cert_validation:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class FtpClient(aioftp.Client):
    """aioftp's client with TLS names taken from ``host`` while dialing ``address``."""

    def __init__(
        self, target: ConnectionTarget, check_data: DataCheck | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.check_data = check_data
        self.tls: ssl.SSLContext | None = None
        self.features: frozenset[str] = frozenset()
        self.last_used = 0.0
        self.broken = False

    async def _open_connection(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Control and data connections: plain TCP, always to the approved address.

        A data connection (opened once the control connection is up, ``host`` and
        ``port`` from the server's PASV/EPSV reply) goes to the control connection's
        address whatever ``host`` says, on ``port`` once the network policy allowed
        it there; it reads with ``ChunkReader``, which hands on the received pieces
        without copying them, and a plain one reads into a large buffer first
        (``filling``: fewer, larger pieces).
        """
        reader = None
        if self._stream is not None:
            await self._check_data_port(host, port)
            if ChunkReader.supported():  # else asyncio's StreamReader, which copies
                reader = ChunkReader(limit=STREAM_LIMIT)
        target = replace(self.target, port=port)
        opened, writer = await open_tcp(
            target, timeout=self.connection_timeout, limit=STREAM_LIMIT, reader=reader
        )
        if reader is not None and self.tls is None:
            fill_reads(writer, opened)
        return opened, writer

    async def _check_data_port(self, host: str, port: int) -> None:
        """Refuse a data port that is no TCP port or that the network policy forbids."""
        target = self.target
        if not 0 < port < 65536:
            raise RemoteError(f"The FTP server {target.host} named an invalid data port {port}")
        if host not in (target.address, target.host):
            log.debug(
                "FTP server %s named %s for a data connection; using %s",
                target.host,
                host,
                target.address,
            )
        # Behind jump hosts the last hop connects, so this host's own ports are not at stake.
        if self.check_data is not None and not target.via:
            await self.check_data(target.address, port)

    async def get_stream(  # type: ignore[override]
        self,
        command: str | None = None,
        expected_codes: str | tuple[str, ...] = (),
        wait_codes: str | tuple[str, ...] = (),
        censor_after: int | None = None,
        conn_type: Any = "I",
        offset: int = 0,
    ) -> DataConnectionThrottleStreamIO:
        """A data connection for one transfer command.

        Under TLS the data connection is secured only after the command was
        accepted (servers such as vsftpd start their TLS accept then), resuming
        the control connection's TLS session.
        """
        reader, writer = await self.get_passive_connection(conn_type)
        try:
            if offset:
                await self.command("REST " + str(offset), "350")
            await self.command(command, expected_codes, wait_codes, censor_after)
            if self.tls is not None:
                async with asyncio.timeout(self.connection_timeout):
                    await writer.start_tls(self._data_tls(), server_hostname=self.target.host)
        except BaseException:
            writer.close()
            raise
        # Let an upload keep receiving from its client while the socket drains.
        writer.transport.set_write_buffer_limits(high=STREAM_LIMIT)
        return DataConnectionThrottleStreamIO(
            self, reader, writer, throttles={"_": self.throttle}, timeout=self.socket_timeout
        )

    def _data_tls(self) -> ssl.SSLContext:
        assert self.tls is not None
        ssl_object = self.stream.writer.transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.session is None:
            return self.tls
        return SSLSessionBoundContext(
            ssl.PROTOCOL_TLS_CLIENT, context=ssl_object.context, session=ssl_object.session
        )

    async def upgrade(self) -> None:
        """``AUTH TLS`` on the control connection, then protected data connections."""
        context = tls_context(self.target)
        await self.command("AUTH TLS", "234")
        await self.stream.start_tls(sslcontext=context, server_hostname=self.target.host)
        self.tls = context
        await self.command("PBSZ 0", "200")
        await self.command("PROT P", "200")

    async def discover_features(self) -> None:
        """Remember what ``FEAT`` announces (MLST, MDTM, SIZE, UTF8...)."""
        try:
            _, lines = await self.command("FEAT", "2xx")
        except aioftp.StatusCodeError:
            return
        names = set()
        for line in lines:
            word = line.strip().split(" ", 1)[0].upper()
            if word and word.isalpha():
                names.add(word)
        self.features = frozenset(names)
        if "UTF8" in self.features:
            with contextlib.suppress(aioftp.StatusCodeError):
                await self.command("OPTS UTF8 ON", "2xx")


async def connect(target: ConnectionTarget, check_data: DataCheck | None = None) -> FtpClient:
    """A logged-in FTP (or explicit FTPS) session; Remote* errors say what failed.

    ``check_data`` vets the address and port of every data connection (the
    network policy; None in adapter-level tests that run without a kernel).
    """
    use_tls = bool(target.extra.get("ftps"))
    client = FtpClient(
        target,
        check_data,
        socket_timeout=SOCKET_TIMEOUT,
        connection_timeout=CONNECT_TIMEOUT,
        path_timeout=SOCKET_TIMEOUT,
        encoding="utf-8",
    )
    what = f"FTP server {target.host}:{target.port}"
    try:
        async with mapped(what, connecting=True):
            await client.connect(target.address, target.port)
            if use_tls:
                await client.upgrade()
            user = target.username or ANONYMOUS_USER
            password = target.password
            if password is None:
                password = ANONYMOUS_PASSWORD if user == ANONYMOUS_USER else ""
            await client.login(user, password)
            await client.command("TYPE I", "200")
            await client.discover_features()
    except BaseException:
        client.close()
        raise
    return client
