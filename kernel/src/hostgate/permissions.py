"""Permission names, groups and the built-in roles' defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .rights import ACTIONS
from .rights import DESCRIPTIONS as ACTION_DESCRIPTIONS

KERNEL_PERMISSIONS: dict[str, list[str]] = {
    "connections": [
        "connections.create",
        "connections.edit_own",
        "connections.edit_any",
        "connections.delete_own",
        "connections.delete_any",
        "connections.share",
        "connections.import_export",
    ],
    "sessions": [
        "sessions.view_any",
        "sessions.delete",
        "sessions.join",
        "sessions.moderate",
        "sessions.command_rules",
    ],
    "users": ["users.manage"],
    "roles": ["roles.manage"],
    "audit": ["audit.view_any"],
    "settings": ["settings.manage", "settings.notifications", "settings.backup"],
    "system": ["system.metrics"],
    "access": ["access.approve"],
    "files": ["files.upload", "files.download", "files.delete"],
    "clipboard": ["clipboard.copy", "clipboard.paste"],
}

# What each kernel permission allows, as GET /roles/permissions describes it.
KERNEL_DESCRIPTIONS: dict[str, str] = {
    "connections.create": "Create connections of their own",
    "connections.edit_own": "Edit the connections they own",
    "connections.edit_any": "Edit every user's connections",
    "connections.delete_own": "Delete the connections they own",
    "connections.delete_any": "Delete every user's connections",
    "connections.share": "Share their connections with other users and roles",
    "connections.import_export": "Export their connections to a file and import them",
    "sessions.view_any": (
        "See every user's sessions, recordings and file transfers, and watch live ones"
    ),
    "sessions.delete": "Delete sessions and their recordings",
    "sessions.join": (
        "Join other users' running terminals as an observer (read only) or a participant (may type)"
    ),
    "sessions.moderate": (
        "Moderate sessions: open a session that needs a moderator by joining it, and end it"
    ),
    "sessions.command_rules": (
        "Write the command rules that block, hold for approval or flag commands typed in terminals"
    ),
    "users.manage": "Create, edit, unlock and delete users and reset their passwords",
    "roles.manage": "Create, edit and delete roles and choose their permissions",
    "audit.view_any": "Read every user's audit log entries (without it: only their own)",
    "settings.manage": "Change the instance's settings (sign-in, security, recordings, branding)",
    "settings.notifications": "Configure notification channels, rules and the delivery log",
    "settings.backup": "Export encrypted backups and restore them (replacing all data)",
    "system.metrics": "Scrape the Prometheus metrics (GET /metrics)",
    "access.approve": (
        "Approve, deny and revoke other users' requests for access to connections that need"
        " approval"
    ),
    **ACTION_DESCRIPTIONS,
}

ADMIN_ROLE = "admin"
USER_ROLE = "user"

USER_DEFAULTS = frozenset(
    {
        "connections.create",
        "connections.edit_own",
        "connections.delete_own",
        "connections.share",
        "connections.import_export",
        *ACTIONS.values(),
    }
)


def use_permission(protocol: str) -> str:
    """The permission that lets a role use connections of a protocol."""
    return f"connections.use_{protocol}"


def merge_groups(contributions: Iterable[Mapping[str, Iterable[str]]]) -> dict[str, list[str]]:
    """Merge contributed groups into the kernel's, keeping order and dropping repeats."""
    groups = {name: list(names) for name, names in KERNEL_PERMISSIONS.items()}
    for contribution in contributions:
        for group, names in contribution.items():
            target = groups.setdefault(group, [])
            for name in names:
                if name not in target:
                    target.append(name)
    return groups


def merge_descriptions(
    contributions: Iterable[Mapping[str, Iterable[str]]],
    protocol_titles: Mapping[str, str],
) -> dict[str, str]:
    """What each permission allows.

    The kernel's words, a pack's own (a group given as a ``{name: description}``
    mapping), or for ``connections.use_<protocol>`` the protocol's title. Names nobody
    described are left out.
    """
    described = dict(KERNEL_DESCRIPTIONS)
    for protocol, title in protocol_titles.items():
        described[use_permission(protocol)] = f"Open {title or protocol} connections"
    for contribution in contributions:
        for names in contribution.values():
            if isinstance(names, Mapping):
                for name, text in names.items():
                    if isinstance(text, str) and text.strip():
                        described[name] = text.strip()
    return described


def all_names(groups: Mapping[str, Iterable[str]]) -> list[str]:
    """Every permission name in group order."""
    return [name for names in groups.values() for name in names]


def builtin_defaults(groups: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, list[str]]]:
    """``{role name: (description, default permissions)}`` for the built-in roles."""
    names = all_names(groups)
    user = [n for n in names if n in USER_DEFAULTS or n.startswith("connections.use_")]
    return {
        ADMIN_ROLE: ("Full system access: every permission", names),
        USER_ROLE: ("Standard user: own connections and sessions", user),
    }
