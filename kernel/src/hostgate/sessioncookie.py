"""The session cookie every login method sets: ``hostgate_token``.

HttpOnly, SameSite=Strict, Path=/, Secure when the request came over HTTPS
(directly, or through a configured trusted proxy that says so with
``X-Forwarded-Proto``). API clients use ``Authorization: Bearer`` instead.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from typing import Any

from quart import Response, current_app, jsonify, request

from .principals import LoginOutcome, SignedIn
from .security.clientinfo import normalise_ip

SESSION_COOKIE = "hostgate_token"
TRUSTED_DEVICE_COOKIE = "hostgate_trusted_device"


def request_is_secure() -> bool:
    """True when the current request arrived over HTTPS."""
    if request.scheme in {"https", "wss"}:
        return True
    proxies = current_app.extensions["hostgate"].config.trusted_proxies
    try:
        peer = ipaddress.ip_address(normalise_ip(request.remote_addr or ""))
    except ValueError:
        return False
    if any(peer in net for net in proxies):
        proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
        return proto == "https"
    return False


def _seconds(max_age: int | float | timedelta) -> int:
    if isinstance(max_age, timedelta):
        return max(0, int(max_age.total_seconds()))
    return max(0, int(max_age))


def set_session_cookie(response: Any, token: str, max_age: int | float | timedelta) -> None:
    """Set the session cookie on a response (``max_age`` in seconds or a timedelta).

    ``signed_in_response`` sets it with the login's answer; set it alone (with
    ``signed.issued.max_age``) where a login answers otherwise, e.g. a redirect.
    """
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=_seconds(max_age),
        path="/",
        secure=request_is_secure(),
        httponly=True,
        samesite="Strict",
    )


def signed_in_response(signed: SignedIn, *, with_role: bool = True) -> Response:
    """The answer to a successful login, the same for every login method.

    ``{token, user: {id, username, role}}`` (``with_role=False`` leaves the role
    out, as the LDAP login answers) with the session cookie set.
    """
    user: dict[str, str] = {"id": signed.user_id, "username": signed.username}
    if with_role:
        user["role"] = signed.role
    response = jsonify({"token": signed.issued.token, "user": user})
    set_session_cookie(response, signed.issued.token, signed.issued.max_age)
    return response


def login_response(outcome: LoginOutcome, *, with_role: bool = True) -> Response:
    """The answer to a first factor (``logins.after_first_factor``), the same for every method.

    A session as ``signed_in_response``; a second step due as ``{mfaRequired: true,
    mfaToken, mfaMethod, mfaMethods}`` (no cookie): the browser app then asks for the step.
    """
    if outcome.signed_in is not None:
        return signed_in_response(outcome.signed_in, with_role=with_role)
    due = outcome.challenge
    if due is None:
        raise ValueError("a login outcome holds a session or a second step")
    return jsonify(
        {
            "mfaRequired": True,
            "mfaToken": due.token,
            "mfaMethod": due.method,
            "mfaMethods": list(due.methods),
        }
    )


def clear_session_cookie(response: Any) -> None:
    """Remove the session cookie (same path, secure and SameSite as when it was set)."""
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        secure=request_is_secure(),
        httponly=True,
        samesite="Strict",
    )


def set_trusted_device_cookie(response: Any, value: str, max_age: int | float | timedelta) -> None:
    """Remember a browser that may skip the TOTP step (see ``Logins.trust_device``)."""
    response.set_cookie(
        TRUSTED_DEVICE_COOKIE,
        value,
        max_age=_seconds(max_age),
        path="/",
        secure=request_is_secure(),
        httponly=True,
        samesite="Strict",
    )
