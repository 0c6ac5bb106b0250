"""Route guards: every view declares one.

The guards: ``public``, ``authenticated``, ``interactive``, ``requires``, ``ticket``;
``onboarding`` also opens a route to a user with a step to take first.

The guard runs before body validation, so a request without a token gets 401
whatever its body. A meta-test walks ``app.url_map`` and fails on any view
without a declared guard.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

from quart import Request, current_app, g, has_app_context, has_request_context, request

from .errors import NotAuthenticated, PermissionDenied
from .principals import Caller, ClientInfo
from .security.clientinfo import client_ip, parse_user_agent
from .services.identity.onboarding import pending_error

if TYPE_CHECKING:
    from .contract import KernelAPI
    from .kernel import Kernel

GUARD_ATTR = "__hostgate_guard__"
ONBOARDING_ATTR = "__hostgate_onboarding__"
COOKIE_NAME = "hostgate_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
HEARTBEAT = "heartbeat"
"""The query argument (``1``/``true``) of a request that is no activity for the idle timeout."""

View = TypeVar("View", bound=Callable[..., Awaitable[Any]])


def request_context() -> tuple[Request, Any]:
    """The current request and ``g``, as objects rather than proxies."""
    return current_request(), request_globals()


def current_request() -> Request:
    """The current request itself, without the ``request`` proxy."""
    if not has_request_context():
        raise RuntimeError("Not within a request context")
    return request._get_current_object()  # type: ignore[attr-defined,no-any-return]


def request_globals() -> Any:
    """Quart's ``g`` of the current app context, without the proxy."""
    if not has_app_context():
        raise RuntimeError("Not within an app context")
    return g._get_current_object()  # type: ignore[attr-defined]


def current_kernel() -> KernelAPI:
    """The kernel of the app serving the current request, as the pack contract."""
    return app_kernel()


def app_kernel() -> Kernel:
    """The kernel with every service, for the kernel's own routes (packs use current_kernel)."""
    if not has_app_context():
        raise RuntimeError("Not within an app context")
    kernel: Kernel = current_app.extensions["hostgate"]
    return kernel


_kernel = app_kernel


def request_client() -> ClientInfo:
    """Client IP (trusted proxies honoured) and parsed User-Agent of the current request."""
    return _client_of(request._get_current_object())  # type: ignore[attr-defined]


_clients: dict[tuple[Any, str | None, str, str], ClientInfo] = {}
"""``ClientInfo`` by (trusted proxies, peer, User-Agent, X-Forwarded-For): parsed once,
shared (it is frozen)."""


def _client_of(current: Request) -> ClientInfo:
    proxies = _kernel().config.trusted_proxies
    headers = current.headers
    # getlist: werkzeug's get builds an exception when the header is absent
    agents = headers.getlist("User-Agent")
    agent = agents[0] if agents else ""
    forwarded = headers.getlist("X-Forwarded-For") if proxies else ()
    key = (proxies, current.remote_addr, agent, ",".join(forwarded))
    known = _clients.get(key)
    if known is not None:
        return known
    browser, system = parse_user_agent(agent)
    ip = client_ip(current.remote_addr, headers, proxies)
    made = ClientInfo(ip_address=ip, user_agent=agent[:512], browser=browser, os=system)
    if len(_clients) >= 1024:
        _clients.clear()
    _clients[key] = made
    return made


def _token(current: Request) -> tuple[str | None, bool]:
    header = current.headers.get("Authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip() or None, False
    cookie = current.cookies.get(COOKIE_NAME)
    return (cookie or None), cookie is not None


def _check_csrf() -> None:
    """Cookie-authenticated unsafe requests must come from our own origin."""
    if request.method in SAFE_METHODS:
        return
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if not origin:
        return
    if urlsplit(origin).netloc != request.host:
        raise PermissionDenied("CSRF check failed", code="csrf_failed")


async def authenticate_request() -> Caller:
    """Resolve the caller of the current request or raise NotAuthenticated."""
    current, context = request_context()
    cached = context.get("caller")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    token, from_cookie = _token(current)
    if not token:
        raise NotAuthenticated("Authentication required")
    if from_cookie:
        _check_csrf()
    # no query string, no heartbeat: the arguments are parsed only when there are some
    heartbeat = bool(current.query_string) and current.args.get(HEARTBEAT) in {"1", "true"}
    caller = await _kernel().identity.authenticate(token, _client_of(current), touch=not heartbeat)
    if caller.pending is not None and not _onboarding_view(current):
        raise pending_error(caller.pending)
    context.caller = caller
    return caller  # type: ignore[no-any-return]


def _onboarding_view(current: Request) -> bool:
    """True when the request's view is one a user with a pending step may call."""
    view = current_app.view_functions.get(current.endpoint or "")
    return bool(getattr(view, ONBOARDING_ATTR, False))


async def optional_caller() -> Caller | None:
    """The caller when a valid token was presented, else None (for public routes)."""
    try:
        return await authenticate_request()
    except (NotAuthenticated, PermissionDenied):
        return None


def current_caller() -> Caller:
    """The caller resolved by this request's guard."""
    caller = request_globals().get("caller")
    if caller is None:
        raise NotAuthenticated("Authentication required")
    return caller  # type: ignore[no-any-return]


def _mark(view: View, kind: str, permissions: tuple[str, ...] = ()) -> View:
    setattr(view, GUARD_ATTR, (kind, permissions))
    return view


def public(view: View) -> View:
    """No authentication needed."""

    @functools.wraps(view)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        return await view(*args, **kwargs)

    return _mark(cast(View, wrapper), "public")


def authenticated(view: View) -> View:
    """Any authenticated caller."""

    @functools.wraps(view)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        await authenticate_request()
        return await view(*args, **kwargs)

    return _mark(cast(View, wrapper), "authenticated")


def interactive(view: View) -> View:
    """An authenticated caller who signed in as a person: refused to personal API tokens.

    For what needs a login or a second factor: the password, MFA, passkeys, login
    sessions, making API tokens.
    """

    @functools.wraps(view)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        caller = await authenticate_request()
        if caller.api_token_id is not None:
            raise PermissionDenied(
                "An API token cannot do this; sign in instead", code="api_token_not_allowed"
            )
        return await view(*args, **kwargs)

    return _mark(cast(View, wrapper), "interactive")


def requires(*permissions: str) -> Callable[[View], View]:
    """An authenticated caller whose role holds every named permission."""

    def decorate(view: View) -> View:
        @functools.wraps(view)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            caller = await authenticate_request()
            missing = [p for p in permissions if not caller.can(p)]
            if missing:
                raise PermissionDenied(f"Insufficient permissions: requires {', '.join(missing)}")
            return await view(*args, **kwargs)

        return _mark(cast(View, wrapper), "permission", permissions)

    return decorate


def onboarding(view: View) -> View:
    """Also open to a user with a step to take first (a new password, two-step set-up).

    Every other route answers such a user 403 ``password_change_required`` or
    ``mfa_enrollment_required``. Put it under the route decorator, above the guard.
    """
    setattr(view, ONBOARDING_ATTR, True)
    return view


def ticket(view: View) -> View:
    """A WebSocket view authenticated by a single-use ticket (the view redeems it)."""
    return _mark(view, "ticket")


def guard_of(view: Callable[..., Any]) -> tuple[str, tuple[str, ...]] | None:
    """The guard a view declared, or None."""
    return getattr(view, GUARD_ATTR, None)
