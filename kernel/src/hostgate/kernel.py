"""The Kernel: every shared service, handed to plugins through their hooks."""

from __future__ import annotations

import functools
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sqlmodel import select

from . import datadir
from . import permissions as perms
from .closereasons import CloseReason
from .cluster import Cluster, ClusterSetupError
from .cluster.shared import marker_refusal, read_marker, write_marker
from .cluster.values import shared_values
from .config import Config
from .contract import SessionText
from .db.engine import Database
from .db.models.identity import Role
from .db.models.settings import SystemValue
from .db.readcache import ReadCache
from .descriptors import AuditEvent, ChannelSpec, LoginMethod, ProtocolSpec, SettingSpec
from .errors import ApiError
from .metrics import Metrics
from .plugins import PluginHost
from .security.ratelimit import RateLimiter, rate_limiter
from .security.secretbox import SecretBox, SecretKeyError, load_or_create_key
from .security.tickets import TicketStore, ticket_store
from .services.audit.audit import AuditLog
from .services.audit.audit_query import AuditQuery
from .services.backup import Backups
from .services.command_rules.service import CommandRules
from .services.connections.connections import Connections
from .services.connections.health_checks import HealthChecks
from .services.connections.transfer_port import TransferPort
from .services.events import UserEvents
from .services.front_door import FrontDoor, SealedValues
from .services.identity.accounts import Accounts
from .services.identity.api_tokens import ApiTokenCheck, ApiTokens
from .services.identity.credentials import Credentials
from .services.identity.directory import Directory
from .services.identity.identity import Identity
from .services.identity.invites import Invites
from .services.identity.logins import Logins
from .services.identity.profile import Profiles
from .services.identity.roles import Roles
from .services.identity.second_factors import SecondFactors
from .services.identity.signin_guard import SignInGuard
from .services.keyrotation import KeyRotation
from .services.netpolicy import NetworkPolicy
from .services.outbound import DeprecatedNotifications, Outbound
from .services.sessions.file_sessions import FileSessionLog
from .services.sessions.file_transfers import FileTransfers
from .services.sessions.invitations import SessionInvitations
from .services.sessions.live_sessions import LiveSessions
from .services.sessions.recording_store import StoreUnavailable, store_for
from .services.sessions.recordings import Recordings
from .services.sessions.remote_file_pool import RemoteFilePool
from .services.sessions.remote_session import LiveRemoteSession
from .services.sessions.session_access import access_problem
from .services.sessions.session_history import SessionHistory
from .services.sessions.session_service import TerminalSessions
from .services.sessions.terminal_watch import LiveView
from .services.sessions.terminal_watch_relay import WatchRelay
from .services.settings import Settings
from .services.version import VersionChecker
from .timefmt import utcnow

log = logging.getLogger("hostgate.kernel")

KEY_CHECK_NAME = "key_check"
KEY_CHECK_TEXT = "hostgate-key-check"
KNOWN_PERMISSIONS_NAME = "known_permissions"
DATABASE_ID_NAME = "database_id"
RECORDINGS_TOKEN_NAME = "recordings_marker"
"""Several nodes: the token the first node wrote into the shared recordings directory."""


RELOADED_TOPIC = "state.reloaded"
"""Bus topic: a node restored a backup; every other node reloads its state (``{}``)."""


class StartupError(RuntimeError):
    """The instance cannot start; the message tells the admin what to fix."""


class Kernel:
    """Shared services. Plugins receive this object; they never import kernel internals."""

    def __init__(self, config: Config, plugins: PluginHost) -> None:
        self.config = config
        self.plugins = plugins
        self.state: dict[str, Any] = {}
        self.serving = True
        """False in a command-line process (``with_kernel``): packs start no listener."""
        self._start_hooks: list[Callable[[], Awaitable[None]]] = []
        self._stop_hooks: list[Callable[[], Awaitable[None]]] = []
        self._reload_hooks: list[Callable[[], Awaitable[object]]] = []
        loaded = load_or_create_key(config.encryption_key, config.data_dir)
        self.secrets = SecretBox(loaded.key, insecure=loaded.from_file)
        self.db = Database(
            config.resolved_database_url, busy_timeout_ms=config.database_busy_timeout_ms
        )
        self.readcache = ReadCache(self.db)
        # what several nodes share (HOSTGATE_REDIS_URL); nothing without it
        self.cluster = Cluster(config)
        self._live_joined = False
        self.cluster.bus.subscribe(RELOADED_TOPIC, self._reloaded_elsewhere)
        self.protocols: dict[str, ProtocolSpec] = {
            name: item
            for name, (_, item) in plugins.collect(
                "register_protocols", key=lambda p: p.name
            ).items()
        }
        self.login_methods: dict[str, LoginMethod] = {
            name: item
            for name, (_, item) in plugins.collect(
                "register_login_methods", key=lambda m: m.name
            ).items()
        }
        self.channels: dict[str, ChannelSpec] = {
            name: item
            for name, (_, item) in plugins.collect(
                "register_channels", key=lambda c: c.type
            ).items()
        }
        registered = plugins.collect("register_settings", key=lambda s: s.key)
        setting_specs: dict[str, SettingSpec] = {key: item for key, (_, item) in registered.items()}
        # which pack registered each setting (the kernel's own defaults are "kernel")
        self.setting_owners = {
            key: "kernel" if owner.startswith("hostgate.") else owner
            for key, (owner, _) in registered.items()
        }
        contributed = [result for _, result in plugins.contributions("register_permissions")]
        self.permission_groups = perms.merge_groups(contributed)
        known = set(perms.all_names(self.permission_groups))
        self.permission_descriptions = {
            name: text
            for name, text in perms.merge_descriptions(
                contributed, {name: spec.title for name, spec in self.protocols.items()}
            ).items()
            if name in known
        }
        # with several nodes the audit chain's head is read anew under a database lock
        self.audit = AuditLog(
            db=self.db,
            secrets=self.secrets,
            announce=self._announce,
            shared=bool(config.redis_url),
        )
        self.settings = Settings(
            setting_specs,
            db=self.db,
            secrets=self.secrets,
            audit=self.audit,
            configured=config.setting_defaults,
            bus=self.cluster.bus,
        )
        # a change that leaves no administrator a way to sign in is refused
        self.signin_guard = SignInGuard(
            db=self.db, settings=self.settings, login_methods=self.login_methods, kernel=self
        )
        self.settings.add_guard(self.signin_guard.check)
        # second sign-in steps the packs offer beside TOTP (a passkey)
        self.second_factors = SecondFactors(
            {
                name: item
                for name, (_, item) in plugins.collect(
                    "register_second_factors", key=lambda f: f.name
                ).items()
            },
            settings=self.settings,
            kernel=self,
        )
        self.live = LiveSessions(self.cluster.bus, self.cluster.registry)
        self.identity = Identity(
            db=self.db,
            secrets=self.secrets,
            settings=self.settings,
            readcache=self.readcache,
            live=self.live,
            api_tokens=ApiTokenCheck(
                db=self.db,
                readcache=self.readcache,
                settings=self.settings,
                factors=self.second_factors,
            ),
            factors=self.second_factors,
        )
        self.tickets: TicketStore = ticket_store(self.cluster.redis)
        # one-time links of downloads a POST prepared (a backup export in the browser)
        self.download_tickets: TicketStore = ticket_store(self.cluster.redis, namespace="download")
        self.limits: RateLimiter = rate_limiter(self.cluster.redis)
        self.logins = Logins(
            db=self.db,
            secrets=self.secrets,
            settings=self.settings,
            audit=self.audit,
            identity=self.identity,
            limits=self.limits,
            factors=self.second_factors,
        )
        self.credentials = Credentials(self.db)
        self.roles = Roles(
            audit=self.audit,
            db=self.db,
            permission_groups=self.permission_groups,
            settings=self.settings,
        )
        self.settings.add_guard(self.roles.check_mfa_roles)
        self.netpolicy = NetworkPolicy(settings=self.settings, config=config, audit=self.audit)
        self.accounts = Accounts(
            audit=self.audit,
            db=self.db,
            identity=self.identity,
            live=self.live,
            logins=self.logins,
            signin_guard=self.signin_guard,
        )
        self.invites = Invites(
            db=self.db, audit=self.audit, accounts=self.accounts, logins=self.logins
        )
        self.profiles = Profiles(
            audit=self.audit,
            db=self.db,
            identity=self.identity,
            limits=self.limits,
            logins=self.logins,
            readcache=self.readcache,
            secrets=self.secrets,
            settings=self.settings,
        )
        self.api_tokens = ApiTokens(audit=self.audit, db=self.db, identity=self.identity)
        self.audit_query = AuditQuery(db=self.db)
        self.key_rotation = KeyRotation(config=config, db=self.db, secrets=self.secrets)
        self.events = UserEvents(self.cluster.bus)
        self.connections = Connections(
            db=self.db,
            secrets=self.secrets,
            audit=self.audit,
            live=self.live,
            netpolicy=self.netpolicy,
            protocols=self.protocols,
            access_granted=self._access_granted,
            settings=self.settings,
        )
        self.health_checks = HealthChecks(
            connections=self.connections, limits=self.limits, netpolicy=self.netpolicy
        )
        recording_store = store_for(config)
        self.backups = Backups(
            data_dir=config.data_dir,
            recordings_dir=config.resolved_recordings_dir,
            recording_store=recording_store,
            db=self.db,
            secrets=self.secrets,
            live=self.live,
            reload_state=self._reload_everywhere,
            lifecycle=self,
        )
        self.metrics = Metrics(live=self.live, relays=self._relays)
        self.recordings = Recordings(
            store=recording_store,
            directory=config.resolved_recordings_dir,
            db=self.db,
            secrets=self.secrets,
            settings=self.settings,
            audit=self.audit,
            live=self.live,
            metrics=self.metrics,
            lifecycle=self,
            lease=self.cluster.lease,
        )
        self.recordings.removed = self._recordings_removed
        self.terminal_sessions = TerminalSessions(
            db=self.db,
            settings=self.settings,
            audit=self.audit,
            identity=self.identity,
            connections=self.connections,
            live=self.live,
            recordings=self.recordings,
            text_sink=self._session_text,
            wants_output=self._wants_session_output,
            metrics=self.metrics,
            api=self,
            lifecycle=self,
        )
        self.command_rules = CommandRules(
            db=self.db,
            readcache=self.readcache,
            audit=self.audit,
            events=self.events,
            settings=self.settings,
            bus=self.cluster.bus,
        )
        self.terminal_sessions.command_rules = self.command_rules
        self.on_stop(self.command_rules.stop)
        # access changes re-check open sessions on every node; a dead node's are ended
        self.live.on_access_changed(self.terminal_sessions.access_changed)
        self.live.on_reaped(self.recordings.end_abandoned)
        self.sealed_values = SealedValues(self.db, self.secrets)
        self.connection_transfer = TransferPort(self.connections, self.accounts, self.identity)
        self.shared = shared_values(self.cluster.redis)
        self.live_view = LiveView(
            audit=self.audit,
            terminal_sessions=self.terminal_sessions,
            live=self.live,
            identity=self.identity,
            lifecycle=self,
            invitations=SessionInvitations(self.db, self.events),
        )
        if self.cluster.redis is not None:  # watching a terminal another node holds
            self.live_view.relay = WatchRelay(
                redis=self.cluster.redis,
                bus=self.cluster.bus,
                live=self.live,
                live_view=self.live_view,
                terminal_sessions=self.terminal_sessions,
                identity=self.identity,
                audit=self.audit,
                lifecycle=self,
            )
        self.files = RemoteFilePool(live=self.live, api=self, lifecycle=self)
        self.files.access_problem = functools.partial(
            access_problem, self.db, self.identity, self.connections
        )
        self.live.on_access_changed(self.files.access_changed)
        self.file_sessions = FileSessionLog(db=self.db, audit=self.audit)
        self.front_door = FrontDoor(
            db=self.db,
            logins=self.logins,
            identity=self.identity,
            connections=self.connections,
            protocols=self.protocols,
            terminal_sessions=self.terminal_sessions,
            file_sessions=self.file_sessions,
            live=self.live,
            audit=self.audit,
            api=self,
            login_methods=self.login_methods,
        )
        self.file_transfers = FileTransfers(
            pool=self.files,
            log=self.file_sessions,
            connections=self.connections,
            protocols=self.protocols,
            login_alive=self.identity.check_login_session,
        )
        self.session_history = SessionHistory(
            db=self.db,
            audit=self.audit,
            connections=self.connections,
            recordings=self.recordings,
            terminal_sessions=self.terminal_sessions,
            live=self.live,
        )
        # outbound HTTP under the network policy: channels, version check, packs' clients
        self.outbound = Outbound(self.netpolicy)
        # the deprecated ``kernel.notifications.outbound`` (the feature is a pack)
        self.notifications = DeprecatedNotifications(self.outbound)
        self.directory = Directory(self.db)
        self.version = VersionChecker(
            settings=self.settings,
            outbound=self.outbound,
            timeout=config.version_timeout_seconds,
            lease=self.cluster.lease,
            bus=self.cluster.bus,
            redis=self.cluster.redis,
        )

    def _relays(self) -> list[LiveRemoteSession]:
        """The open terminal and desktop sessions (the metrics read their byte counts)."""
        return self.terminal_sessions.all()

    async def _access_granted(self, user_id: str, connection_id: str) -> bool:
        """Whether a pack grants the user an approval-required connection now."""
        return await self.plugins.any_true(
            "grant_connection_access", user_id=user_id, connection_id=connection_id, kernel=self
        )

    async def _session_text(self, texts: list[SessionText]) -> None:
        """Hand stored session text to every pack's ``session_text`` hook."""
        await self.plugins.call_each("session_text", texts=texts, kernel=self)

    async def _wants_session_output(self) -> bool:
        """Whether a pack wants recorded terminals' output text (``wants_session_output``)."""
        return await self.plugins.any_true("wants_session_output", kernel=self)

    async def _recordings_removed(self, session_ids: list[str]) -> None:
        """Tell every pack's ``recordings_removed`` hook whose recordings were deleted."""
        await self.plugins.call_each("recordings_removed", session_ids=session_ids, kernel=self)

    async def _announce(self, event: AuditEvent) -> None:
        """Hand a committed audit entry to every pack's ``track_event`` hook."""
        await self.plugins.call_each("track_event", event=event, kernel=self)

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` at start-up, after the database and settings are ready."""
        self._start_hooks.append(hook)

    def on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` at shut-down, before the database closes (reverse order)."""
        self._stop_hooks.append(hook)

    def on_reload(self, hook: Callable[[], Awaitable[object]]) -> None:
        """Run ``hook`` whenever the database was replaced (a restore) to re-read state."""
        self._reload_hooks.append(hook)

    async def reload_state(self) -> None:
        """Make every in-memory copy of database state follow a replaced database."""
        self.readcache.clear()
        if self.cluster.redis is not None:  # a restore may bring another database's id
            database_id = await self._database_id()
            await self.cluster.claim_database(database_id, replace=True)
            # this node's recordings directory was checked at start: it is the shared
            # one, so it takes the restored database's token (or a new one)
            if not self.config.recordings_url:
                await self._check_recordings_dir(database_id, adopt=True)
        await self.settings.load()
        self.audit.forget_chain_head()
        await self.identity.start()
        await self.sync_builtin_roles()
        for hook in self._reload_hooks:
            await hook()
        await self.plugins.call_all("database_replaced", kernel=self)

    async def _reload_everywhere(self) -> None:
        """After a restore here: reload this node's state, then tell the other nodes to."""
        await self.reload_state()
        try:
            await self.cluster.bus.publish(RELOADED_TOPIC, {})
        except ApiError as exc:
            log.error("could not tell the other nodes to reload after the restore: %s", exc)

    async def _reloaded_elsewhere(self, message: dict[str, Any]) -> None:
        """Another node restored a backup: follow the replaced database."""
        log.warning("another gateway node restored a backup; reloading")
        await self.reload_state()

    async def startup(self) -> None:
        """Migrate, check the key, load settings and roles, start services and plugins.

        A start refused part-way (wrong key, Redis, a pack) leaves nothing open behind it.
        """
        try:
            await self._start()
        except BaseException:
            await self._undo_start()
            raise

    async def _undo_start(self) -> None:
        # the database first among what a failed start may leave: its SQLite connections,
        # left to the garbage collector, would stop their worker threads during whatever
        # runs next, which hand the result to this start's closed event loop ("Event loop
        # is closed" in another test or task)
        steps = (self.live.stop,) if self._live_joined else ()
        for step in (*steps, self.cluster.stop, self.db.close):
            try:
                await step()
            except Exception:
                log.exception("cleaning up after a failed start")

    async def _start(self) -> None:
        datadir.prepare(self.config.data_dir, self.config.resolved_database_url)
        self._prepare_recordings_dir()
        try:
            await self.cluster.start()
        except ClusterSetupError as exc:
            raise StartupError(str(exc)) from None
        await self.db.migrate()
        await self._first_start_step(self._check_key)
        if self.cluster.redis is not None:
            try:
                database_id = await self._database_id()
                await self.cluster.claim_database(database_id)
                if not self.config.recordings_url:  # a bucket is every node's already
                    await self._check_recordings_dir(database_id)
            except ClusterSetupError as exc:
                raise StartupError(str(exc)) from None
        await self.settings.load()
        await self._first_start_step(self.identity.start)
        await self._first_start_step(self.sync_builtin_roles)
        # joined before the recordings repair rows left open, which skips the held ones
        await self.live.start()
        self._live_joined = True
        try:  # a bucket that does not answer stops start-up with a message, not a trace
            await self.recordings.store.start()
        except StoreUnavailable as exc:
            raise StartupError(str(exc)) from None
        for hook in self._start_hooks:
            await hook()
        await self.plugins.call_all("startup", kernel=self)
        # after the services started: taking the lease re-queues what a dead node left
        await self.cluster.lease.start()
        if self.config.metrics_address:
            try:
                self.metrics.serve(self.config.metrics_address)
            except OSError as exc:
                raise StartupError(
                    f"Cannot serve metrics on {self.config.metrics_address}: {exc}"
                ) from None
            log.info("metrics served without authentication on %s", self.config.metrics_address)

    async def shutdown(self) -> None:
        """Stop plugins and services, then close the database."""
        await self.live.close_all("server shutting down", CloseReason.SHUTTING_DOWN)
        await self.cluster.lease.stop()  # another node takes the once-only work at once
        await self.plugins.call_each("shutdown", kernel=self)
        for hook in reversed(self._stop_hooks):
            try:
                await hook()
            except Exception:
                log.exception("shutdown hook failed")
        await self.live.stop()
        await self.cluster.stop()
        await self.db.close()
        self.metrics.stop()

    def _prepare_recordings_dir(self) -> None:
        """Create the recordings directory (0700); refuse to start when it cannot be written."""
        directory = self.config.resolved_recordings_dir
        source = (
            "HOSTGATE_RECORDINGS_DIR"
            if self.config.recordings_dir is not None
            else "<data dir>/recordings"
        )
        try:
            datadir.private_dir(directory)
            probe = directory / f".hostgate-probe-{os.getpid()}"
            datadir.private_open(probe, "wb").close()
            probe.unlink()
        except OSError as exc:
            raise StartupError(
                f"The recordings directory {directory} ({source}) cannot be used: "
                f"{exc.strerror or exc}. It must exist or be creatable, and be writable "
                "by the user hostgate runs as."
            ) from None

    async def _check_recordings_dir(self, database_id: str, *, adopt: bool = False) -> None:
        """Several nodes: refuse a recordings directory the other nodes do not share.

        The first node writes the marker (database id and a random token) and then
        stores the token in the database; the others must find it in their directory.
        """
        from sqlalchemy.exc import IntegrityError

        directory = self.config.resolved_recordings_dir
        async with self.db.session() as session:
            row = await session.get(SystemValue, RECORDINGS_TOKEN_NAME)
            token = row.value if row is not None else None
        if token is None:
            marker = read_marker(directory)
            if marker is not None and marker.get("databaseId") == database_id:
                token = marker.get("token") or uuid.uuid4().hex  # this database's directory
            else:
                token = uuid.uuid4().hex
            write_marker(directory, database_id, token)
            async with self.db.session() as session:
                session.add(SystemValue(name=RECORDINGS_TOKEN_NAME, value=token))
                try:
                    await session.commit()
                except IntegrityError:  # another node stored its own first: check against it
                    await session.rollback()
                    row = await session.get(SystemValue, RECORDINGS_TOKEN_NAME)
                    token = row.value if row is not None else token
        why = marker_refusal(directory, database_id, token)
        if why and adopt:
            write_marker(directory, database_id, token)
        elif why:
            raise ClusterSetupError(why)

    async def _database_id(self) -> str:
        """The database's random id, made on first need (nodes sharing a Redis share it)."""
        from sqlalchemy.exc import IntegrityError

        for _ in range(2):
            async with self.db.session() as session:
                row = await session.get(SystemValue, DATABASE_ID_NAME)
                if row is not None:
                    return row.value
                value = uuid.uuid4().hex
                session.add(SystemValue(name=DATABASE_ID_NAME, value=value))
                try:
                    await session.commit()
                except IntegrityError:
                    continue  # another node made it at the same time: read theirs
                return value
        raise StartupError("Cannot store the database id")

    @staticmethod
    async def _first_start_step(step: Callable[[], Awaitable[None]]) -> None:
        """Run a start-up step that creates its rows when the database is new.

        Workers of ``serve --workers N`` (and nodes) start at the same moment: two
        can both find a row missing and both insert it. The second commit fails on
        the unique key; the step then runs again and finds the first one's row.
        """
        from sqlalchemy.exc import IntegrityError

        try:
            await step()
        except IntegrityError:
            log.info("another worker or node created the start-up rows first; reading theirs")
            await step()

    async def _check_key(self) -> None:
        async with self.db.session() as session:
            row = await session.get(SystemValue, KEY_CHECK_NAME)
            if row is None:
                sealed = self.secrets.seal(KEY_CHECK_TEXT)
                session.add(SystemValue(name=KEY_CHECK_NAME, value=sealed))
                await session.commit()
                return
        try:
            ok = self.secrets.open(row.value) == KEY_CHECK_TEXT
        except SecretKeyError as exc:
            raise StartupError(
                "The encryption key cannot decrypt this instance's secrets "
                f"({exc}). Start with the key the data was written with "
                "(HOSTGATE_ENCRYPTION_KEY or the data dir's encryption.key)."
            ) from None
        if not ok:
            raise StartupError("The encryption key check failed: the key does not match the data.")

    @property
    def permission_names(self) -> list[str]:
        """Every known permission name."""
        return perms.all_names(self.permission_groups)

    async def sync_builtin_roles(self) -> None:
        """Create missing built-in roles; grant permissions new since the last start."""
        defaults = perms.builtin_defaults(self.permission_groups)
        current = set(self.permission_names)
        async with self.db.session() as session:
            known_row = await session.get(SystemValue, KNOWN_PERMISSIONS_NAME)
            known = set(known_row.value.split(",")) if known_row and known_row.value else set()
            roles = {r.name: r for r in (await session.exec(select(Role))).all()}
            for name, (description, granted) in defaults.items():
                role = roles.get(name)
                if role is None:
                    session.add(
                        Role(
                            name=name,
                            description=description,
                            is_builtin=True,
                            permissions=list(granted),
                        )
                    )
                    continue
                new = [p for p in granted if p not in known and p not in role.permissions]
                if new and known:
                    role.permissions = [*role.permissions, *new]
                    role.updated_at = utcnow()
                    session.add(role)
            value = ",".join(sorted(current))
            if known_row is None:
                session.add(SystemValue(name=KNOWN_PERMISSIONS_NAME, value=value))
            else:
                known_row.value = value
                session.add(known_row)
            await session.commit()

    def protocol(self, name: str) -> ProtocolSpec | None:
        """A loaded protocol by name."""
        return self.protocols.get(name)

    def describe(self) -> Mapping[str, Any]:
        """A summary for logs and ``hostgate plugins``."""
        return {
            "protocols": sorted(self.protocols),
            "login_methods": sorted(self.login_methods),
            "channels": sorted(self.channels),
        }
