"""The kernel as its services see it: a Protocol, so no service imports ``hostgate.kernel``.

``hostgate.kernel.Kernel`` assembles the services and hands itself to each as a
``KernelServices``; mypy checks there that it provides everything listed here.
(Services are to receive their collaborators directly, one by one: see
docs/architecture.md. Until then this names what they reach through the kernel.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..config import Config
    from ..db.engine import Database
    from ..db.readcache import ReadCache
    from ..descriptors import ChannelSpec, LoginMethod, ProtocolSpec
    from ..metrics import Metrics
    from ..plugins import PluginHost
    from ..security.ratelimit import RateLimiter
    from ..security.secretbox import SecretBox
    from ..security.tickets import TicketStore
    from .audit import AuditLog
    from .backup import Backups
    from .connections import Connections
    from .credentials import Credentials
    from .file_sessions import FileSessionLog
    from .files import RemoteFilePool
    from .identity import Identity
    from .live import LiveSessions
    from .logins import Logins
    from .netpolicy import NetworkPolicy
    from .notifications import Notifications
    from .recordings import Recordings
    from .session_history import SessionHistory
    from .settings import Settings
    from .terminal_sessions import TerminalSessions
    from .version import VersionChecker


class KernelServices(Protocol):
    """Every shared service and registry, as the kernel assembles them."""

    @property
    def config(self) -> Config:
        """The start-up configuration."""

    @property
    def plugins(self) -> PluginHost:
        """The plugin host (for calling hooks)."""

    @property
    def state(self) -> dict[str, Any]:
        """In-memory state of packs."""

    @property
    def secrets(self) -> SecretBox:
        """Encryption under the instance key."""

    @property
    def db(self) -> Database:
        """The database."""

    @property
    def readcache(self) -> ReadCache:
        """Reads kept until the next commit."""

    @property
    def protocols(self) -> dict[str, ProtocolSpec]:
        """Loaded protocols by name."""

    @property
    def login_methods(self) -> dict[str, LoginMethod]:
        """Loaded login methods by name."""

    @property
    def channels(self) -> dict[str, ChannelSpec]:
        """Loaded notification channels by type."""

    @property
    def permission_groups(self) -> dict[str, list[str]]:
        """Permission names by group, the kernel's and every pack's."""

    @property
    def permission_names(self) -> list[str]:
        """Every known permission name."""

    @property
    def settings(self) -> Settings:
        """Instance settings."""

    @property
    def audit(self) -> AuditLog:
        """The audit log."""

    @property
    def identity(self) -> Identity:
        """Session tokens and callers."""

    @property
    def logins(self) -> Logins:
        """Login steps shared by every method."""

    @property
    def credentials(self) -> Credentials:
        """Credentials login packs keep."""

    @property
    def tickets(self) -> TicketStore:
        """WebSocket tickets."""

    @property
    def limits(self) -> RateLimiter:
        """Rate limits."""

    @property
    def version(self) -> VersionChecker:
        """The release feed."""

    @property
    def netpolicy(self) -> NetworkPolicy:
        """Which targets the gateway may reach."""

    @property
    def connections(self) -> Connections:
        """Stored connections."""

    @property
    def backups(self) -> Backups:
        """Backup and restore."""

    @property
    def live(self) -> LiveSessions:
        """Open sessions."""

    @property
    def recordings(self) -> Recordings:
        """Session recordings."""

    @property
    def terminal_sessions(self) -> TerminalSessions:
        """Terminal and desktop sessions."""

    @property
    def files(self) -> RemoteFilePool:
        """Remote file sessions."""

    @property
    def file_sessions(self) -> FileSessionLog:
        """The file-session log."""

    @property
    def session_history(self) -> SessionHistory:
        """Terminal and desktop session history."""

    @property
    def notifications(self) -> Notifications:
        """Notification rules, channels and deliveries."""

    @property
    def metrics(self) -> Metrics:
        """The Prometheus registry."""

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` at start-up."""

    def on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` at shut-down."""

    def on_reload(self, hook: Callable[[], Awaitable[object]]) -> None:
        """Run ``hook`` whenever the database was replaced."""

    async def reload_state(self) -> None:
        """Make every in-memory copy of database state follow a replaced database."""

    def protocol(self, name: str) -> ProtocolSpec | None:
        """A loaded protocol by name."""
