"""``/auth/*``: setup, providers, local login, the TOTP step, logout, me, WebSocket tickets."""

from __future__ import annotations

import inspect
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, jsonify, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..guards import (
    app_kernel,
    authenticated,
    current_caller,
    interactive,
    onboarding,
    public,
    request_client,
)
from ..loginnames import LOGIN_NAME_PATTERN
from ..openapi import MfaChallenge, Ok, Session, answers
from ..security.passwords import MAX_PASSWORD_LENGTH
from ..sessioncookie import (
    TRUSTED_DEVICE_COOKIE,
    clear_session_cookie,
    login_response,
    set_trusted_device_cookie,
    signed_in_response,
)
from ..timefmt import iso
from .cachedjson import cached_json
from .fields import DisplayName, NewPassword, Username
from .profile import Me, me_json

blueprint = Blueprint("auth", __name__)


class SetupBody(BaseModel):
    """The first admin."""

    model_config = ConfigDict(extra="forbid")
    username: Username
    password: NewPassword
    displayName: DisplayName | Literal[""] = ""


class LoginBody(BaseModel):
    """Username and password."""

    username: str = Field(
        min_length=1, max_length=1000, json_schema_extra={"pattern": LOGIN_NAME_PATTERN}
    )
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)


class MfaLoginBody(BaseModel):
    """The second step: the mfaToken from the password step and a TOTP code."""

    mfaToken: str = Field(min_length=1, max_length=4096)
    code: str = Field(min_length=1, max_length=32)
    trustDevice: bool = False


class InviteCheckBody(BaseModel):
    """The secret from an invite link's fragment."""

    model_config = ConfigDict(extra="forbid")
    token: str = Field(min_length=1, max_length=200)


class InviteAcceptBody(BaseModel):
    """The secret from an invite link and the password the new user chose."""

    model_config = ConfigDict(extra="forbid")
    token: str = Field(min_length=1, max_length=200)
    password: NewPassword


class InviteFor(TypedDict):
    """Who an invite link is for, while it can be accepted."""

    username: str
    displayName: str
    expiresAt: str


class SetupStatus(TypedDict):
    """Whether the first user is still to be created."""

    needsSetup: bool


class Providers(TypedDict, total=False):
    """Which login methods are on; installed login packs add their keys."""

    local: bool
    ldap: bool
    oidc: bool
    oidcButtonLabel: str
    passkey: bool


class MeBody(TypedDict):
    """The caller."""

    user: Me


class Ticket(TypedDict):
    """A single-use WebSocket ticket."""

    ticket: str


@blueprint.get("/auth/status")
@public
@tag(["auth"])
@answers(SetupStatus)
async def status() -> SetupStatus:
    """``needsSetup`` is true until the first user exists."""
    return {"needsSetup": not await app_kernel().accounts.users_exist()}


@blueprint.post("/auth/setup")
@public
@validate_request(SetupBody)
@tag(["auth"])
@answers(Session, errors=(409, 429))
async def setup(data: SetupBody) -> Response:
    """Create the first admin (only while no user exists) and log them in."""
    kernel = app_kernel()
    client = request_client()
    user = await kernel.accounts.setup_first_admin(
        username=data.username,
        password=data.password,
        display_name=data.displayName,
        client=client,
    )
    return signed_in_response(await kernel.logins.complete_login(user, client, method="setup"))


@blueprint.get("/auth/providers")
@public
@tag(["auth"])
@answers(Providers)
async def providers() -> dict[str, Any]:
    """Which login methods are on; installed login packs add their keys."""
    kernel = app_kernel()
    # the bundled packs' keys are false until their pack, if installed, reports itself
    result: dict[str, Any] = {
        "local": bool(kernel.settings.get("auth.local_enabled")),
        "ldap": False,
        "oidc": False,
        "oidcButtonLabel": kernel.settings.get("auth.oidc_button_label"),
        "passkey": False,
    }
    for method in kernel.login_methods.values():
        if method.providers is None:
            continue
        contributed = method.providers(kernel)
        if inspect.isawaitable(contributed):
            contributed = await contributed
        result.update(contributed or {})
    return result


@blueprint.post("/auth/login")
@public
@validate_request(LoginBody)
@tag(["auth"])
@answers(Session | MfaChallenge, errors=(401, 403, 429))
async def login(data: LoginBody) -> Response:
    """Local password login: a session, or ``mfaRequired`` with an ``mfaToken``.

    The second step is due with TOTP on, or, in a role that requires two-step
    verification, with a pack's step (a passkey); ``mfaMethods`` lists the steps offered.
    """
    kernel = app_kernel()
    outcome = await kernel.logins.login_local(
        data.username, data.password, request_client(), request.cookies.get(TRUSTED_DEVICE_COOKIE)
    )
    return login_response(outcome)


@blueprint.post("/auth/login/mfa")
@public
@validate_request(MfaLoginBody)
@tag(["auth"])
@answers(Session, errors=(401, 429))
async def login_mfa(data: MfaLoginBody) -> Response:
    """The TOTP step; ``trustDevice`` lets this browser skip it for 30 days."""
    kernel = app_kernel()
    client = request_client()
    signed = await kernel.logins.login_mfa(data.mfaToken, data.code, client)
    response = signed_in_response(signed)
    if data.trustDevice:
        value, lifetime = await kernel.logins.trust_device(signed.user_id, client)
        set_trusted_device_cookie(response, value, lifetime)
    return response


@blueprint.post("/auth/invite/check")
@public
@validate_request(InviteCheckBody)
@tag(["auth"])
@answers(InviteFor, errors=(404, 429))
async def invite_check(data: InviteCheckBody) -> InviteFor:
    """Who an invite link is for, while it can be accepted.

    404 ``invite_invalid``, ``invite_expired``, ``invite_used`` or ``invite_revoked``.
    """
    found = await app_kernel().invites.check(data.token, request_client())
    return {
        "username": found.username,
        "displayName": found.display_name,
        "expiresAt": iso(found.expires_at),
    }


@blueprint.post("/auth/invite/accept")
@public
@validate_request(InviteAcceptBody)
@tag(["auth"])
@answers(Session, errors=(403, 404, 429))
async def invite_accept(data: InviteAcceptBody) -> Response:
    """Set the invited user's own password (the one strength rule) and sign them in.

    The link is single use; the same errors as ``/auth/invite/check``.
    """
    signed = await app_kernel().invites.accept(data.token, data.password, request_client())
    return signed_in_response(signed)


@blueprint.post("/auth/logout")
@onboarding
@interactive
@tag(["auth"])
@answers(Ok)
async def logout() -> Response:
    """End the current session (its sockets close too) and clear the cookie."""
    await app_kernel().profiles.logout(current_caller())
    response = jsonify({"ok": True})
    clear_session_cookie(response)
    return response


@blueprint.get("/auth/me")
@onboarding
@authenticated
@tag(["auth"])
@answers(MeBody)
async def me() -> Response:
    """The caller, with live role and permissions."""
    caller = current_caller()

    async def build() -> dict[str, Any]:
        return {"user": me_json(await app_kernel().profiles.current_user(caller), caller)}

    # every part of the body comes from the database: kept until it changes
    # a token's permissions are its own subset: its answer is kept apart from the user's
    return await cached_json(("GET /auth/me", caller.user_id, caller.api_token_id), build)


@blueprint.post("/auth/ws-ticket")
@authenticated
@tag(["auth"])
@answers(Ticket)
async def ws_ticket() -> Ticket:
    """A single-use ticket (30 s) for opening a terminal or desktop WebSocket."""
    kernel = app_kernel()
    caller = current_caller()
    return {"ticket": await kernel.tickets.issue(caller.user_id, caller.login_session_id or "")}
