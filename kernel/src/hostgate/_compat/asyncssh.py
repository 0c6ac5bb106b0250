"""The agent and X11 forwarding requests asyncssh refuses, seen before it refuses them.

asyncssh's server answers a session channel's ``auth-agent-req@openssh.com`` and
``x11-req`` itself (refused while its ``agent_forwarding`` / ``x11_forwarding``
options are off) and offers no public hook for either, so the SSH door could neither
audit those refusals nor tell the user why nothing was forwarded.
``watch_forwarding_requests`` wraps those two request handlers of one channel so that
each request is reported first; asyncssh then answers it as before, unless the report
says ``False``: then the request is refused whatever asyncssh's options (so a server
started with ``agent_forwarding`` on can still refuse it per connection or setting).

Private names used: asyncssh's
``SSHServerChannel._process_auth_agent_req_at_openssh_dot_com_request`` and
``SSHServerChannel._process_x11_req_request``. Guarded by ``RANGES``; outside them
nothing is reported (the requests are still refused: the stock behaviour).

``watch_certificates`` shows the door each user certificate asyncssh accepted (its
serial, key id and own key, which no public hook hands over) so that a revoked one is
refused. Private names used: ``SSHServerConnection._validate_openssh_certificate`` and
``SSHOpenSSHCertificate._serial`` / ``._key_id``; outside ``RANGES`` nothing is
watched (stock asyncssh) and the door refuses certificates while anything is revoked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from . import VersionRange, applies

RANGES = (VersionRange("asyncssh", "2.23.1", "2.24"),)
"""The versions this was written and tested against."""

AGENT_FORWARDING = "agent forwarding"
X11_FORWARDING = "X11 forwarding"
_HANDLERS = {
    "_process_auth_agent_req_at_openssh_dot_com_request": AGENT_FORWARDING,
    "_process_x11_req_request": X11_FORWARDING,
}


def watch_forwarding_requests(channel: Any, report: Callable[[str], bool | None]) -> bool:
    """Report ``channel``'s agent and X11 forwarding requests; False when nothing is watched.

    ``channel`` is an asyncssh ``SSHServerChannel``; ``report`` gets ``AGENT_FORWARDING``
    or ``X11_FORWARDING`` before asyncssh answers the request as it does; when ``report``
    returns ``False`` the request is refused instead. Nothing is watched outside
    ``RANGES``.
    """
    if not applies("asyncssh.forwarding_requests", *RANGES):
        return False
    handlers: dict[str, Callable[[Any], Any]] = {}
    for name in _HANDLERS:
        handler = getattr(channel, name, None)
        if not callable(handler):
            return False  # not asyncssh's server channel: nothing to watch
        handlers[name] = handler
    for name, what in _HANDLERS.items():
        setattr(channel, name, _reporting(handlers[name], what, report))
    return True


def _reporting(
    handler: Callable[[Any], Any], what: str, report: Callable[[str], bool | None]
) -> Callable[[Any], Any]:
    def reported(packet: Any) -> Any:
        if report(what) is False:
            return False  # asyncssh answers the request with a failure
        return handler(packet)

    return reported


# -- the client's certificate --------------------------------------------------------------
#
# asyncssh checks an OpenSSH user certificate itself (its CA through
# ``set_authorized_keys`` or ``SSHServer.validate_ca_key``, which gets only the CA's key)
# and hands no public hook the certificate: its serial, key id and own key stay unseen,
# so a door could not refuse a revoked certificate. ``watch_certificates`` wraps
# ``SSHServerConnection._validate_openssh_certificate`` of one connection and reads the
# certificate's ``_serial`` and ``_key_id``. Outside ``RANGES`` nothing is watched and
# the caller must refuse certificates it cannot check.


@dataclass(frozen=True)
class ClientCertificate:
    """An OpenSSH user certificate a client signs in with, as the door checks it."""

    key: Any
    """The certificate's own key (an ``asyncssh.SSHKey``)."""
    signing_key: Any
    """The CA's key that signed it (an ``asyncssh.SSHKey``)."""
    serial: int
    key_id: str
    principals: tuple[str, ...]


CertificateCheck = Callable[[ClientCertificate], Awaitable[bool]]
"""``await check(certificate)``: False refuses a certificate asyncssh accepted."""


def watch_certificates(connection: Any, check: CertificateCheck) -> bool:
    """Ask ``check`` about every certificate asyncssh accepts on ``connection``.

    ``connection`` is an asyncssh ``SSHServerConnection`` (``connection_made`` gets it).
    ``check`` runs only for a certificate asyncssh's own checks passed (trusted CA,
    principal, validity, source address), once for the client's query and once for its
    signed request; when it returns False the certificate is refused. False when
    nothing is watched (outside ``RANGES``, or not asyncssh's server connection).
    """
    if not applies("asyncssh.certificates", *RANGES):
        return False
    validate = getattr(connection, "_validate_openssh_certificate", None)
    if not callable(validate):
        return False

    async def checked(username: str, cert: Any) -> Any:
        key = await validate(username, cert)
        if key is None:
            return None
        seen = ClientCertificate(
            key=cert.key,
            signing_key=cert.signing_key,
            serial=int(cert._serial),
            key_id=str(cert._key_id),
            principals=tuple(cert.principals),
        )
        return key if await check(seen) else None

    connection._validate_openssh_certificate = checked
    return True
