"""The pack's hook: the ``smtp`` notification channel.

Pack options (``[plugins.smtp]`` in the config file): ``ca_file``, a PEM bundle
of extra certificate authorities to trust (e.g. a private mail relay's CA);
``helo_name``, the name sent in EHLO (default: this machine's FQDN).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Mapping, Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from typing import Any

import aiosmtplib
from hostgate import (
    ChannelSpec,
    InvalidInput,
    KernelAPI,
    NotificationMessage,
    RemoteAuthFailed,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
    hookimpl,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

TIMEOUT = 20.0


class SmtpConfig(BaseModel):
    """``{host, port, username, password, from, tls}``; ``tls`` means implicit TLS.

    Without ``tls`` the connection is upgraded with STARTTLS whenever the server
    offers it. Certificates are always verified.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    host: str = Field(
        min_length=1, max_length=255, description="Mail server host name or IP address"
    )
    port: int = Field(default=587, ge=1, le=65535, description="587 for STARTTLS, 465 with TLS on")
    username: str = Field(default="", max_length=320, description="Empty: send without logging in")
    password: str = Field(default="", max_length=1024, description="Stored encrypted")
    sender: str = Field(
        alias="from",
        min_length=3,
        max_length=320,
        description="Sender: addr@example.org or Name <addr@example.org>",
    )
    tls: bool = Field(
        default=False,
        description="Implicit TLS (port 465 style); off: STARTTLS whenever the server offers it",
    )

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        value = value.strip()
        if any(ch in value for ch in " /\\@") or not value.isprintable() or not value:
            raise ValueError("must be a host name or IP address")
        return value

    @field_validator("sender")
    @classmethod
    def _sender(cls, value: str) -> str:
        _, address = parseaddr(value)
        if "@" not in address or "\n" in value or "\r" in value:
            raise ValueError("must be an e-mail address, optionally with a name")
        return value.strip()


def _message(config: SmtpConfig, message: NotificationMessage) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = " ".join(message.subject.split())
    mail["From"] = config.sender
    mail["To"] = ", ".join(message.recipients)
    mail["Date"] = formatdate(localtime=False, usegmt=True)
    mail["Message-ID"] = make_msgid(domain=parseaddr(config.sender)[1].rsplit("@", 1)[-1])
    mail.set_content(message.text)
    return mail


def _tls_context(options: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca_file = options.get("ca_file")
    if ca_file:
        context.load_verify_locations(cafile=str(ca_file))
    return context


async def _connect(address: str, port: int) -> socket.socket:
    """A connected socket to the policy-approved address."""
    family = socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.wait_for(
            asyncio.get_running_loop().sock_connect(sock, (address, port)), TIMEOUT
        )
    except BaseException:
        sock.close()
        raise
    return sock


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


async def send_mail(
    kernel: KernelAPI, config: Mapping[str, Any], message: NotificationMessage
) -> None:
    """Send ``message`` as a plain-text e-mail to its recipients."""
    settings = SmtpConfig.model_validate(dict(config))
    if not message.recipients:
        raise InvalidInput("No e-mail recipients")
    options = kernel.config.plugin("smtp")
    host, port = settings.host, settings.port
    address = await kernel.outbound.check(host, port, purpose="smtp")
    sock: socket.socket | None = None
    try:
        if _is_ip(address):
            sock = await _connect(address, port)
        client = aiosmtplib.SMTP(
            hostname=host,
            port=None if sock is not None else port,
            sock=sock,
            use_tls=settings.tls,
            start_tls=False if settings.tls else None,
            validate_certs=True,
            tls_context=_tls_context(options),
            timeout=TIMEOUT,
            local_hostname=options.get("helo_name") or None,
            username=settings.username or None,
            password=(settings.password or None) if settings.username else None,
        )
        async with client:
            await client.send_message(_message(settings, message))
    except Exception as exc:
        raise _failure(exc, f"{host}:{port}") from None
    finally:
        if sock is not None:
            sock.close()


def _tls_cause(exc: BaseException) -> ssl.SSLError | None:
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _failure(exc: Exception, where: str) -> Exception:
    """The hostgate error for an SMTP failure, with the server's answer."""
    if isinstance(exc, aiosmtplib.SMTPAuthenticationError):
        return RemoteAuthFailed(
            f"SMTP server {where} rejected the credentials: {exc.code} {exc.message}"
        )
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        refused = "; ".join(f"{r.recipient}: {r.code} {r.message}" for r in exc.recipients)
        return RemoteError(f"SMTP server {where} refused the recipients ({refused})")
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return RemoteError(f"SMTP server {where} answered {exc.code} {exc.message}")
    if isinstance(exc, TimeoutError):
        return RemoteTimeout(f"SMTP server {where} did not answer in time")
    tls = _tls_cause(exc)
    if isinstance(tls, ssl.SSLCertVerificationError):
        return RemoteError(
            f"the TLS certificate of SMTP server {where} could not be verified: "
            f"{tls.verify_message or tls.reason}"
        )
    if tls is not None:
        return RemoteError(f"TLS with SMTP server {where} failed: {tls.reason or tls}")
    if isinstance(exc, aiosmtplib.SMTPConnectError | ConnectionRefusedError):
        return RemoteUnreachable(f"cannot connect to SMTP server {where}")
    if isinstance(exc, aiosmtplib.SMTPException):
        return RemoteError(f"SMTP with {where} failed: {exc.message}")
    if isinstance(exc, OSError):
        return RemoteUnreachable(f"cannot connect to SMTP server {where}: {exc.strerror or exc}")
    return exc


@hookimpl
def register_channels() -> Sequence[ChannelSpec]:
    """The ``smtp`` channel."""
    return [
        ChannelSpec(
            type="smtp",
            title="E-mail (SMTP)",
            config_model=SmtpConfig,
            send=send_mail,
            secret_fields=("password",),
        )
    ]
