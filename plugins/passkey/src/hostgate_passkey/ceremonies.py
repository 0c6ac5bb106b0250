"""The WebAuthn ceremonies (py_webauthn): relying party, options, verification.

Attestation is not requested (``none``); user verification is preferred, not
required; every assertion must raise the credential's sign counter unless the
authenticator keeps no counter at all (both zero).

py_webauthn is imported in the functions that run a ceremony, not at start:
it costs every start about 60 ms CPU.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .challenges import Challenge
from .settings import parse_origins

if TYPE_CHECKING:
    from webauthn.helpers.structs import AuthenticatorTransport, PublicKeyCredentialDescriptor

TIMEOUT_MS = 300_000


@cache
def _transports() -> dict[str, AuthenticatorTransport]:
    """The transports py_webauthn knows, by their wire name."""
    from webauthn.helpers.structs import AuthenticatorTransport

    return {t.value: t for t in AuthenticatorTransport}


class CeremonyFailed(Exception):
    """The browser's response did not verify; the message says why (no secrets in it)."""


@dataclass(frozen=True)
class RelyingParty:
    """Who the passkeys are for: WebAuthn rp id, display name and accepted origins."""

    rp_id: str
    name: str
    origins: tuple[str, ...]


@dataclass(frozen=True)
class StoredPasskey:
    """What verification needs from a stored credential."""

    credential_id: str
    public_key: str
    sign_count: int
    transports: tuple[str, ...] = ()


@dataclass(frozen=True)
class NewPasskey:
    """A verified registration, ready to store."""

    credential_id: str
    public_key: str
    sign_count: int
    data: dict[str, Any]


def relying_party(
    settings_get: Any, plugin_config: Mapping[str, Any], host: str, secure: bool, app_name: str
) -> RelyingParty:
    """Settings first, then ``[plugins.passkey]`` config, then the request's own host."""
    rp_id = str(settings_get("security.passkey_rp_id") or "").strip()
    rp_id = rp_id or str(plugin_config.get("rp_id") or "").strip()
    origins = parse_origins(str(settings_get("security.passkey_origin") or ""))
    if not origins:
        configured = plugin_config.get("origin") or plugin_config.get("origins") or ""
        if isinstance(configured, list | tuple):
            configured = ",".join(str(o) for o in configured)
        origins = parse_origins(str(configured))
    if not origins:
        origins = [f"{'https' if secure else 'http'}://{host}"]
    if not rp_id:
        rp_id = urlsplit(origins[0]).hostname or host.split(":")[0]
    return RelyingParty(rp_id=rp_id, name=app_name or "hostgate", origins=tuple(origins))


def _descriptor(passkey: StoredPasskey) -> PublicKeyCredentialDescriptor:
    from webauthn.helpers import base64url_to_bytes
    from webauthn.helpers.structs import PublicKeyCredentialDescriptor

    known = _transports()
    transports = [known[t] for t in passkey.transports if t in known]
    return PublicKeyCredentialDescriptor(
        id=base64url_to_bytes(passkey.credential_id), transports=transports or None
    )


def registration_options(
    party: RelyingParty,
    challenge: Challenge,
    user_id: str,
    username: str,
    display_name: str,
    existing: Sequence[StoredPasskey],
) -> dict[str, Any]:
    """``PublicKeyCredentialCreationOptions`` as JSON for ``navigator.credentials.create``."""
    from webauthn import generate_registration_options, options_to_json
    from webauthn.helpers.structs import (
        AuthenticatorSelectionCriteria,
        ResidentKeyRequirement,
        UserVerificationRequirement,
    )

    options = generate_registration_options(
        rp_id=party.rp_id,
        rp_name=party.name,
        user_id=user_id.encode(),
        user_name=username,
        user_display_name=display_name or username,
        challenge=challenge.value,
        timeout=TIMEOUT_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=[_descriptor(p) for p in existing],
    )
    result: dict[str, Any] = json.loads(options_to_json(options))
    return result


def authentication_options(
    party: RelyingParty, challenge: Challenge, allowed: Sequence[StoredPasskey]
) -> dict[str, Any]:
    """``PublicKeyCredentialRequestOptions`` as JSON for ``navigator.credentials.get``."""
    from webauthn import generate_authentication_options, options_to_json
    from webauthn.helpers.structs import UserVerificationRequirement

    options = generate_authentication_options(
        rp_id=party.rp_id,
        challenge=challenge.value,
        timeout=TIMEOUT_MS,
        allow_credentials=[_descriptor(p) for p in allowed],
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    result: dict[str, Any] = json.loads(options_to_json(options))
    return result


def verify_registration(challenge: Challenge, response: Mapping[str, Any]) -> NewPasskey:
    """Check an attestation response against its challenge, rp id and origins."""
    from webauthn import verify_registration_response
    from webauthn.helpers import bytes_to_base64url
    from webauthn.helpers.exceptions import WebAuthnException

    try:
        verified = verify_registration_response(
            credential=dict(response),
            expected_challenge=challenge.value,
            expected_rp_id=challenge.rp_id,
            expected_origin=list(challenge.origins),
            require_user_verification=False,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CeremonyFailed(f"Passkey registration could not be verified: {exc}") from None
    transports = response.get("response", {}).get("transports") or []
    public_key = bytes_to_base64url(verified.credential_public_key)
    data: dict[str, Any] = {
        "publicKey": public_key,
        "transports": [t for t in transports if isinstance(t, str) and t in _transports()],
        "aaguid": verified.aaguid,
        "deviceType": str(verified.credential_device_type.value),
        "backedUp": bool(verified.credential_backed_up),
        "userVerified": bool(verified.user_verified),
    }
    return NewPasskey(
        credential_id=bytes_to_base64url(verified.credential_id),
        public_key=public_key,
        sign_count=int(verified.sign_count),
        data=data,
    )


def credential_id_of(response: Mapping[str, Any]) -> str:
    """The base64url credential id an assertion names (``rawId``, else ``id``)."""
    from webauthn.helpers import base64url_to_bytes, bytes_to_base64url

    raw = response.get("rawId") or response.get("id")
    if not isinstance(raw, str) or not raw:
        raise CeremonyFailed("The passkey response names no credential")
    try:
        return bytes_to_base64url(base64url_to_bytes(raw))
    except (ValueError, TypeError):
        raise CeremonyFailed("The passkey response's credential id is malformed") from None


def user_handle_of(response: Mapping[str, Any]) -> str | None:
    """The user handle an assertion carries (the hostgate user id), if any."""
    from webauthn.helpers import base64url_to_bytes

    inner = response.get("response")
    handle = inner.get("userHandle") if isinstance(inner, Mapping) else None
    if not isinstance(handle, str) or not handle:
        return None
    try:
        return base64url_to_bytes(handle).decode()
    except (ValueError, TypeError, UnicodeDecodeError):
        raise CeremonyFailed("The passkey response's user handle is malformed") from None


def verify_assertion(
    challenge: Challenge, response: Mapping[str, Any], passkey: StoredPasskey
) -> int:
    """Check an assertion (signature, challenge, rp id, origin, counter); return the new count."""
    from webauthn import verify_authentication_response
    from webauthn.helpers import base64url_to_bytes
    from webauthn.helpers.exceptions import WebAuthnException

    try:
        verified = verify_authentication_response(
            credential=dict(response),
            expected_challenge=challenge.value,
            expected_rp_id=challenge.rp_id,
            expected_origin=list(challenge.origins),
            credential_public_key=base64url_to_bytes(passkey.public_key),
            credential_current_sign_count=passkey.sign_count,
            require_user_verification=False,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CeremonyFailed(f"Passkey login could not be verified: {exc}") from None
    return int(verified.new_sign_count)
