"""``/auth/*``: setup, providers, local login, the TOTP step, logout, me, WebSocket tickets."""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, jsonify, request
from quart_schema import tag, validate_request

from ..guards import authenticated, current_caller, current_kernel, public, request_client
from ..security.passwords import MAX_PASSWORD_LENGTH
from ..services import accounts
from ..services import profile as profiles
from ..sessioncookie import (
    TRUSTED_DEVICE_COOKIE,
    clear_session_cookie,
    set_session_cookie,
    set_trusted_device_cookie,
)
from .cachedjson import cached_json

blueprint = Blueprint("auth", __name__)


class SetupBody(BaseModel):
    """The first admin."""

    model_config = ConfigDict(extra="forbid")
    username: str = Field(min_length=1, max_length=200)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)
    displayName: str = Field(default="", max_length=200)


class LoginBody(BaseModel):
    """Username and password."""

    username: str = Field(min_length=1, max_length=1000)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)


class MfaLoginBody(BaseModel):
    """The second step: the mfaToken from the password step and a TOTP code."""

    mfaToken: str = Field(min_length=1, max_length=4096)
    code: str = Field(min_length=1, max_length=32)
    trustDevice: bool = False


@blueprint.get("/auth/status")
@public
@tag(["auth"])
async def status() -> dict[str, Any]:
    """``needsSetup`` is true until the first user exists."""
    return {"needsSetup": not await accounts.users_exist(current_kernel())}


@blueprint.post("/auth/setup")
@public
@validate_request(SetupBody)
@tag(["auth"])
async def setup(data: SetupBody) -> Response:
    """Create the first admin (only while no user exists) and log them in."""
    kernel = current_kernel()
    client = request_client()
    user = await accounts.setup_first_admin(
        kernel,
        username=data.username,
        password=data.password,
        display_name=data.displayName,
        client=client,
    )
    issued, body = await kernel.logins.complete_login(user, client, method="setup")
    response = jsonify(body)
    set_session_cookie(response, issued.token, issued.max_age)
    return response


@blueprint.get("/auth/providers")
@public
@tag(["auth"])
async def providers() -> dict[str, Any]:
    """Which login methods are on; installed login packs add their keys."""
    kernel = current_kernel()
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
async def login(data: LoginBody) -> Response:
    """Local password login: a session, or ``mfaRequired`` with an ``mfaToken``."""
    kernel = current_kernel()
    outcome = await kernel.logins.login_local(
        data.username, data.password, request_client(), request.cookies.get(TRUSTED_DEVICE_COOKIE)
    )
    response = jsonify(outcome.body)
    if outcome.issued is not None:
        set_session_cookie(response, outcome.issued.token, outcome.issued.max_age)
    return response


@blueprint.post("/auth/login/mfa")
@public
@validate_request(MfaLoginBody)
@tag(["auth"])
async def login_mfa(data: MfaLoginBody) -> Response:
    """The TOTP step; ``trustDevice`` lets this browser skip it for 30 days."""
    kernel = current_kernel()
    client = request_client()
    issued, body, user = await kernel.logins.login_mfa(data.mfaToken, data.code, client)
    response = jsonify(body)
    set_session_cookie(response, issued.token, issued.max_age)
    if data.trustDevice:
        value, lifetime = await kernel.logins.trust_device(user.id, client)
        set_trusted_device_cookie(response, value, lifetime)
    return response


@blueprint.post("/auth/logout")
@authenticated
@tag(["auth"])
async def logout() -> Response:
    """End the current session (its sockets close too) and clear the cookie."""
    await profiles.logout(current_kernel(), current_caller())
    response = jsonify({"ok": True})
    clear_session_cookie(response)
    return response


@blueprint.get("/auth/me")
@authenticated
@tag(["auth"])
async def me() -> Response:
    """The caller, with live role and permissions."""
    caller = current_caller()

    async def build() -> dict[str, Any]:
        return {"user": await profiles.me(current_kernel(), caller)}

    # every part of the body comes from the database: kept until it changes
    return await cached_json(("GET /auth/me", caller.user_id), build)


@blueprint.post("/auth/ws-ticket")
@authenticated
@tag(["auth"])
async def ws_ticket() -> dict[str, Any]:
    """A single-use ticket (30 s) for opening a terminal or desktop WebSocket."""
    kernel = current_kernel()
    caller = current_caller()
    return {"ticket": kernel.tickets.issue(caller.user_id, caller.login_session_id or "")}
