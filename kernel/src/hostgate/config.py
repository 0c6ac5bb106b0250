"""Configuration: ``HOSTGATE_*`` environment variables over an optional TOML file."""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEFAULT_PORT = 7443
DEFAULT_HOST = "127.0.0.1"
EVENT_LOOPS = ("auto", "uvloop", "asyncio")

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ConfigError(ValueError):
    """A configuration value is malformed; the message names the variable."""


@dataclass(frozen=True)
class Config:
    """Everything the kernel needs to start, resolved once at start-up."""

    data_dir: Path = Path("data")
    # where recording files live; None = <data_dir>/recordings. Several nodes point
    # it at one shared directory (docs/cluster.md "The recordings directory")
    recordings_dir: Path | None = None
    # recordings in an S3-compatible bucket instead (``s3://bucket/prefix``): every node
    # reads every recording without a shared directory (docs/admin.md "Recordings in
    # object storage"); empty = the directory above
    recordings_url: str = ""
    # the bucket's endpoint (empty: AWS), region, and credentials (empty: botocore's own
    # chain, AWS_ACCESS_KEY_ID...). Never stored in the database, never logged.
    s3_endpoint_url: str = ""
    s3_region: str = ""
    s3_access_key_id: str = field(default="", repr=False)
    s3_secret_access_key: str = field(default="", repr=False)
    database_url: str | None = None
    encryption_key: str | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    disabled_plugins: tuple[str, ...] = ()
    load_entry_points: bool = True
    trace_plugins: bool = False
    log_level: str = "INFO"
    log_format: str = "text"
    access_log: bool = True
    metrics_address: str = ""
    trusted_proxies: tuple[IPNetwork, ...] = ()
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_self_signed: bool = False
    version_timeout_seconds: float = 4.0
    max_body_bytes: int = 16 * 1024 * 1024
    # ``hostgate serve`` on SIGTERM: how long requests in flight (an upload) may take
    # to end before they are cancelled, in seconds
    shutdown_grace_seconds: float = 10.0
    database_busy_timeout_ms: int = 10_000
    # the Redis (or Valkey) several gateway nodes share: tickets, rate limits, control
    # messages (docs/admin.md "Scaling out"); empty = one node, everything in memory
    redis_url: str = ""
    # with redis_url: a node whose heartbeat is this old is dead, and the others mark
    # its live sessions ended and close their recordings (docs/admin.md "Scaling out")
    node_timeout_seconds: float = 30.0
    # with redis_url: how long the lease for once-only work (notification retries,
    # retention) outlives a holder that stopped renewing it, in seconds
    lease_seconds: float = 15.0
    # the event loop ``hostgate serve`` runs on: "auto" (uvloop when installed),
    # "uvloop" (refuses to start without it) or "asyncio" (the standard loop)
    event_loop: str = "auto"
    plugin_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # defaults for instance settings (the TOML file's ``[settings]`` table): a value
    # stored with ``PUT /settings`` still wins; this replaces the built-in default
    setting_defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL: the configured one, or SQLite in the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'hostgate.db').resolve()}"

    @property
    def resolved_recordings_dir(self) -> Path:
        """Where recording files live: the configured directory or ``<data dir>/recordings``."""
        return self.recordings_dir or self.data_dir / "recordings"

    @property
    def is_sqlite(self) -> bool:
        """True when the database is the embedded SQLite file."""
        return self.resolved_database_url.startswith("sqlite")

    def with_overrides(self, **changes: Any) -> Config:
        """A copy with some fields replaced (tests and the CLI use this)."""
        return replace(self, **changes)

    def plugin(self, name: str) -> Mapping[str, Any]:
        """Options for one pack from the TOML file's ``[plugins.<name>]`` table."""
        return self.plugin_options.get(name, {})


def _bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def _int(name: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, not {value!r}") from None


def _networks(name: str, value: str | list[str]) -> tuple[IPNetwork, ...]:
    items = value if isinstance(value, list) else [v for v in value.split(",")]
    nets = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        try:
            nets.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ConfigError(f"{name}: {item!r} is not an IP address or CIDR range") from None
    return tuple(nets)


def _address(value: Any) -> str:
    """``host:port`` (``[v6]:port``), or empty for none."""
    text = str(value).strip()
    if not text:
        return ""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"HOSTGATE_METRICS_ADDRESS must be host:port, not {text!r}")
    return text


def _lease_seconds(value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"HOSTGATE_LEASE_SECONDS must be a number, not {value!r}") from None
    if not 1.0 <= seconds <= 600.0:
        raise ConfigError("HOSTGATE_LEASE_SECONDS must be between 1 and 600")
    return seconds


def _redis_url(value: Any) -> str:
    text = str(value).strip()
    if not text:
        return ""
    scheme = text.partition("://")[0] if "://" in text else ""
    if scheme not in {"redis", "rediss", "unix"}:
        shown = text.split("@")[-1]  # never the password
        raise ConfigError(
            f"HOSTGATE_REDIS_URL must be a redis://, rediss:// or unix:// URL, not {shown!r}"
        )
    return text


def _seconds(name: str, value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number of seconds, not {value!r}") from None
    if not 1 <= seconds <= 3600:
        raise ConfigError(f"{name} must be between 1 and 3600 seconds, not {value!r}")
    return seconds


def _directory(value: Any) -> Path | None:
    """An absolute directory path (relative ones would depend on where a node starts)."""
    text = str(value).strip()
    if not text:
        return None
    path = Path(text).expanduser()
    if not path.is_absolute():
        raise ConfigError(f"HOSTGATE_RECORDINGS_DIR must be an absolute path, not {text!r}")
    return path


def _recordings_url(value: Any) -> str:
    """``s3://bucket`` or ``s3://bucket/prefix``, or empty for the local directory."""
    text = str(value).strip()
    if not text:
        return ""
    bucket = text.removeprefix("s3://").partition("/")[0]
    if not text.startswith("s3://") or not bucket or "@" in text:
        raise ConfigError("HOSTGATE_RECORDINGS_URL must be s3://bucket or s3://bucket/prefix")
    return text.rstrip("/")


def _names(value: str | list[str]) -> tuple[str, ...]:
    items = value if isinstance(value, list) else value.split(",")
    return tuple(i.strip() for i in items if i.strip())


def load_config(
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
    **overrides: Any,
) -> Config:
    """Build the Config from a TOML file, then ``HOSTGATE_*`` variables, then overrides."""
    env = os.environ if env is None else env
    raw: dict[str, Any] = {}
    path = config_file or (Path(env["HOSTGATE_CONFIG"]) if env.get("HOSTGATE_CONFIG") else None)
    if path is not None:
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    values: dict[str, Any] = {}
    table = {k.replace("-", "_"): v for k, v in raw.items() if k not in ("plugins", "settings")}
    mapping: dict[str, tuple[str, Any]] = {
        "data_dir": ("HOSTGATE_DATA_DIR", Path),
        "recordings_dir": ("HOSTGATE_RECORDINGS_DIR", _directory),
        "recordings_url": ("HOSTGATE_RECORDINGS_URL", _recordings_url),
        "s3_endpoint_url": ("HOSTGATE_S3_ENDPOINT_URL", lambda v: str(v).strip()),
        "s3_region": ("HOSTGATE_S3_REGION", lambda v: str(v).strip()),
        "s3_access_key_id": ("HOSTGATE_S3_ACCESS_KEY_ID", str),
        "s3_secret_access_key": ("HOSTGATE_S3_SECRET_ACCESS_KEY", str),
        "database_url": ("HOSTGATE_DATABASE_URL", str),
        "encryption_key": ("HOSTGATE_ENCRYPTION_KEY", str),
        "host": ("HOSTGATE_HOST", str),
        "port": ("HOSTGATE_PORT", lambda v: _int("HOSTGATE_PORT", v)),
        "disabled_plugins": ("HOSTGATE_DISABLE_PLUGINS", _names),
        "trace_plugins": (
            "HOSTGATE_TRACE_PLUGINS",
            lambda v: _bool("HOSTGATE_TRACE_PLUGINS", str(v)),
        ),
        "log_level": ("HOSTGATE_LOG_LEVEL", lambda v: str(v).upper()),
        "log_format": ("HOSTGATE_LOG_FORMAT", str),
        "access_log": ("HOSTGATE_ACCESS_LOG", lambda v: _bool("HOSTGATE_ACCESS_LOG", str(v))),
        "metrics_address": ("HOSTGATE_METRICS_ADDRESS", _address),
        "trusted_proxies": (
            "HOSTGATE_TRUSTED_PROXIES",
            lambda v: _networks("HOSTGATE_TRUSTED_PROXIES", v),
        ),
        "tls_cert": ("HOSTGATE_TLS_CERT", Path),
        "tls_key": ("HOSTGATE_TLS_KEY", Path),
        "tls_self_signed": ("HOSTGATE_TLS_SELF_SIGNED", lambda v: _bool("TLS", str(v))),
        "max_body_bytes": ("HOSTGATE_MAX_BODY_BYTES", lambda v: _int("MAX_BODY", v)),
        "redis_url": ("HOSTGATE_REDIS_URL", _redis_url),
        "node_timeout_seconds": (
            "HOSTGATE_NODE_TIMEOUT_SECONDS",
            lambda v: _seconds("HOSTGATE_NODE_TIMEOUT_SECONDS", v),
        ),
        "lease_seconds": ("HOSTGATE_LEASE_SECONDS", _lease_seconds),
        "shutdown_grace_seconds": (
            "HOSTGATE_SHUTDOWN_GRACE_SECONDS",
            lambda v: _seconds("HOSTGATE_SHUTDOWN_GRACE_SECONDS", v),
        ),
        "event_loop": ("HOSTGATE_EVENT_LOOP", lambda v: str(v).strip().lower()),
        "database_busy_timeout_ms": (
            "HOSTGATE_DATABASE_BUSY_TIMEOUT_MS",
            lambda v: _int("HOSTGATE_DATABASE_BUSY_TIMEOUT_MS", v),
        ),
    }
    for attr, (var, convert) in mapping.items():
        if attr in table:
            values[attr] = convert(table[attr])
        if env.get(var):
            values[attr] = convert(env[var])
    values["plugin_options"] = raw.get("plugins", {})
    setting_defaults = raw.get("settings", {})
    if not isinstance(setting_defaults, dict):
        raise ConfigError("[settings] must be a table of setting keys and values")
    # HOSTGATE_VERSION_URL / version_feed_url: the default of the setting updates.feed_url
    feed = env.get("HOSTGATE_VERSION_URL")
    feed = feed if feed is not None else table.get("version_feed_url")
    if feed is not None:
        setting_defaults = {**setting_defaults, "updates.feed_url": str(feed)}
    values["setting_defaults"] = setting_defaults
    values.update(overrides)
    config = Config(**values)
    if not 0 < config.port < 65536:
        raise ConfigError(f"HOSTGATE_PORT must be 1-65535, not {config.port}")
    if config.event_loop not in EVENT_LOOPS:
        choices = ", ".join(EVENT_LOOPS)
        raise ConfigError(
            f"HOSTGATE_EVENT_LOOP must be one of {choices}, not {config.event_loop!r}"
        )
    if config.log_format not in {"text", "json"}:
        raise ConfigError("HOSTGATE_LOG_FORMAT must be text or json")
    if (config.tls_cert is None) != (config.tls_key is None):
        raise ConfigError("HOSTGATE_TLS_CERT and HOSTGATE_TLS_KEY must be given together")
    return config
