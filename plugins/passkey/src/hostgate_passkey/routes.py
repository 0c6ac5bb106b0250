"""Passkey routes: ``/profile/passkeys...`` (own passkeys) and ``/auth/login/passkey...``.

Listing and registering are open to a user who must still set up two-step verification
(``onboarding``): a passkey satisfies that requirement. Deleting the last passkey of such
a user puts them back to "must set up", as turning TOTP off does.
"""

from __future__ import annotations

import logging
from typing import Any

from hostgate import (
    LOGIN_NAME_PATTERN,
    Account,
    ClientInfo,
    Conflict,
    DuplicateCredential,
    InvalidInput,
    KernelAPI,
    NotAuthenticated,
    NotFound,
    Ok,
    Session,
    answers,
    authenticated,
    current_caller,
    current_kernel,
    interactive,
    iso,
    onboarding,
    public,
    request_client,
    request_is_secure,
    signed_in_response,
)
from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from .ceremonies import (
    CeremonyFailed,
    RelyingParty,
    authentication_options,
    credential_id_of,
    registration_options,
    relying_party,
    user_handle_of,
    verify_assertion,
    verify_registration,
)
from .challenges import Challenges
from .store import KIND, public_view, stored

log = logging.getLogger("hostgate.passkey")
blueprint = Blueprint("passkey", __name__)
PROVIDER = "passkey"


class Challenge(TypedDict):
    """WebAuthn options for the browser and the id of the challenge they carry."""

    options: dict[str, Any]
    challengeId: str


class PasskeyView(TypedDict):
    """A passkey (never any key material)."""

    id: str
    name: str
    createdAt: str


class Registered(TypedDict):
    """The passkey registered."""

    ok: bool
    passkey: PasskeyView


class Passkeys(TypedDict):
    """The caller's passkeys and whether another may be added."""

    passkeys: list[dict[str, Any]]
    canAdd: bool
    maxPasskeys: int


DISABLED = "Passkeys are disabled"
LOGIN_FAILED = "Passkey login failed"
CHALLENGES_KEY = "passkey.challenges"


class RegisterVerify(BaseModel):
    """The browser's attestation for an earlier registration challenge."""

    model_config = ConfigDict(extra="forbid")
    challengeId: str = Field(min_length=1, max_length=128)  # noqa: N815 - wire name
    response: dict[str, Any]
    name: str = Field(default="Passkey", min_length=1, max_length=200)


class Rename(BaseModel):
    """A new name for a passkey."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)


class LoginOptions(BaseModel):
    """Optionally the username, to offer only that user's passkeys."""

    model_config = ConfigDict(extra="forbid")
    username: str | None = Field(
        default=None, max_length=200, json_schema_extra={"pattern": LOGIN_NAME_PATTERN}
    )


class LoginVerify(BaseModel):
    """The browser's assertion for an earlier login challenge."""

    model_config = ConfigDict(extra="forbid")
    challengeId: str = Field(min_length=1, max_length=128)  # noqa: N815 - wire name
    response: dict[str, Any]


def _challenges(kernel: KernelAPI) -> Challenges:
    store: Challenges = kernel.state.setdefault(CHALLENGES_KEY, Challenges())
    return store


def _party(kernel: KernelAPI) -> RelyingParty:
    return relying_party(
        kernel.settings.get,
        kernel.config.plugin("passkey"),
        request.host,
        request_is_secure(),
        str(kernel.settings.get("app.name") or ""),
    )


def _require_enabled(kernel: KernelAPI) -> None:
    if not kernel.settings.get("security.passkey_enabled"):
        raise InvalidInput(DISABLED, code="passkey_disabled")


def _name(text: str) -> str:
    name = "".join(ch for ch in text if ch.isprintable()).strip()
    if not name:
        raise InvalidInput("name: must not be blank")
    return name


# -- the caller's own passkeys ---------------------------------------------------


@blueprint.post("/profile/passkeys/register/options")
@onboarding
@interactive
@tag(["profile"])
@answers(Challenge, errors=(409,))
async def register_options() -> dict[str, Any]:
    """Options for ``navigator.credentials.create`` and the ``challengeId`` to answer with."""
    kernel = current_kernel()
    _require_enabled(kernel)
    caller = current_caller()
    existing = await kernel.credentials.for_user(caller.user_id, KIND)
    limit = int(kernel.settings.get("security.passkey_max_per_user"))
    if len(existing) >= limit:
        raise Conflict(f"You already have the maximum of {limit} passkeys", code="passkey_limit")
    party = _party(kernel)
    challenge_id, challenge = _challenges(kernel).issue(
        "register", caller.user_id, party.rp_id, party.origins
    )
    options = registration_options(
        party,
        challenge,
        caller.user_id,
        caller.username,
        caller.display_name,
        [stored(row) for row in existing],
    )
    return {"options": options, "challengeId": challenge_id}


@blueprint.post("/profile/passkeys/register/verify")
@onboarding
@interactive
@validate_request(RegisterVerify)
@tag(["profile"])
@answers(Registered, errors=(404, 409))
async def register_verify(data: RegisterVerify) -> dict[str, Any]:
    """Store a new passkey once its attestation verifies."""
    kernel = current_kernel()
    _require_enabled(kernel)
    caller = current_caller()
    name = _name(data.name)
    challenge = _challenges(kernel).take(data.challengeId, "register")
    if challenge is None or challenge.user_id != caller.user_id:
        raise NotFound("Invalid or expired passkey challenge", code="invalid_challenge")
    try:
        passkey = verify_registration(challenge, data.response)
    except CeremonyFailed as exc:
        raise InvalidInput(str(exc), code="passkey_invalid") from None
    limit = int(kernel.settings.get("security.passkey_max_per_user"))
    if await kernel.credentials.count(caller.user_id, KIND) >= limit:
        raise Conflict(f"You already have the maximum of {limit} passkeys", code="passkey_limit")
    try:
        async with kernel.audit.atomic() as batch:
            row = await kernel.credentials.add(
                batch,
                user_id=caller.user_id,
                kind=KIND,
                name=name,
                credential_id=passkey.credential_id,
                data=passkey.data,
                sign_count=passkey.sign_count,
            )
            batch.record(
                "auth.passkey_registered",
                actor=caller,
                target=caller.username,
                details={"passkeyId": row.id, "passkeyName": row.name},
            )
    except DuplicateCredential:
        raise Conflict("This passkey is already registered", code="passkey_exists") from None
    return {
        "ok": True,
        "passkey": {"id": row.id, "name": row.name, "createdAt": iso(row.created_at)},
    }


@blueprint.get("/profile/passkeys")
@onboarding
@authenticated
@tag(["profile"])
@answers(Passkeys)
async def list_passkeys() -> dict[str, Any]:
    """The caller's passkeys (never any key material)."""
    kernel = current_kernel()
    caller = current_caller()
    rows = await kernel.credentials.for_user(caller.user_id, KIND)
    limit = int(kernel.settings.get("security.passkey_max_per_user"))
    enabled = bool(kernel.settings.get("security.passkey_enabled"))
    return {
        "passkeys": [public_view(row) for row in rows],
        "canAdd": enabled and len(rows) < limit,
        "maxPasskeys": limit,
    }


@blueprint.put("/profile/passkeys/<passkey_id>")
@interactive
@validate_request(Rename)
@tag(["profile"])
@answers(Ok)
async def rename_passkey(passkey_id: str, data: Rename) -> Ok:
    """Rename one of the caller's passkeys."""
    kernel = current_kernel()
    caller = current_caller()
    row = await kernel.credentials.get(passkey_id, user_id=caller.user_id, kind=KIND)
    if row is None:
        raise NotFound("Passkey not found")
    name = _name(data.name)
    async with kernel.audit.atomic() as batch:
        await kernel.credentials.rename(batch, row, name)
        batch.record(
            "auth.passkey_renamed",
            actor=caller,
            target=caller.username,
            details={"passkeyId": row.id, "newName": name},
        )
    return {"ok": True}


@blueprint.delete("/profile/passkeys/<passkey_id>")
@interactive
@tag(["profile"])
@answers(Ok)
async def delete_passkey(passkey_id: str) -> Ok:
    """Remove one of the caller's passkeys."""
    kernel = current_kernel()
    caller = current_caller()
    row = await kernel.credentials.get(passkey_id, user_id=caller.user_id, kind=KIND)
    if row is None:
        raise NotFound("Passkey not found")
    async with kernel.audit.atomic() as batch:
        await kernel.credentials.delete(batch, row)
        batch.record(
            "auth.passkey_removed",
            actor=caller,
            target=caller.username,
            details={"passkeyId": row.id, "passkeyName": row.name},
        )
    return {"ok": True}


# -- login -----------------------------------------------------------------------


@blueprint.post("/auth/login/passkey/options")
@public
@validate_request(LoginOptions)
@tag(["auth"])
@answers(Challenge, errors=(429,))
async def passkey_login_options(data: LoginOptions) -> dict[str, Any]:
    """Options for ``navigator.credentials.get`` and the ``challengeId`` to answer with."""
    kernel = current_kernel()
    _require_enabled(kernel)
    await kernel.logins.limit_ip(request_client())
    user_id: str | None = None
    allowed = []
    if data.username and data.username.strip():
        user = await kernel.logins.find_user(data.username, provider=None)
        if user is not None:
            user_id = user.id
            allowed = [stored(row) for row in await kernel.credentials.for_user(user.id, KIND)]
    party = _party(kernel)
    challenge_id, challenge = _challenges(kernel).issue(
        "login", user_id, party.rp_id, party.origins
    )
    return {
        "options": authentication_options(party, challenge, allowed),
        "challengeId": challenge_id,
    }


async def _failed(
    kernel: KernelAPI, client: ClientInfo, user: Account | None, reason: str, detail: str = ""
) -> NotAuthenticated:
    if detail:
        log.info("passkey login failed (%s): %s", reason, detail)
    await kernel.logins.record_failure(
        user, user.username if user else "", client, reason=reason, provider=PROVIDER
    )
    return NotAuthenticated(LOGIN_FAILED, code="passkey_failed")


@blueprint.post("/auth/login/passkey")
@public
@validate_request(LoginVerify)
@tag(["auth"])
@answers(Session, errors=(401, 429))
async def passkey_login(data: LoginVerify) -> Response:
    """Verify an assertion and log in: the same body and cookie as a local login."""
    kernel = current_kernel()
    _require_enabled(kernel)
    client = request_client()
    logins = kernel.logins
    await logins.limit_ip(client)
    challenge = _challenges(kernel).take(data.challengeId, "login")
    if challenge is None:
        raise await _failed(kernel, client, None, "passkey_invalid_challenge")
    try:
        credential_id = credential_id_of(data.response)
        handle = user_handle_of(data.response)
    except CeremonyFailed as exc:
        raise await _failed(kernel, client, None, "passkey_malformed", str(exc)) from None
    row = await kernel.credentials.find(KIND, credential_id)
    if row is None:
        raise await _failed(kernel, client, None, "passkey_unknown")
    user = await kernel.credentials.owner(row)
    if user is None:
        raise await _failed(kernel, client, None, "passkey_unknown")
    if (challenge.user_id and challenge.user_id != user.id) or (handle and handle != user.id):
        raise await _failed(kernel, client, user, "passkey_wrong_user")
    await logins.check_not_locked(user, client)
    try:
        new_count = verify_assertion(challenge, data.response, stored(row))
    except CeremonyFailed as exc:
        reason = "passkey_counter" if "sign count" in str(exc).lower() else "passkey_invalid"
        raise await _failed(kernel, client, user, reason, str(exc)) from None
    if not await kernel.credentials.record_use(row, new_count):
        raise await _failed(kernel, client, user, "passkey_counter", "concurrent use")
    signed = await logins.complete_login(
        user, client, method=PROVIDER, details={"passkeyId": row.id}
    )
    return signed_in_response(signed)
