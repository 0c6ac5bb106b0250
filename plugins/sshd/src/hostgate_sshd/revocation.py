"""Revoked keys and certificates (``sshd.revoked_keys``), checked at every front-door login.

The setting holds ssh-keygen's KRL specification (``man ssh-keygen``, KEY REVOCATION
LISTS), one directive a line, plus ``ca:`` lines that say whose certificates the
``serial:`` and ``id:`` lines after them revoke (ssh-keygen takes that CA with ``-s``)::

    # a lost laptop's key, wherever it is used: as a plain key, in a certificate, as a CA
    key: ssh-ed25519 AAAAC3Nza... alice@laptop
    hash: SHA256:m5OqE2Y1...
    ca: SHA256:Xv3k...            (or the CA's public key line)
    serial: 17
    serial: 100-199
    id: alice-laptop

A revoked key is refused as a plain key, as the key of a certificate and as the CA of
a certificate, as sshd's ``RevokedKeys`` does. ``export_krl`` turns the list into an
OpenSSH KRL (``ssh-keygen -k``) for the servers behind the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncssh
from hostgate import ApiError, ClientCertificate, CloseReason, Conflict

from .certs import TrustedCa, parse_ca_keys
from .plugin import MAX_REVOKED_TEXT

if TYPE_CHECKING:
    from .server import DoorConnection, FrontDoorServer

log = logging.getLogger("hostgate.sshd")

_FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")
MAX_SERIAL = 2**64 - 1
MAX_KEY_ID = 1024
MAX_ENTRIES = 10_000
REVOKED_MESSAGE = "this SSH key or certificate was revoked by an administrator"
CLOSED_EVENT = "sshd.revoked_connection_closed"


@dataclass(frozen=True)
class CaSection:
    """A ``ca:`` line and the certificates of that CA the lines after it revoke."""

    fingerprint: str
    line: str
    """The CA's public key line when the admin gave it (empty for a fingerprint)."""
    serials: tuple[tuple[int, int], ...] = ()
    key_ids: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Revocations:
    """The parsed setting: revoked key fingerprints and revoked certificates per CA."""

    keys: frozenset[str] = frozenset()
    sections: tuple[CaSection, ...] = ()
    key_lines: tuple[str, ...] = field(default=(), compare=False)
    """The ``key:`` and ``hash:`` directives as ssh-keygen reads them."""

    def __bool__(self) -> bool:
        return bool(self.keys or self.sections)

    def key_revoked(self, fingerprint: str) -> bool:
        """True when the key (SHA256 fingerprint) is revoked."""
        return fingerprint in self.keys

    def certificate_revoked(self, certificate: ClientCertificate) -> bool:
        """True when the certificate, its key or its CA is revoked."""
        ca = certificate.signing_key.get_fingerprint("sha256")
        if ca in self.keys or certificate.key.get_fingerprint("sha256") in self.keys:
            return True
        for section in self.sections:
            if section.fingerprint != ca:
                continue
            if certificate.key_id in section.key_ids:
                return True
            if any(lo <= certificate.serial <= hi for lo, hi in section.serials):
                return True
        return False


def _fingerprint_of(value: str, number: int) -> tuple[str, str]:
    """The SHA256 fingerprint of a ``key:``/``ca:`` value and its key line (``""`` if none)."""
    if _FINGERPRINT.match(value):
        return value, ""
    try:
        key = asyncssh.import_public_key(value)
    except (asyncssh.KeyImportError, ValueError, TypeError):
        try:  # a certificate revokes its key, as ssh-keygen reads it
            key = asyncssh.import_certificate(value).key
        except (asyncssh.KeyImportError, ValueError, TypeError):
            raise ValueError(
                f"line {number}: not an OpenSSH public key or a SHA256:... fingerprint"
            ) from None
    exported = key.export_public_key("openssh").decode().split()
    return key.get_fingerprint("sha256"), " ".join(exported[:2])


def _serials(value: str, number: int) -> tuple[int, int]:
    lo_text, dash, hi_text = value.partition("-")
    try:
        lo = int(lo_text.strip(), 0)
        hi = int(hi_text.strip(), 0) if dash else lo
    except ValueError:
        raise ValueError(f"line {number}: a serial is a number or a range such as 10-20") from None
    if not 1 <= lo <= hi <= MAX_SERIAL:
        raise ValueError(f"line {number}: serials run from 1 to 2^64-1, low-high")
    return lo, hi


def parse_revocations(text: str) -> Revocations:
    """The setting's directives; ValueError naming the line for anything else.

    The offending line is never repeated (a private key pasted by mistake stays out of
    answers and logs).
    """
    if len(text) > MAX_REVOKED_TEXT:
        raise ValueError(f"at most {MAX_REVOKED_TEXT} characters")
    if "PRIVATE KEY" in text:
        raise ValueError("revoke public keys (key: ssh-ed25519 AAAA...), never a private key")
    keys: set[str] = set()
    key_lines: list[str] = []
    sections: list[CaSection] = []
    serials: list[tuple[int, int]] = []
    ids: set[str] = set()
    entries = 0

    def close_section() -> None:
        if sections:
            sections[-1] = CaSection(
                sections[-1].fingerprint, sections[-1].line, tuple(serials), frozenset(ids)
            )

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        directive, colon, value = line.partition(":")
        directive, value = directive.strip().lower(), value.strip()
        if not colon or not value:
            raise ValueError(f"line {number}: write directive: value (key, hash, ca, serial, id)")
        entries += 1
        if entries > MAX_ENTRIES:
            raise ValueError(f"at most {MAX_ENTRIES} entries")
        if directive in {"key", "hash"}:
            fingerprint, key_line = _fingerprint_of(value, number)
            if directive == "hash" and key_line:
                raise ValueError(f"line {number}: hash: takes a SHA256:... fingerprint")
            keys.add(fingerprint)
            key_lines.append(f"key: {key_line}" if key_line else f"hash: {fingerprint}")
        elif directive == "ca":
            close_section()
            serials, ids = [], set()
            fingerprint, key_line = _fingerprint_of(value, number)
            sections.append(CaSection(fingerprint, key_line))
        elif directive in {"serial", "id"}:
            if not sections:
                raise ValueError(f"line {number}: {directive}: needs a ca: line before it")
            if directive == "serial":
                serials.append(_serials(value, number))
            elif len(value) > MAX_KEY_ID or not value.isprintable():
                raise ValueError(f"line {number}: a key id is printable, at most {MAX_KEY_ID}")
            else:
                ids.add(value)
        else:
            raise ValueError(f"line {number}: unknown directive (key, hash, ca, serial, id)")
    close_section()
    return Revocations(frozenset(keys), tuple(sections), tuple(key_lines))


class RevocationCache:
    """The parsed list, parsed again only when the setting's text changes."""

    def __init__(self) -> None:
        self._text: str | None = None
        self._revocations = Revocations()

    def get(self, text: str) -> Revocations:
        """The revocations of ``text``; none when it does not parse (the validator refuses it)."""
        if text != self._text:
            try:
                self._revocations = parse_revocations(text)
            except ValueError:
                self._revocations = Revocations()
            self._text = text
        return self._revocations


def connection_revoked(connection: DoorConnection, revocations: Revocations) -> bool:
    """True when the connection signed in with a key or certificate now revoked."""
    credential, certificate = connection.credential, connection.certificate
    if credential is not None and revocations.key_revoked(credential.credential_id):
        return True
    return certificate is not None and revocations.certificate_revoked(certificate)


async def close_revoked(server: FrontDoorServer, revocations: Revocations) -> int:
    """End every connection signed in with what ``revocations`` revokes; audit each.

    Its shells and commands end first with the reason on the client's terminal (exit
    status 255, as any session the kernel closes); the connection is disconnected once
    they have told it (its file transfers and forwards end with it).
    """
    closed = 0
    for connection in list(server.connections):
        if connection.conn is None or not connection_revoked(connection, revocations):
            continue
        connection.refused = REVOKED_MESSAGE
        for terminal in list(connection.terminals):
            await server.kernel.live.close_where(
                REVOKED_MESSAGE, reason_code=CloseReason.REVOKED, id=terminal.id
            )
        server.spawn(_disconnect(connection))
        closed += 1
        if connection.caller is not None:
            await server.kernel.audit.record(
                CLOSED_EVENT,
                actor=connection.caller,
                target=connection.login.target if connection.login is not None else "",
                details={**connection.details(), "reason": REVOKED_MESSAGE},
            )
    return closed


async def _disconnect(connection: DoorConnection) -> None:
    from .server import STOP_GRACE_SECONDS  # server.py imports this module

    if connection.handlers:
        await asyncio.wait(set(connection.handlers), timeout=STOP_GRACE_SECONDS)
    if connection.conn is not None:
        connection.conn.disconnect(asyncssh.DISC_BY_APPLICATION, f"hostgate: {REVOKED_MESSAGE}")


def revoked_text(event_details: Mapping[str, Any] | None, key: str) -> str | None:
    """The setting's new text from a ``settings.updated`` entry (None: it did not change)."""
    after = (event_details or {}).get("after")
    if not isinstance(after, Mapping) or key not in after:
        return None
    return str(after[key] or "")


# -- the KRL ------------------------------------------------------------------------------


def _ca_line(section: CaSection, trusted: Iterable[TrustedCa]) -> str:
    if section.line:
        return section.line
    for ca in trusted:
        if ca.fingerprint == section.fingerprint:
            return ca.line
    raise Conflict(
        f"the CA {section.fingerprint} is not among the trusted CA keys: "
        "give its public key line on the ca: line to export a KRL"
    )


async def export_krl(revocations: Revocations, trusted_text: str) -> bytes:
    """The list as an OpenSSH KRL, made by ``ssh-keygen -k`` (``-u`` with ``-s`` per CA).

    ``Conflict`` when a ``ca:`` line names a CA by fingerprint that is not trusted (its
    key is needed); ``ApiError`` 503 when ``ssh-keygen`` is not installed.
    """
    binary = shutil.which("ssh-keygen")
    if binary is None:
        raise ApiError(
            "ssh-keygen (OpenSSH) is not installed on the gateway",
            code="ssh_keygen_missing",
            status=503,
        )
    try:
        trusted = parse_ca_keys(trusted_text)
    except ValueError:
        trusted = []
    with tempfile.TemporaryDirectory(prefix="hostgate-krl-") as directory:
        folder = Path(directory)
        krl = folder / "revoked.krl"
        spec = folder / "keys.spec"
        spec.write_text("".join(f"{line}\n" for line in revocations.key_lines))
        await _ssh_keygen(binary, "-k", "-f", str(krl), str(spec))
        for number, section in enumerate(revocations.sections):
            ca = folder / f"ca{number}.pub"
            ca.write_text(_ca_line(section, trusted) + "\n")
            lines = [f"serial: {lo}-{hi}" for lo, hi in section.serials]
            lines += [f"id: {key_id}" for key_id in sorted(section.key_ids)]
            spec = folder / f"ca{number}.spec"
            spec.write_text("".join(f"{line}\n" for line in lines))
            await _ssh_keygen(binary, "-k", "-u", "-s", str(ca), "-f", str(krl), str(spec))
        return krl.read_bytes()


async def _ssh_keygen(binary: str, *args: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        binary, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        _, err = await proc.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise
    if proc.returncode != 0:
        log.error("ssh-keygen -k failed: %s", err.decode(errors="replace")[:500])
        raise ApiError(
            "ssh-keygen could not make the KRL (see the gateway's log)",
            code="krl_failed",
            status=503,
        )
