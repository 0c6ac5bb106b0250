"""Passkeys at rest: the kernel's credential store (``kernel.credentials``), kind "passkey"."""

from __future__ import annotations

from typing import Any

from hostgate import StoredCredential, iso

from .ceremonies import StoredPasskey

KIND = "passkey"


def public_view(credential: StoredCredential) -> dict[str, Any]:
    """The listing shape: no key material."""
    return {
        "id": credential.id,
        "name": credential.name,
        "createdAt": iso(credential.created_at),
        "lastUsedAt": iso(credential.last_used_at) if credential.last_used_at else None,
    }


def stored(credential: StoredCredential) -> StoredPasskey:
    """What verification needs from a stored credential."""
    data = credential.data
    return StoredPasskey(
        credential_id=credential.credential_id,
        public_key=str(data.get("publicKey", "")),
        sign_count=credential.sign_count,
        transports=tuple(str(t) for t in data.get("transports") or ()),
    )
