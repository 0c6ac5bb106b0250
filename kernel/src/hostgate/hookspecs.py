"""THE plugin contract: every hook a hostgate pack may implement.

Contribution hooks take no arguments and *return descriptors* (a list, or a
mapping for permissions); the kernel owns every registry and refuses duplicates
at start-up, naming both plugins. Lifecycle hooks receive the kernel (``KernelAPI``).
Any implementation may return an awaitable instead of a value.

A pack implements hooks on a module or object and declares it under the
``hostgate`` entry-point group::

    [project.entry-points.hostgate]
    echo = "hostgate_echo.plugin"
"""

# ruff: noqa: D417
# mypy: disable-error-code="empty-body"
from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING

from .markers import hookspec

if TYPE_CHECKING:
    from quart import Blueprint

    from .contract import KernelAPI, SessionText
    from .descriptors import (
        AuditEvent,
        ChannelSpec,
        CommandSpec,
        LoginMethod,
        ProtocolSpec,
        SecondFactor,
        SettingSpec,
    )


@hookspec
def register_protocols() -> Sequence[ProtocolSpec]:
    """Connection protocols this pack provides.

    Runs once at start-up. The kernel validates connection payloads against each
    descriptor, mounts file routes for ``open_files``, and serves terminal and
    relay sockets for ``open_terminal`` / ``open_stream``.

    Example::

        @hookimpl
        def register_protocols():
            return [ProtocolSpec(name="echo", default_port=7, open_terminal=open_echo)]
    """


@hookspec
def register_login_methods() -> Sequence[LoginMethod]:
    """Login methods beyond local passwords.

    Runs once at start-up. Each method's blueprint is mounted under ``/api/v1``;
    its ``providers(kernel)`` adds keys to ``GET /auth/providers``. A successful
    login calls ``kernel.logins.complete_login(...)``, so every method ends in the
    same session token.

    Example::

        @hookimpl
        def register_login_methods():
            return [LoginMethod(name="ldap", blueprint=bp,
                                providers=lambda k: {"ldap": k.settings.get("auth.ldap_enabled")})]
    """


@hookspec
def register_second_factors() -> Sequence[SecondFactor]:
    """Second sign-in steps this pack offers after a password (beside the kernel's TOTP).

    Runs once at start-up; names are unique and ``totp`` is the kernel's. For each
    account the kernel asks ``holds(kernel, account)``: an account holding one has set
    up two-step verification as far as ``security.require_mfa`` goes, and its password
    sign-in answers ``mfaRequired`` with the held methods in ``mfaMethods``. The pack's
    route for the step calls ``kernel.logins.begin_second_step(mfa_token, client,
    method=name)`` (the user; single use, expiry, rate limit and lockout as for TOTP),
    on a wrong answer ``second_step_failed(...)``, on a right one
    ``finish_second_step(...)``, which issues the session.

    Example::

        @hookimpl
        def register_second_factors():
            return [SecondFactor(name="passkey", holds=has_passkey)]
    """


@hookspec
def register_channels() -> Sequence[ChannelSpec]:
    """Notification channels.

    Runs once at start-up; the kernel lists them in ``kernel.channels``. The
    notifications pack stores each channel's config (secret fields encrypted,
    masked in responses), runs the rules and calls
    ``await spec.send(kernel, config, message)`` from its delivery worker.

    Example::

        @hookimpl
        def register_channels():
            return [ChannelSpec(type="log", config_model=LogConfig, send=send_to_log)]
    """


@hookspec
def register_settings() -> Sequence[SettingSpec]:
    """Instance settings this pack adds (the spec's keys are the kernel's own).

    Runs once at start-up; keys must be unique across all packs.

    Example::

        @hookimpl
        def register_settings():
            return [SettingSpec(key="auth.ldap_user_filter", type=str, default="")]
    """


@hookspec
def register_permissions() -> Mapping[str, Sequence[str] | Mapping[str, str]]:
    """Extra permission names, by group (one of the kernel's six groups or a new one).

    Runs once at start-up; the names appear in ``GET /roles/permissions`` and are
    granted to the built-in ``admin`` role. A group given as a mapping of names to
    descriptions also says what each allows (the role editor shows it);
    ``connections.use_<protocol>`` is described from the protocol's title anyway.

    Example::

        @hookimpl
        def register_permissions():
            return {"reports": {"reports.view": "Read the weekly reports"}}
    """


@hookspec
def register_blueprints() -> Sequence[Blueprint]:
    """Extra Quart blueprints, mounted under ``/api/v1`` (the escape hatch).

    Every view must declare its guard with ``hostgate.guards``.

    Example::

        @hookimpl
        def register_blueprints():
            return [bp]
    """


@hookspec
def register_pages() -> Sequence[Blueprint]:
    """Quart blueprints mounted at the site root: pages a browser loads (the web app).

    ``/api/``, ``/ws/`` and ``/health`` stay the kernel's: a page route that
    matches one of them answers 404 in the API's error shape instead of running
    (a catch-all route should exclude them, or unknown API paths answer 405
    where the page allows fewer methods). Every view must declare
    its guard with ``hostgate.guards`` (pages are usually ``public``: the data
    they show comes from the API, which checks the caller).

    Example::

        @hookimpl
        def register_pages():
            return [pages]  # a Blueprint with @pages.get("/") ...
    """


@hookspec
def register_commands() -> Sequence[CommandSpec]:
    """Command-line commands: ``hostgate <name> <action>``.

    Read when the CLI builds its parser (keep the hook cheap: no imports of heavy
    libraries). A name the kernel or another pack already uses is skipped with a
    warning. Actions run with a started kernel that does not serve.

    Example::

        @hookimpl
        def register_commands():
            return [CommandSpec(name="echo", help="the echo pack",
                                actions={"hello": ("say hello", say_hello)})]
    """


@hookspec
def startup(kernel: KernelAPI) -> Awaitable[None] | None:
    """Called once the database is migrated and settings are loaded, before serving.

    Example::

        @hookimpl
        async def startup(kernel):
            kernel.state["echo.started"] = True
    """


@hookspec
def shutdown(kernel: KernelAPI) -> Awaitable[None] | None:
    """Called when the server stops, after open sockets are closed.

    Example::

        @hookimpl
        async def shutdown(kernel):
            await my_pool.close()
    """


@hookspec
def database_replaced(kernel: KernelAPI) -> Awaitable[None] | None:
    """Called after the database was replaced (a backup restored, here or on another node).

    Re-read whatever the pack keeps in memory from its tables; a failure propagates
    to the restore, as the kernel's own reloads do.

    Example::

        @hookimpl
        async def database_replaced(kernel):
            kernel.state["echo.rules"] = await load_rules(kernel.db)
    """


@hookspec
def grant_connection_access(
    user_id: str, connection_id: str, kernel: KernelAPI
) -> bool | Awaitable[bool]:
    """Whether this pack lets a user use an approval-required connection right now.

    A connection marked ``approvalRequired`` is used freely only by its owner and
    holders of ``connections.edit_any``; anyone else needs a pack to answer True
    here (the ``access`` pack does while an approved access request runs). Asked
    whenever a session opens (browser sockets, the SSH front door, file routes),
    when a connection's rights are shown, and when open sessions re-check their
    access (``kernel.live.access_changed()``). Without any implementation, or
    when an implementation raises (logged), the answer is no.

    Example::

        @hookimpl
        async def grant_connection_access(user_id, connection_id, kernel):
            return (user_id, connection_id) in kernel.state["oncall.grants"]
    """


@hookspec
def track_event(event: AuditEvent, kernel: KernelAPI) -> Awaitable[None] | None:
    """Called for every audit event after it is stored (may be async).

    Each implementation is called on its own; an exception is logged with the
    plugin's name and never reaches the request that caused the event.

    Example::

        @hookimpl
        def track_event(event, kernel):
            print(event.event_type, event.target)
    """


@hookspec
def event(event: AuditEvent, kernel: KernelAPI) -> Awaitable[None] | None:
    """Deprecated name of ``track_event``; still called, with a warning at registration.

    A pack implementing ``event`` gets a ``DeprecationWarning`` when it is
    registered and is called exactly like a ``track_event`` implementation.
    Rename the function to ``track_event``.

    Example::

        @hookimpl
        def event(event, kernel):  # DeprecationWarning: rename to track_event
            print(event.event_type)
    """


@hookspec
def wants_session_output(kernel: KernelAPI) -> bool | Awaitable[bool]:
    """Whether recorded terminal sessions' output text should reach ``session_text``.

    Asked when a recorded terminal session starts; one yes is enough. Collecting the
    text costs CPU per byte of output, so without a yes the kernel does not.

    Example::

        @hookimpl
        def wants_session_output(kernel):
            return bool(kernel.settings.get("recordings.index_output"))
    """


@hookspec
def session_text(texts: Sequence[SessionText], kernel: KernelAPI) -> Awaitable[None] | None:
    """The text of running sessions: their logged commands and, asked for, their output.

    Called about once a second (and when a session ends) after the command log was
    stored, with what came since: each command-log line (never one typed at a
    password prompt) and output as plain text in timed chunks (escapes removed,
    passwords typed in the session scrubbed). Each implementation is called on its
    own; an exception is logged and never reaches the session.

    Example::

        @hookimpl
        async def session_text(texts, kernel):
            for piece in texts:
                print(piece.session_id, piece.kind, piece.offset_ms, piece.text)
    """


@hookspec
def recordings_removed(session_ids: Sequence[str], kernel: KernelAPI) -> Awaitable[None] | None:
    """Called after the recordings of these sessions were deleted (retention, by hand).

    The sessions' rows stay (marked purged); whatever a pack keeps to jump into a
    recording can go. A session whose row is deleted takes the rows of tables that
    reference it with it (``ON DELETE CASCADE``). Each implementation is called on
    its own; an exception is logged.

    Example::

        @hookimpl
        async def recordings_removed(session_ids, kernel):
            await forget_bookmarks(kernel.db, session_ids)
    """
