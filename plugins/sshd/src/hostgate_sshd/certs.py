"""OpenSSH user certificates signed by a CA an admin trusts (``sshd.trusted_user_ca_keys``).

A certificate signs a user in when a trusted CA signed it, one of its principals is
the hostgate user name the client named (``alice`` in ``alice:prod-db``), it is valid
now, the client's address is in its ``source-address`` (when it has one) and it has
no critical option asyncssh does not know (it refuses those while decoding). Its
``force-command`` replaces the command the client asked for, as OpenSSH's sshd does.

asyncssh checks all of that itself once the connection is given the CAs as
``cert-authority,principals="alice"`` entries (``set_authorized_keys``): the
principal is the account's name, never the whole login name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import asyncssh

from .keys import ACCEPTED_KEY_TYPES, MIN_RSA_BITS, rsa_bits
from .plugin import MAX_CA_TEXT

MAX_CAS = 50
CERT_METHOD = "ssh-certificate"
_PRINCIPAL = re.compile(r"^[^\s*?,\"!\\]+$")
"""A user name that is one literal principal (asyncssh reads ``*``, ``?``, ``!`` and ``,``)."""


@dataclass(frozen=True)
class TrustedCa:
    """A CA key as the admin wrote it: its key, type and fingerprint."""

    key: asyncssh.SSHKey
    algorithm: str
    fingerprint: str
    line: str


def parse_ca_keys(text: str) -> list[TrustedCa]:
    """The CA public keys of the setting: one OpenSSH line each, ``#`` comments, blanks.

    ValueError naming the line for anything else (never repeating it: a private key
    pasted by mistake stays out of answers and logs).
    """
    if len(text) > MAX_CA_TEXT:
        raise ValueError(f"at most {MAX_CA_TEXT} characters")
    if "PRIVATE KEY" in text:
        raise ValueError("paste CA public keys (ssh-ed25519 AAAA... ca), never a private key")
    found: list[TrustedCa] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            key = asyncssh.import_public_key(line)
        except (asyncssh.KeyImportError, ValueError, TypeError):
            raise ValueError(f"line {number} is not an OpenSSH public key line") from None
        algorithm = key.get_algorithm()
        if algorithm not in ACCEPTED_KEY_TYPES:
            raise ValueError(f"line {number}: {algorithm} keys cannot be a CA here")
        if algorithm == "ssh-rsa" and rsa_bits(key.public_data) < MIN_RSA_BITS:
            raise ValueError(f"line {number}: RSA keys need at least {MIN_RSA_BITS} bits")
        exported = key.export_public_key("openssh").decode().split()
        found.append(
            TrustedCa(key, algorithm, key.get_fingerprint("sha256"), " ".join(exported[:2]))
        )
    if len(found) > MAX_CAS:
        raise ValueError(f"at most {MAX_CAS} CA keys")
    return found


def authorized_cas(cas: list[TrustedCa], principal: str) -> asyncssh.SSHAuthorizedKeys | None:
    """The CAs as authorized-keys entries for one user, None when none can apply.

    A user name asyncssh would read as a pattern (``*``, ``?``, ``,``...) gets none:
    such a user signs in with a key or a password instead.
    """
    if not cas or not _PRINCIPAL.match(principal):
        return None
    lines = [f'cert-authority,principals="{principal}" {ca.line}' for ca in cas]
    return asyncssh.import_authorized_keys("\n".join(lines) + "\n")


class CaCache:
    """The parsed CA keys, parsed again only when the setting's text changes."""

    def __init__(self) -> None:
        self._text: str | None = None
        self._cas: list[TrustedCa] = []

    def get(self, text: str) -> list[TrustedCa]:
        """The CAs of ``text``; none when it does not parse (the validator refuses such text)."""
        if text != self._text:
            try:
                self._cas = parse_ca_keys(text)
            except ValueError:
                self._cas = []
            self._text = text
        return self._cas
