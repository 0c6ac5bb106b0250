"""The typed contract between the kernel and packs: what a pack may use of the kernel.

Every name here is a ``typing.Protocol`` (or a plain value type) and imports
nothing from the kernel's services, so services, the WebSocket layer, hook
specs and descriptors can all depend on it without a circle. Packs get these
through ``hostgate``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Account(Protocol):
    """A user account as a login method sees it (read-only)."""

    @property
    def id(self) -> str:
        """The account's id (the ``userId`` of the API)."""

    @property
    def username(self) -> str:
        """The login name."""

    @property
    def display_name(self) -> str:
        """The name shown in the UI (may be empty)."""

    @property
    def email(self) -> str:
        """The e-mail address (may be empty)."""

    @property
    def role_id(self) -> str:
        """The id of the account's role."""

    @property
    def locked_until(self) -> datetime | None:
        """When a lock after failed logins ends (None: not locked)."""
