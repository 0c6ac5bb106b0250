"""``GET /auth/oidc/authorize`` and ``GET /auth/oidc/callback``."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from hostgate import (
    TRUSTED_DEVICE_COOKIE,
    Account,
    ApiError,
    ClientInfo,
    KernelAPI,
    LoginOutcome,
    MfaChallenge,
    NotAuthenticated,
    PermissionDenied,
    RemoteError,
    RemoteUnreachable,
    answers,
    current_kernel,
    login_response,
    public,
    request_client,
    request_is_secure,
    set_session_cookie,
)
from quart import Blueprint, Response, jsonify, redirect, request
from quart_schema import tag

from .pending import (
    PENDING_TTL_SECONDS,
    STEP_TTL_SECONDS,
    PendingLogin,
    PendingLogins,
    PendingStep,
)
from .provider import OidcClient, OidcError, OidcSettings
from .settings import CALLBACK_PATH

log = logging.getLogger("hostgate.oidc")
blueprint = Blueprint("oidc", __name__)
PROVIDER = "oidc"
DISABLED = "OIDC login is disabled"
BROWSER_COOKIE = "hostgate_oidc"
COOKIE_PATH = "/api/v1/auth/oidc"
PENDING_KEY = "oidc.pending"
STEPS_KEY = "oidc.second_steps"
STEP_COOKIE = "hostgate_oidc_step"
NO_STEP = "No single sign-on is waiting for its second step"
CACHE_KEY = "oidc.cache"
_COOKIE_VALUE = re.compile(r"^[A-Za-z0-9_-]{32,64}$")
_USERNAME_CHARS = re.compile(r"[^a-z0-9._-]")
MAX_USERNAME = 64
MAX_ERROR_TEXT = 300
# A provider's code and state are well under 1 KiB; bigger values are refused before
# the state is looked up or the provider called.
MAX_CALLBACK_VALUE = 4096
MAX_CALLBACK_QUERY = 8192
CALLBACK_PARAMS = ("code", "state", "error", "error_description")


def _callback_too_long() -> bool:
    """Whether the callback's query, or one of the parameters it reads, is over its limit."""
    if len(request.query_string) > MAX_CALLBACK_QUERY:
        return True
    args = request.args
    return any(len(v) > MAX_CALLBACK_VALUE for name in CALLBACK_PARAMS for v in args.getlist(name))


def _pending(kernel: KernelAPI) -> PendingLogins[PendingLogin]:
    store: PendingLogins[PendingLogin] = kernel.state.setdefault(PENDING_KEY, PendingLogins())
    return store


def _steps(kernel: KernelAPI) -> PendingLogins[PendingStep]:
    store: PendingLogins[PendingStep] = kernel.state.setdefault(
        STEPS_KEY, PendingLogins(ttl=STEP_TTL_SECONDS)
    )
    return store


def _client(kernel: KernelAPI) -> OidcClient:
    try:
        settings = OidcSettings.from_settings(kernel.settings.get)
    except ValueError as exc:
        raise OidcError(f"OIDC settings are invalid: {exc}", "oidc_misconfigured") from None
    return OidcClient(settings, kernel.state.setdefault(CACHE_KEY, {}), kernel.outbound)


def _browser_hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _redirect_uri(settings: OidcSettings) -> str:
    if settings.redirect_uri:
        return settings.redirect_uri
    scheme = "https" if request_is_secure() else "http"
    return f"{scheme}://{request.host}{CALLBACK_PATH}"


@blueprint.get("/auth/oidc/authorize")
@public
@tag(["auth"])
@answers(None, status=302, media_type="", errors=(403, 502, 504))
async def oidc_authorize() -> Response:
    """Start a login: ``{url}`` of the identity provider to send the browser to."""
    kernel = current_kernel()
    if not kernel.settings.get("auth.oidc_enabled"):
        raise PermissionDenied(DISABLED, code="oidc_disabled")
    try:
        oidc = _client(kernel)
        metadata = await oidc.metadata()
    except OidcError as exc:
        log.warning("OIDC authorize failed: %s", exc)
        error_class = RemoteUnreachable if exc.reason == "oidc_unreachable" else RemoteError
        raise error_class(f"Single sign-on is not available: {exc}", code=exc.reason) from None
    browser = request.cookies.get(BROWSER_COOKIE, "")
    if not _COOKIE_VALUE.match(browser):
        browser = secrets.token_urlsafe(32)
    state = secrets.token_urlsafe(32)
    login = oidc.login_request(
        metadata,
        redirect_uri=_redirect_uri(oidc.settings),
        state=state,
        nonce=secrets.token_urlsafe(32),
        code_verifier=secrets.token_urlsafe(64),
    )
    _pending(kernel).add(
        state,
        PendingLogin(
            nonce=login.nonce,
            code_verifier=login.code_verifier,
            redirect_uri=login.redirect_uri,
            browser_hash=_browser_hash(browser),
        ),
    )
    response = jsonify({"url": login.url})
    response.set_cookie(
        BROWSER_COOKIE,
        browser,
        max_age=int(PENDING_TTL_SECONDS),
        path=COOKIE_PATH,
        secure=request_is_secure(),
        httponly=True,
        # Lax: the provider sends the browser back with a top-level cross-site GET.
        samesite="Lax",
    )
    return response


class _Failed(Exception):
    """A callback failure that has been audited; the message goes to the browser."""


async def _fail(kernel: KernelAPI, client: ClientInfo, error: OidcError) -> _Failed:
    log.info("OIDC login failed (%s): %s", error.reason, error)
    await kernel.logins.record_failure(None, "", client, reason=error.reason, provider=PROVIDER)
    return _Failed(str(error))


def _username(claims: Mapping[str, Any], claim: str) -> str:
    for candidate in (claims.get(claim) if claim else None, claims.get("email"), claims.get("sub")):
        if isinstance(candidate, str) and candidate.strip():
            cleaned = _USERNAME_CHARS.sub("_", candidate.strip().lower())[:MAX_USERNAME]
            if cleaned.strip("_"):
                return cleaned
    return ""


def _role(claims: Mapping[str, Any], settings: OidcSettings) -> str | None:
    if not settings.role_claim or not settings.role_map:
        return None
    value = claims.get(settings.role_claim)
    held = {value} if isinstance(value, str) else {v for v in value or () if isinstance(v, str)}
    for claim_value, role in settings.role_map.items():
        if claim_value in held:
            return role
    return None


def _text(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name) if name else None
    return value.strip() if isinstance(value, str) else ""


async def _finish(kernel: KernelAPI, client: ClientInfo) -> Account:
    """Validate the callback, exchange the code, check the ID token, provision the user."""
    args = request.args
    if not kernel.settings.get("auth.oidc_enabled"):
        raise await _fail(kernel, client, OidcError(DISABLED, "oidc_disabled"))
    if _callback_too_long():
        raise await _fail(
            kernel,
            client,
            OidcError("The callback's parameters are too long", "callback_too_long"),
        )
    if args.get("error"):
        text = (args.get("error_description") or args.get("error") or "")[:MAX_ERROR_TEXT]
        raise await _fail(
            kernel, client, OidcError(f"The identity provider said: {text}", "oidc_provider_error")
        )
    state, code = args.get("state", ""), args.get("code", "")
    if not state or not code:
        raise await _fail(
            kernel, client, OidcError("The callback is missing code or state", "missing_params")
        )
    pending = _pending(kernel).take(state)
    if pending is None:
        raise await _fail(
            kernel, client, OidcError("Invalid or expired login state", "invalid_state")
        )
    browser = request.cookies.get(BROWSER_COOKIE, "")
    if not browser or not hmac.compare_digest(_browser_hash(browser), pending.browser_hash):
        raise await _fail(
            kernel,
            client,
            OidcError("This login was started in another browser", "state_browser_mismatch"),
        )
    try:
        oidc = _client(kernel)
        metadata = await oidc.metadata()
        tokens = await oidc.exchange_code(
            metadata, code, pending.code_verifier, pending.redirect_uri
        )
        access_token = str(tokens.get("access_token") or "")
        claims = await oidc.validate_id_token(
            metadata, str(tokens["id_token"]), pending.nonce, access_token
        )
        settings = oidc.settings
        if settings.username_claim and settings.username_claim not in claims:
            extra = await oidc.userinfo(metadata, access_token)
            if extra.get("sub") == claims["sub"]:
                claims = {**extra, **claims}
    except OidcError as exc:
        raise await _fail(kernel, client, exc) from None
    subject = str(claims["sub"])
    user: Account = await kernel.logins.provision_external(
        PROVIDER,
        subject,
        _username(claims, settings.username_claim) or f"oidc_{subject}"[:MAX_USERNAME],
        _text(claims, settings.display_name_claim),
        _text(claims, settings.email_claim),
        _role(claims, settings),
    )
    await kernel.logins.check_not_locked(user, client)
    return user


def _error_redirect(message: str) -> Response:
    response = redirect("/?sso_error=" + quote(message[:MAX_ERROR_TEXT], safe=""))
    return response  # type: ignore[return-value]


@blueprint.get("/auth/oidc/callback")
@public
@tag(["auth"])
@answers(None, status=302, media_type="")
async def oidc_callback() -> Response:
    """The provider's redirect: log in and go to ``/?sso=success``, or ``/?sso_error=...``.

    An account with a second step due (TOTP, or a passkey in a role that requires
    two-step verification) gets no session: ``/?sso=second_step`` and a cookie with
    which the browser app fetches the step (``POST /auth/oidc/second-step``).
    """
    kernel = current_kernel()
    client = request_client()
    try:
        await kernel.logins.limit_ip(client)
        user = await _finish(kernel, client)
        outcome = await kernel.logins.after_first_factor(
            user,
            client,
            method=PROVIDER,
            details={"provider": PROVIDER},
            device=request.cookies.get(TRUSTED_DEVICE_COOKIE),
        )
    except _Failed as exc:
        return _error_redirect(str(exc))
    except ApiError as exc:
        return _error_redirect(exc.message)
    except Exception:
        log.exception("OIDC callback failed unexpectedly")
        await kernel.logins.record_failure(
            None, "", client, reason="oidc_internal_error", provider=PROVIDER
        )
        return _error_redirect("Single sign-on failed; see the server log")
    if outcome.challenge is not None:
        # the mfaToken never goes into a URL: the app fetches it with this handle
        handle = secrets.token_urlsafe(32)
        _steps(kernel).add(handle, PendingStep(outcome.challenge))
        response: Response = redirect("/?sso=second_step")  # type: ignore[assignment]
        response.set_cookie(
            STEP_COOKIE,
            handle,
            max_age=int(STEP_TTL_SECONDS),
            path=COOKIE_PATH,
            secure=request_is_secure(),
            httponly=True,
            samesite="Strict",
        )
    else:
        assert outcome.signed_in is not None
        signed = outcome.signed_in
        response = redirect("/?sso=success")  # type: ignore[assignment]
        set_session_cookie(response, signed.issued.token, signed.issued.max_age)
    response.delete_cookie(
        BROWSER_COOKIE, path=COOKIE_PATH, secure=request_is_secure(), httponly=True, samesite="Lax"
    )
    return response


@blueprint.post("/auth/oidc/second-step")
@public
@tag(["auth"])
@answers(MfaChallenge, errors=(401,))
async def oidc_second_step() -> Response:
    """The second step a single sign-on left due: ``mfaRequired`` with its ``mfaToken``, once.

    Answer it as after a password (``/auth/login/mfa``, or a pack's step). 401
    ``invalid_mfa_token`` without a pending step (none, used, or over 5 minutes old).
    """
    handle = request.cookies.get(STEP_COOKIE, "")
    pending = _steps(current_kernel()).take(handle) if _COOKIE_VALUE.match(handle) else None
    if pending is None:
        raise NotAuthenticated(
            "No single sign-on is waiting for its second step", code="invalid_mfa_token"
        )
    response = login_response(LoginOutcome(challenge=pending.due))
    response.delete_cookie(
        STEP_COOKIE, path=COOKIE_PATH, secure=request_is_secure(), httponly=True, samesite="Strict"
    )
    return response
