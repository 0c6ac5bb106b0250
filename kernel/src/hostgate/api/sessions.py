"""``/sessions``: session history, recordings and command log (SPEC 4.3).

Also ``/sessions/active`` to list and end live sessions (their live view is the
``/ws/sessions/<id>/watch`` socket, ws/watch.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel
from quart import Blueprint, Response, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..closereasons import CloseReason
from ..contract import SessionRecord
from ..db.models.invitations import SessionInvitation
from ..db.models.sessions import SessionCommand
from ..errors import NotFound, PermissionDenied
from ..guards import app_kernel, authenticated, current_caller, requires
from ..openapi import Ok, answers
from ..pagination import Pagination, SessionQuery, page_from
from ..requestbody import streamed_body
from ..services.sessions.invitations import DEFAULT_MINUTES, MAX_MINUTES
from ..services.sessions.live_sessions import LiveSession
from ..services.sessions.moderation import MODERATE
from ..services.sessions.recordings import stream_plaintext
from ..services.sessions.session_history import SessionFilter, SessionHistory
from ..services.sessions.terminal_watch import JOIN
from ..timefmt import iso
from .ranges import requested_range

blueprint = Blueprint("sessions", __name__)

CONTENT_TYPES = {
    "cast": "application/x-asciicast",
    "webm": "video/webm",
    "rfb": "application/x-hostgate-rfb",
}
MAX_EVENTS = 10_000
REASON_MAX = 200


class InvitationBody(BaseModel):
    """``POST /sessions/active/:id/invitations``: who may join the caller's terminal, and how."""

    model_config = ConfigDict(extra="forbid")

    username: str = Field(min_length=1, max_length=200)
    mode: Literal["observer", "participant"] = Field(
        description="observer: read only; participant: may type too"
    )
    minutes: int = Field(
        default=DEFAULT_MINUTES,
        ge=1,
        le=MAX_MINUTES,
        description="how long the invitation may be used (once) before it expires",
    )


class TerminateQuery(BaseModel):
    """``DELETE /sessions/active/:id``: why (shown to the user whose session ends)."""

    reason: str = Field(default="", max_length=REASON_MAX)


def _session_filter() -> SessionFilter:
    return _history().filter_from(request.args)


class RdpSessionBody(BaseModel):
    """``POST /sessions/rdp-session``."""

    model_config = ConfigDict(extra="forbid")
    connectionId: str = Field(min_length=1, max_length=64)  # noqa: N815 - the spec's name


class InputEvent(BaseModel):
    """One input event in the write form."""

    elapsed: float = Field(ge=0, allow_inf_nan=False)
    type: str = Field(min_length=1, max_length=32)


class InputEvents(RootModel[list[InputEvent]]):
    """``POST /sessions/:id/recording/events``: a JSON array."""

    root: list[InputEvent] = Field(max_length=MAX_EVENTS)


def _history() -> SessionHistory:
    return app_kernel().session_history


class SessionPage(Pagination):
    """One page of sessions, newest first, and how many match the filters."""

    sessions: list[SessionRecord]
    total: int


class SessionDetail(SessionRecord):
    """One session with what the list leaves out."""

    clientIp: str
    endReason: str
    recordingFormat: str | None
    recordingNote: str
    live: bool


class Purged(TypedDict):
    """What was deleted."""

    ok: bool
    deletedSessions: int
    deletedRecordings: int
    deletedFileSessions: int


class StorageBytes(TypedDict):
    """Bytes the recordings take on disk."""

    bytes: int


class ActiveSession(TypedDict):
    """An open session."""

    id: str
    kind: str
    protocol: str
    userId: str
    username: str
    connectionId: str | None
    connectionName: str
    clientIp: str
    startedAt: str
    node: str
    """The gateway node holding it (a new id at each start of a node)."""


class JoinableSession(TypedDict):
    """A running terminal the caller may join (``GET /sessions/joinable``)."""

    id: str
    protocol: str
    userId: str
    username: str
    connectionName: str
    startedAt: str
    modes: list[str]
    """How the caller may join it: ``observer`` and/or ``participant``."""
    invited: bool
    """Whether the owner invited the caller (else ``sessions.join`` allows it)."""


class JoinableSessions(TypedDict):
    """Running terminals the caller may join."""

    sessions: list[JoinableSession]


class Invitation(TypedDict):
    """An open invitation to join a running terminal (made to the caller, or by them)."""

    id: str
    sessionId: str
    ownerId: str
    ownerUsername: str
    """The session's owner, who invited."""
    userId: str
    username: str
    """The invited user."""
    mode: str
    """``observer`` or ``participant`` (may also join as an observer)."""
    connectionName: str
    protocol: str
    createdAt: str
    expiresAt: str
    """Unused by then, it can no longer be used."""


class Invitations(TypedDict):
    """Open invitations, oldest first."""

    invitations: list[Invitation]


class InvitationMade(TypedDict):
    """``POST /sessions/active/:id/invitations``: the new invitation."""

    ok: bool
    invitation: Invitation


class ActiveSessions(TypedDict):
    """Open sessions."""

    sessions: list[ActiveSession]


class RdpSession(TypedDict):
    """A session row for a browser RDP client."""

    sessionId: str
    shouldRecord: bool


class CommandRecord(TypedDict):
    """One logged command (``elapsed`` in milliseconds)."""

    id: str
    timestamp: str
    elapsed: int | float
    command: str
    output_preview: str
    typedBy: list[str]
    """Who typed the command when others had joined and could type; empty: the owner."""


class Commands(TypedDict):
    """The command log, in order."""

    commands: list[CommandRecord]


class InputEventRecord(TypedDict):
    """One recorded input event."""

    elapsed: int | float
    event_type: str


class InputEventList(TypedDict):
    """Recorded input events."""

    events: list[InputEventRecord]


class KeyFrameRecord(TypedDict):
    """One key frame of a gateway-recorded desktop (VNC) session."""

    elapsed: int | float
    """Milliseconds since the session started."""
    offset: int
    """Byte offset of its sync record in the recording (a Range read starts there)."""


class KeyFrameList(TypedDict):
    """The key frame index of a recording."""

    keyFrames: list[KeyFrameRecord]


def active_json(live: LiveSession, node: str) -> ActiveSession:
    """An open session as ``/sessions/active`` lists it (``node``: this node's id)."""
    return {
        "id": live.id,
        "kind": live.kind,
        "protocol": live.protocol,
        "userId": live.user_id,
        "username": live.info.get("username", ""),
        "connectionId": live.connection_id,
        "connectionName": live.info.get("connectionName", ""),
        "clientIp": live.info.get("clientIp", ""),
        "startedAt": iso(live.started_at),
        "node": str(live.info.get("node") or node),
    }


def command_json(row: SessionCommand) -> CommandRecord:
    """One command of a session's command log."""
    return {
        "id": row.id,
        "timestamp": iso(row.timestamp),
        "elapsed": row.elapsed,
        "command": row.command,
        "output_preview": row.output_preview or "",
        "typedBy": row.typed_by or [],
    }


@blueprint.get("/sessions")
@authenticated
@tag(["sessions"])
@answers(SessionPage, query=SessionQuery)
async def list_sessions() -> dict[str, Any]:
    """Terminal and RDP sessions, newest first; every user's with ``sessions.view_any``."""
    page = page_from(request.args)
    history = _history()
    rows, total = await history.page(current_caller(), page, _session_filter())
    return {
        "sessions": [history.record(row) for row in rows],
        **page.echo(),
        "total": total,
    }


@blueprint.delete("/sessions")
@requires("sessions.delete")
@tag(["sessions"])
@answers(Purged)
async def purge_sessions() -> dict[str, Any]:
    """Delete all session history and recordings (open sessions stay) and file sessions."""
    counts = await _history().purge(actor=current_caller())
    return {"ok": True, **counts}


@blueprint.get("/sessions/storage")
@requires("settings.manage")
@tag(["sessions"])
@answers(StorageBytes)
async def storage() -> StorageBytes:
    """Bytes the recordings take on disk."""
    return {"bytes": await app_kernel().recordings.storage_bytes()}


@blueprint.get("/sessions/active")
@authenticated
@tag(["sessions"])
@answers(ActiveSessions)
async def active_sessions() -> dict[str, Any]:
    """Open sessions: the caller's own, or everyone's with ``sessions.view_any``."""
    sessions = await _history().active(current_caller())
    here = app_kernel().live.node_id
    return {"sessions": [active_json(live, here) for live in sessions]}


@blueprint.delete("/sessions/active/<session_id>")
@authenticated
@tag(["sessions"])
@answers(Ok, query=TerminateQuery)
async def end_active_session(session_id: str) -> Ok:
    """End an open session: one's own, one joined as its moderator, or with ``sessions.delete``.

    ``reason`` (optional) is shown to the session's user after who ended it.
    """
    kernel = app_kernel()
    caller = current_caller()
    live = await kernel.live.find(session_id)
    moderator = kernel.live_view.moderates(caller, session_id)
    if live is None or (
        live.user_id != caller.user_id and not moderator and not caller.can("sessions.view_any")
    ):
        raise NotFound("Session not found")
    if live.user_id != caller.user_id and not moderator and not caller.can("sessions.delete"):
        raise PermissionDenied("Insufficient permissions: requires sessions.delete")
    why = " ".join(request.args.get("reason", "").split())
    reason = f"Terminated by {caller.username}" + (f": {why}" if why else "")
    if not await kernel.terminal_sessions.terminate(session_id, reason):
        await kernel.live.close_where(reason, reason_code=CloseReason.TERMINATED, id=session_id)
    await kernel.audit.record(
        "connection.session_terminated",
        actor=caller,
        target=live.info.get("connectionName", "") or live.connection_id,
        details={
            "sessionId": session_id,
            "protocol": live.protocol,
            "connectionId": live.connection_id,
            "ownerId": live.user_id,
            "reason": why,
        },
    )
    return {"ok": True}


@blueprint.get("/sessions/<session_id>")
@authenticated
@tag(["sessions"])
@answers(SessionDetail)
async def session_detail(session_id: str) -> SessionDetail:
    """One session: one's own, or anyone's with ``sessions.view_any``."""
    history = _history()
    row = await history.visible(current_caller(), session_id)
    return {
        **history.record(row),
        "clientIp": row.client_ip,
        "endReason": row.end_reason,
        "recordingFormat": row.recording_format,
        "recordingNote": row.recording_note,
        "live": app_kernel().live.held(row.id),
    }


@blueprint.post("/sessions/rdp-session")
@authenticated
@validate_request(RdpSessionBody)
@tag(["sessions"])
@answers(RdpSession, errors=(404,))
async def create_rdp_session(data: RdpSessionBody) -> RdpSession:
    """Start the history row of a browser RDP session; says whether to record it."""
    session_id, should_record = await _history().create_rdp(current_caller(), data.connectionId)
    return {"sessionId": session_id, "shouldRecord": should_record}


@blueprint.get("/sessions/<session_id>/recording")
@authenticated
@tag(["sessions"])
@answers(
    None,
    status=200,
    media_type=(
        "application/x-asciicast",
        "video/webm",
        "application/x-hostgate-rfb",
        "application/octet-stream",
    ),
    errors=(416,),
)
async def download_recording(session_id: str) -> Response:
    """The recording (asciicast: terminals, WebM: RDP, RFB records: VNC), with Range support.

    Every request that starts at byte 0 (a playback or download) is audited.
    """
    kernel = app_kernel()
    caller = current_caller()
    row = await _history().visible(caller, session_id)
    reader = await kernel.recordings.open_reader(row)
    try:
        size = reader.size
        chosen = requested_range(request.headers.get("Range"), size)
    except BaseException:
        reader.close()
        raise
    start, stop = chosen if chosen is not None else (0, size)
    if start == 0:
        await kernel.audit.record(
            "session.recording_viewed",
            actor=caller,
            target=row.connection_name,
            details={
                "sessionId": row.id,
                "protocol": row.protocol,
                "ownerId": row.user_id,
                "ownerUsername": row.username,
                "range": request.headers.get("Range", "")[:100],
            },
        )
    fmt = row.recording_format or "cast"
    headers = {
        "Content-Type": CONTENT_TYPES.get(fmt, "application/octet-stream"),
        "Content-Disposition": f'inline; filename="session-{row.id}.{fmt}"',
        "Accept-Ranges": "bytes",
        "Content-Length": str(max(0, stop - start)),
    }
    status = 200
    if chosen is not None:
        status = 206
        headers["Content-Range"] = chosen.content_range(size)
    response = Response(stream_plaintext(reader, start, stop - 1), status=status, headers=headers)
    response.timeout = None
    return response


@blueprint.get("/sessions/<session_id>/commands")
@authenticated
@tag(["sessions"])
@answers(Commands)
async def session_commands(session_id: str) -> dict[str, Any]:
    """The command log of a terminal session, in order."""
    history = _history()
    row = await history.visible(current_caller(), session_id)
    return {"commands": [command_json(c) for c in await history.commands(row.id)]}


@blueprint.get("/sessions/<session_id>/recording/events")
@authenticated
@tag(["sessions"])
@answers(InputEventList)
async def recording_events(session_id: str) -> dict[str, Any]:
    """Recorded input events of an RDP session (read form)."""
    history = _history()
    row = await history.visible(current_caller(), session_id)
    return {
        "events": [
            {"elapsed": e.elapsed, "event_type": e.event_type}
            for e in await history.input_events(row.id)
        ]
    }


@blueprint.get("/sessions/<session_id>/recording/keyframes")
@authenticated
@tag(["sessions"])
@answers(KeyFrameList)
async def recording_key_frames(session_id: str) -> dict[str, Any]:
    """The key frame index of a gateway-recorded VNC session (empty for other recordings)."""
    history = _history()
    row = await history.visible(current_caller(), session_id)
    return {
        "keyFrames": [
            {"elapsed": frame.elapsed, "offset": frame.offset}
            for frame in await history.key_frames(row.id)
        ]
    }


@blueprint.post("/sessions/<session_id>/recording/events")
@authenticated
@validate_request(InputEvents)
@tag(["sessions"])
@answers(Ok, errors=(409,))
async def add_recording_events(session_id: str, data: InputEvents) -> Ok:
    """Append input events (write form ``{elapsed, type}``) to one's own recorded session."""
    history = _history()
    row = await history.owned(current_caller(), session_id)
    await history.add_input_events(row, [(item.elapsed, item.type) for item in data.root])
    return {"ok": True}


@blueprint.post("/sessions/<session_id>/recording/chunk")
@authenticated
@tag(["sessions"])
@answers(Ok, errors=(409, 503), request_media_type="application/octet-stream")
async def upload_chunk(session_id: str) -> Ok:
    """Append a raw WebM chunk (streamed to disk, encrypted) to one's own RDP recording."""
    row = await _history().owned(current_caller(), session_id)
    await app_kernel().recordings.append_upload(row, streamed_body())
    return {"ok": True}


@blueprint.post("/sessions/<session_id>/recording/finalize")
@authenticated
@tag(["sessions"])
@answers(Ok, errors=(409, 503))
async def finalize_recording(session_id: str) -> Ok:
    """End one's own RDP session: its recording is complete."""
    row = await _history().owned(current_caller(), session_id)
    await app_kernel().recordings.finalize_upload(row)
    return {"ok": True}


def _invitation_json(row: SessionInvitation) -> Invitation:
    return {
        "id": row.id,
        "sessionId": row.session_id,
        "ownerId": row.owner_id,
        "ownerUsername": row.owner_username,
        "userId": row.user_id,
        "username": row.username,
        "mode": row.mode,
        "connectionName": row.connection_name,
        "protocol": row.protocol,
        "createdAt": iso(row.created_at),
        "expiresAt": iso(row.expires_at),
    }


def _modes(mode: str) -> list[str]:
    return ["observer", "participant"] if mode == "participant" else ["observer"]


def _joinable_json(session: Any, modes: list[str], invited: bool) -> JoinableSession:
    live = app_kernel().live.get(session.id)
    return {
        "id": session.id,
        "protocol": session.protocol,
        "userId": session.caller.user_id,
        "username": session.caller.username,
        "connectionName": session.target.name,
        "startedAt": iso(live.started_at) if live is not None else "",
        "modes": modes,
        "invited": invited,
    }


@blueprint.get("/sessions/joinable")
@authenticated
@tag(["sessions"])
@answers(JoinableSessions)
async def joinable_sessions() -> dict[str, Any]:
    """Running terminals the caller may join.

    Those the caller holds an open invitation to (on any node); with ``sessions.join``
    or ``sessions.moderate`` also every other user's on this node.
    """
    kernel = app_kernel()
    caller = current_caller()
    found: dict[str, JoinableSession] = {}
    running = {s.id: s for s in await kernel.live.everywhere()}
    for row in await kernel.live_view.invitations.listing(caller.user_id):
        live = running.get(row.session_id)
        if row.user_id != caller.user_id or live is None:
            continue
        found[row.session_id] = {
            "id": row.session_id,
            "protocol": row.protocol,
            "userId": row.owner_id,
            "username": row.owner_username,
            "connectionName": row.connection_name,
            "startedAt": iso(live.started_at),
            "modes": _modes(row.mode),
            "invited": True,
        }
    if caller.can(JOIN) or caller.can(MODERATE):
        for session in kernel.live_view.joinable(caller):
            found.setdefault(
                session.id, _joinable_json(session, ["observer", "participant"], False)
            )
    return {"sessions": list(found.values())}


@blueprint.post("/sessions/active/<session_id>/invitations")
@authenticated
@tag(["sessions"])
@validate_request(InvitationBody)
@answers(InvitationMade)
async def invite_to_session(session_id: str, data: InvitationBody) -> InvitationMade:
    """Invite a user to join one's own running terminal as an observer or a participant.

    The invitation is kept by the gateway (every node sees it) and used once: the
    invited user joins within ``minutes``, until the session ends or the owner revokes
    it or removes the user. Their ``/ws/events`` sockets get ``session-invitations``.
    404 for a session that is not the caller's (or not running on this node) and an
    unknown user.
    """
    kernel = app_kernel()
    caller = current_caller()
    user = await kernel.accounts.user_by_name(data.username)
    if user is None:
        raise NotFound("User not found")
    row = await kernel.live_view.invite(
        caller, session_id, user.id, user.username, data.mode, data.minutes
    )
    return {"ok": True, "invitation": _invitation_json(row)}


@blueprint.get("/sessions/invitations")
@authenticated
@tag(["sessions"])
@answers(Invitations)
async def list_invitations() -> Invitations:
    """The open invitations made to the caller or by them, to terminals still running.

    Open: not used, revoked or expired. The app fetches this when ``/ws/events`` says
    ``session-invitations`` and offers to join.
    """
    kernel = app_kernel()
    caller = current_caller()
    running = {s.id for s in await kernel.live.everywhere()}
    rows = await kernel.live_view.invitations.listing(caller.user_id)
    return {"invitations": [_invitation_json(r) for r in rows if r.session_id in running]}


@blueprint.delete("/sessions/invitations/<invitation_id>")
@authenticated
@tag(["sessions"])
@answers(Ok)
async def revoke_invitation(invitation_id: str) -> Ok:
    """Revoke one's own invitation: it can no longer be used, and a join it allowed ends.

    404 for another user's invitation and one already revoked; audited
    ``session.invitation_revoked``.
    """
    await app_kernel().live_view.revoke_invitation(current_caller(), invitation_id)
    return {"ok": True}


@blueprint.delete("/sessions/active/<session_id>/participants/<user_id>")
@authenticated
@tag(["sessions"])
@answers(Ok)
async def remove_participant(session_id: str, user_id: str) -> Ok:
    """Remove a user who joined one's own running terminal (and their invitation).

    Their sockets close 4003 ``terminated``; 404 when the session is not the caller's or
    the user neither joined nor was invited.
    """
    kernel = app_kernel()
    await kernel.live_view.remove(current_caller(), session_id, user_id)
    return {"ok": True}
