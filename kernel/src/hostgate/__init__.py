"""hostgate: a self-hosted remote access gateway.

Everything a plugin pack may use is exported here; packs never import other
kernel modules.
"""

from __future__ import annotations

from .adapters import (
    FILE_OPERATIONS,
    ConnectionTarget,
    HostKeyCheck,
    RemoteEntry,
    RemoteFiles,
    Stream,
    Terminal,
    TerminalSize,
)
from .contract import Account
from .descriptors import (
    AuditEvent,
    ChannelSpec,
    ConnectionField,
    LoginMethod,
    NotificationMessage,
    ProtocolSpec,
    SettingSpec,
)
from .errors import (
    ApiError,
    Conflict,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    RemoteAuthFailed,
    RemoteError,
    RemoteNotFound,
    RemotePermissionDenied,
    RemoteTimeout,
    RemoteUnreachable,
    Unprocessable,
)
from .guards import (
    authenticated,
    current_caller,
    current_kernel,
    public,
    request_client,
    requires,
    ticket,
)
from .markers import hookimpl, hookspec
from .openapi import ErrorBody, MfaChallenge, Ok, Session, Success, answers
from .services.credentials import DuplicateCredential, StoredCredential
from .services.identity import Caller, ClientInfo, IssuedSession
from .services.logins import LOGIN_NAME_PATTERN, check_login_name
from .services.settings import SECRET_MASK
from .services.terminal_sessions import SessionClosed
from .sessioncookie import (
    SESSION_COOKIE,
    TRUSTED_DEVICE_COOKIE,
    clear_session_cookie,
    request_is_secure,
    set_session_cookie,
    set_trusted_device_cookie,
)
from .timefmt import iso, parse_iso, utcnow

__all__ = [
    "LOGIN_NAME_PATTERN",
    "ErrorBody",
    "MfaChallenge",
    "Ok",
    "Session",
    "Success",
    "answers",
    "FILE_OPERATIONS",
    "ApiError",
    "AuditEvent",
    "Account",
    "Caller",
    "ChannelSpec",
    "ClientInfo",
    "Conflict",
    "ConnectionField",
    "ConnectionTarget",
    "HostKeyCheck",
    "InvalidInput",
    "LoginMethod",
    "NotAuthenticated",
    "NotFound",
    "NotificationMessage",
    "IssuedSession",
    "DuplicateCredential",
    "PayloadTooLarge",
    "PermissionDenied",
    "ProtocolSpec",
    "RateLimited",
    "RemoteAuthFailed",
    "RemoteEntry",
    "RemoteError",
    "RemoteFiles",
    "RemoteNotFound",
    "RemotePermissionDenied",
    "RemoteTimeout",
    "RemoteUnreachable",
    "SECRET_MASK",
    "SESSION_COOKIE",
    "SessionClosed",
    "SettingSpec",
    "Stream",
    "Terminal",
    "TRUSTED_DEVICE_COOKIE",
    "TerminalSize",
    "Unprocessable",
    "StoredCredential",
    "authenticated",
    "check_login_name",
    "clear_session_cookie",
    "current_caller",
    "current_kernel",
    "hookimpl",
    "hookspec",
    "iso",
    "parse_iso",
    "public",
    "request_client",
    "request_is_secure",
    "requires",
    "set_session_cookie",
    "set_trusted_device_cookie",
    "ticket",
    "utcnow",
]
