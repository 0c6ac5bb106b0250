"""Permission names, groups and the built-in roles' defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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
    "sessions": ["sessions.view_any", "sessions.delete"],
    "users": ["users.manage"],
    "roles": ["roles.manage"],
    "audit": ["audit.view_any"],
    "settings": ["settings.manage", "settings.notifications", "settings.backup"],
    "system": ["system.metrics"],
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
