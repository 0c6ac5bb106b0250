"""A passkey as the second step after a password: ``/auth/login/passkey/mfa...``.

The password step (``POST /auth/login``) answers ``mfaRequired`` with ``passkey`` in
``mfaMethods`` when the account holds a passkey and its role requires two-step
verification (or it has TOTP too). The pending sign-in is the kernel's ``mfaToken``:
single use, five minutes, 5 attempts per 5 minutes per user, refused while the
account is locked, exactly as for a TOTP code.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hostgate import (
    Account,
    ClientInfo,
    KernelAPI,
    NotAuthenticated,
    Session,
    answers,
    current_kernel,
    public,
    request_client,
    signed_in_response,
)
from pydantic import BaseModel, Field
from quart import Response
from quart_schema import tag, validate_request

from .ceremonies import CeremonyFailed, authentication_options, credential_id_of, verify_assertion
from .routes import Challenge, _challenges, _party, _require_enabled, blueprint, log
from .store import KIND, stored

METHOD = "passkey"
STEP_FAILED = "The passkey check failed"


def _purpose(mfa_token: str) -> str:
    """A challenge's purpose bound to one pending sign-in (its token's hash)."""
    return "mfa:" + hashlib.sha256(mfa_token.encode()).hexdigest()


class StepOptions(BaseModel):
    """The pending sign-in's token from the password step."""

    mfaToken: str = Field(min_length=1, max_length=4096)  # noqa: N815 - wire name


class StepVerify(BaseModel):
    """The pending sign-in's token and the browser's assertion for its challenge."""

    mfaToken: str = Field(min_length=1, max_length=4096)  # noqa: N815 - wire name
    challengeId: str = Field(min_length=1, max_length=128)  # noqa: N815 - wire name
    response: dict[str, Any]


@blueprint.post("/auth/login/passkey/mfa/options")
@public
@validate_request(StepOptions)
@tag(["auth"])
@answers(Challenge, errors=(401, 429))
async def second_step_options(data: StepOptions) -> dict[str, Any]:
    """Options for ``navigator.credentials.get`` offering the pending user's passkeys.

    401 ``invalid_mfa_token`` when the token is unknown, expired, used or did not offer
    a passkey. Counts no attempt; the challenge is good for this pending sign-in only.
    """
    kernel = current_kernel()
    _require_enabled(kernel)
    client = request_client()
    await kernel.logins.limit_ip(client)
    user = await kernel.logins.begin_second_step(
        data.mfaToken, client, method=METHOD, attempt=False
    )
    allowed = [stored(row) for row in await kernel.credentials.for_user(user.id, KIND)]
    party = _party(kernel)
    challenge_id, challenge = _challenges(kernel).issue(
        _purpose(data.mfaToken), user.id, party.rp_id, party.origins
    )
    return {
        "options": authentication_options(party, challenge, allowed),
        "challengeId": challenge_id,
    }


async def _refused(
    kernel: KernelAPI, user: Account, client: ClientInfo, reason: str, detail: str = ""
) -> NotAuthenticated:
    if detail:
        log.info("passkey second step failed (%s): %s", reason, detail)
    await kernel.logins.second_step_failed(user, client, method=METHOD, reason=reason)
    return NotAuthenticated(STEP_FAILED, code="passkey_failed")


@blueprint.post("/auth/login/passkey/mfa")
@public
@validate_request(StepVerify)
@tag(["auth"])
@answers(Session, errors=(401, 429))
async def second_step(data: StepVerify) -> Response:
    """Verify an assertion as the second step; the session, as after a TOTP code.

    401 ``invalid_mfa_token`` (token unknown, expired, used, no passkey offered) or
    ``passkey_failed`` (challenge unknown, used or of another sign-in; a passkey not the
    pending user's; a signature or counter that does not verify); 429 past 5 attempts
    in 5 minutes or while the account is locked. ``auth.login`` records
    ``secondFactor: passkey``.
    """
    kernel = current_kernel()
    _require_enabled(kernel)
    client = request_client()
    user = await kernel.logins.begin_second_step(data.mfaToken, client, method=METHOD)
    challenge = _challenges(kernel).take(data.challengeId, _purpose(data.mfaToken))
    if challenge is None or challenge.user_id != user.id:
        raise await _refused(kernel, user, client, "passkey_invalid_challenge")
    try:
        credential_id = credential_id_of(data.response)
    except CeremonyFailed as exc:
        raise await _refused(kernel, user, client, "passkey_malformed", str(exc)) from None
    row = await kernel.credentials.find(KIND, credential_id)
    if row is None or row.user_id != user.id:
        raise await _refused(kernel, user, client, "passkey_wrong_user")
    try:
        new_count = verify_assertion(challenge, data.response, stored(row))
    except CeremonyFailed as exc:
        reason = "passkey_counter" if "sign count" in str(exc).lower() else "passkey_invalid"
        raise await _refused(kernel, user, client, reason, str(exc)) from None
    if not await kernel.credentials.record_use(row, new_count):
        raise await _refused(kernel, user, client, "passkey_counter", "concurrent use")
    signed = await kernel.logins.finish_second_step(
        data.mfaToken, user, client, method=METHOD, details={"passkeyId": row.id}
    )
    return signed_in_response(signed)
