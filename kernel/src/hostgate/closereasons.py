"""Why a session socket closed, as a stable code: the ``reason`` of its ``error`` frame.

The frame's ``message`` is for people and may be reworded; clients match on the
code (docs/terminals.md, "Reason codes"). Whoever ends or refuses a session names
the code: ``SessionClosed(code, message, reason_code)``, a session's ``end(code,
message, reason_code)``, ``kernel.live.close_where(message, reason_code=...)``.
Refusals raised as ``ApiError`` get theirs from the error's own code
(``ERROR_REASONS``), which the raiser sets.
"""

from __future__ import annotations

from enum import StrEnum


class CloseReason(StrEnum):
    """Why a session socket closed: the ``reason`` of its ``error`` frame (docs/terminals.md).

    A value never changes once released: codes are added, never renamed.
    """

    # the ticket and the login session (mostly 4001)
    TICKET_INVALID = "ticket_invalid"
    """Missing, used or expired ticket."""
    BAD_REQUEST = "bad_request"
    """Missing ``connectionId``, a ``sessionId`` too long."""
    REVOKED = "revoked"
    """The login session was revoked or ended (sign-out, password change, token revoked)."""
    USER_DELETED = "user_deleted"
    # access to the connection
    NOT_FOUND = "not_found"
    """The connection does not exist, is not visible, or is not of this protocol (4002)."""
    FORBIDDEN = "forbidden"
    """The caller may not open it (a permission, an approval)."""
    CONNECTION_DELETED = "connection_deleted"
    NOT_SHARED = "not_shared"
    """The connection is no longer shared with the user."""
    ACCESS_ENDED = "access_ended"
    """An approved, time-limited access expired or was withdrawn."""
    PERMISSION_WITHDRAWN = "permission_withdrawn"
    # the gateway
    SESSION_LIMIT = "session_limit"
    """Too many concurrent sessions (4008)."""
    IDLE_TIMEOUT = "idle_timeout"
    OPENED_ELSEWHERE = "opened_elsewhere"
    """The same ``sessionId`` was attached from another socket."""
    TERMINATED = "terminated"
    """Ended on request (``DELETE /sessions/active/:id``): an administrator, the owner or a
    moderator; a joiner removed by the owner."""
    NO_MODERATOR = "no_moderator"
    """A session that needs a moderator had none for the grace period (4003)."""
    SHUTTING_DOWN = "shutting_down"
    RESTORING = "restoring"
    """The instance is being restored from a backup."""
    UNAVAILABLE = "unavailable"
    """Several nodes: the shared state cannot be reached to check the ticket (1013), or
    this node lost it long enough to be declared dead."""
    AUTH_TIMEOUT = "auth_timeout"
    """``promptOnConnect``: no ``auth`` frame in time, or another frame instead (4007)."""
    # the remote side
    AUTH_FAILED = "auth_failed"
    HOST_KEY_CHANGED = "host_key_changed"
    HOST_KEY_UNCONFIRMED = "host_key_unconfirmed"
    """A first host key waits to be accepted (``security.host_key_first_use`` = confirm)."""
    NETWORK_POLICY = "network_policy"
    UNREACHABLE = "unreachable"
    """Refused, timed out or unresolvable (or concealed as such)."""
    REMOTE_ERROR = "remote_error"
    """The remote side failed otherwise while opening."""
    CONNECTION_LOST = "connection_lost"
    SHELL_CLOSED = "shell_closed"
    """The shell ended (``exit``) (1000)."""
    CONNECTION_CLOSED = "connection_closed"
    """The server hung up (telnet, relays) (1000)."""
    RECORDING_MISSING = "recording_missing"
    """A browser-recorded session (RDP) whose recording upload stopped or never began
    while recordings are on (4003; ``recordings.upload_grace_seconds``)."""
    SESSION_ENDED = "session_ended"
    """A live view: the watched session ended (1000)."""


ERROR_REASONS: dict[str, CloseReason] = {
    "remote_auth_failed": CloseReason.AUTH_FAILED,
    "host_key_changed": CloseReason.HOST_KEY_CHANGED,
    "host_key_unconfirmed": CloseReason.HOST_KEY_UNCONFIRMED,
    "target_denied": CloseReason.NETWORK_POLICY,
    "target_unreachable": CloseReason.UNREACHABLE,
    "remote_unreachable": CloseReason.UNREACHABLE,
    "remote_timeout": CloseReason.UNREACHABLE,
    "not_authenticated": CloseReason.REVOKED,
}
"""An ``ApiError``'s ``code`` (set where it is raised) as a reason code; by status otherwise."""


def reason_for_error(code: str, status: int) -> CloseReason:
    """The reason code of an ``ApiError`` (its ``code`` and ``status``) that refused a session."""
    if code in ERROR_REASONS:
        return ERROR_REASONS[code]
    return _STATUS_REASONS.get(status, CloseReason.REMOTE_ERROR)


_STATUS_REASONS = {
    400: CloseReason.BAD_REQUEST,
    401: CloseReason.REVOKED,
    403: CloseReason.FORBIDDEN,
    404: CloseReason.NOT_FOUND,
}
