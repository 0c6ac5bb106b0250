"""Per-action rights: file upload, download and delete, clipboard copy and paste.

A connection's ``actions`` object says which actions it allows (every key defaults
to true, so a connection saved before this existed allows everything), and a role
holds one permission per action. The effective right is both:
**the connection allows it AND the caller's role holds its permission.**

The kernel computes what a caller may not do when it builds a ``ConnectionTarget``
for them (``ConnectionTarget.denied``); the file routes, the SSH front door's SFTP
and scp, the VNC relay and the browser terminal refuse those actions and call
``ConnectionTarget.refuse`` to audit ``session.action_denied``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InvalidInput, PermissionDenied

ACTIONS: dict[str, str] = {
    "upload": "files.upload",
    "download": "files.download",
    "delete": "files.delete",
    "copy": "clipboard.copy",
    "paste": "clipboard.paste",
}
"""Each action and the role permission it needs."""

DESCRIPTIONS: dict[str, str] = {
    "files.upload": "Upload files (file browser, SFTP and scp through the front door)",
    "files.download": "Download files (file browser, SFTP and scp through the front door)",
    "files.delete": "Delete remote files and directories (file browser and SFTP)",
    "clipboard.copy": "Copy text from a remote desktop to their own clipboard (VNC)",
    "clipboard.paste": (
        "Paste their clipboard into remote desktops (VNC) and terminals (bracketed paste)"
    ),
}
"""What each action permission allows (``GET /roles/permissions``)."""

DENIED_EVENT = "session.action_denied"
"""The audit event of a refused action (details: ``action``, ``connectionId``, ``via``...)."""

WHAT = {
    "upload": "Uploading files",
    "download": "Downloading files",
    "delete": "Deleting files",
    "copy": "Copying from the remote clipboard",
    "paste": "Pasting",
}


def all_allowed() -> dict[str, bool]:
    """A connection's ``actions`` when nothing is switched off."""
    return dict.fromkeys(ACTIONS, True)


def connection_actions(stored: Mapping[str, Any] | None) -> dict[str, bool]:
    """Every action with its switch: the stored ones, true for the rest."""
    actions = all_allowed()
    for name, value in (stored or {}).items():
        if name in actions and isinstance(value, bool):
            actions[name] = value
    return actions


def parse_actions(value: Any) -> dict[str, bool]:
    """A payload's ``actions``: an object of the known actions to booleans (keys left out: true)."""
    if not isinstance(value, dict):
        raise InvalidInput("actions must be an object of booleans")
    unknown = sorted(set(value) - set(ACTIONS))
    if unknown:
        raise InvalidInput(
            f"actions: unknown action {unknown[0][:40]!r} (known: {', '.join(ACTIONS)})"
        )
    if not all(isinstance(v, bool) for v in value.values()):
        raise InvalidInput("actions must be an object of booleans")
    return connection_actions(value)


def denied_actions(stored: Mapping[str, Any] | None, permissions: Iterable[str]) -> frozenset[str]:
    """The actions a caller holding ``permissions`` may not do on a connection."""
    held = set(permissions)
    allowed = connection_actions(stored)
    return frozenset(
        name for name, permission in ACTIONS.items() if not allowed[name] or permission not in held
    )


def reason(action: str) -> str:
    """The one sentence every door says when it refuses ``action``."""
    return f"{WHAT.get(action, action)} is not allowed on this connection for your role"


class ActionDenied(PermissionDenied):
    """403 ``action_denied``: the connection or the caller's role does not allow the action."""

    code = "action_denied"

    def __init__(self, action: str) -> None:
        super().__init__(reason(action), code="action_denied", extra={"action": action})
        self.action = action
