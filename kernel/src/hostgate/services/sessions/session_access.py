"""Whether a user may still use what an open session reaches: its target and every hop.

Terminals and relays (``LiveRemoteSession``) and pooled file adapters
(``RemoteFilePool``) run this when access changes and periodically; the reasons are
the ones the change's own close gives, so the client reads the same whichever gets
there first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...adapters import ConnectionTarget
from ...closereasons import CloseReason
from ...db.models.connections import Connection
from ...db.models.identity import User
from ...errors import ApiError
from ...permissions import use_permission
from ...principals import ClientInfo
from .live_sessions import ACCESS_ENDED, CONNECTION_DELETED, NO_LONGER_SHARED, USER_DELETED

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..connections.connections import Connections
    from ..identity.identity import Caller, Identity

Problem = tuple[int, str, CloseReason]
"""Close code, reason, its ``CloseReason``."""


async def access_problem(
    database: Database,
    identity: Identity,
    connections: Connections,
    opened_by: Caller,
    target: ConnectionTarget,
) -> Problem | None:
    """Why ``opened_by`` may no longer use ``target`` and its jump hosts, or None.

    Read now: the user, the login session (or API token), the target's visibility,
    permission and approval, then each hop of ``target.via`` the same way.
    """
    login = opened_by.login_session_id
    # the user first: deleting a user deletes its login sessions in the same commit,
    # and a check between that commit and the deletion's own close must say why
    async with database.session() as db:
        user = await db.get(User, opened_by.user_id)
    if user is None:
        return 4001, USER_DELETED, CloseReason.USER_DELETED
    if login is not None and not await identity.check_login_session(login):
        return 4001, "Session has been revoked", CloseReason.REVOKED
    # a lockout after failed sign-ins is not checked: it stops new logins only
    # (docs/identity.md), or anyone mistyping a username's password could end its sessions
    caller = await identity.caller_for_user(
        user.id, login, ClientInfo(ip_address=opened_by.ip_address)
    )
    if caller is None:
        return 4001, USER_DELETED, CloseReason.USER_DELETED
    try:
        connection = await connections.visible(caller, target.connection_id)
    except ApiError:
        if await _gone(database, target.connection_id):
            return 4003, CONNECTION_DELETED, CloseReason.CONNECTION_DELETED
        return 4003, NO_LONGER_SHARED, CloseReason.NOT_SHARED
    permission = use_permission(connection.protocol)
    if not caller.can(permission):
        reason = f"Permission {permission} was withdrawn"
        return 4003, reason, CloseReason.PERMISSION_WITHDRAWN
    if await connections.approval_problem(caller, connection) is not None:
        return 4003, ACCESS_ENDED, CloseReason.ACCESS_ENDED
    for hop in target.via:
        problem = await _hop_problem(database, connections, caller, hop)
        if problem is not None:
            return problem
    return None


async def _gone(database: Database, connection_id: str) -> bool:
    async with database.session() as db:
        return await db.get(Connection, connection_id) is None


async def _hop_problem(
    database: Database, connections: Connections, caller: Caller, hop: ConnectionTarget
) -> Problem | None:
    """Why the user may no longer go through a jump host the session goes through."""
    name = repr(hop.name)
    unshared = (4003, f"the jump host {name} is no longer shared with you", CloseReason.NOT_SHARED)
    try:
        row, access = await connections.load(caller, hop.connection_id)
    except ApiError:
        if await _gone(database, hop.connection_id):
            return 4003, f"the jump host {name} was deleted", CloseReason.CONNECTION_DELETED
        return unshared
    if access.use:
        return None
    if not access.visible:
        return unshared
    permission = use_permission(row.protocol)
    if not caller.can(permission):
        reason = f"Permission {permission} was withdrawn (jump host {name})"
        return 4003, reason, CloseReason.PERMISSION_WITHDRAWN
    return 4003, f"your access to the jump host {name} ended", CloseReason.ACCESS_ENDED
