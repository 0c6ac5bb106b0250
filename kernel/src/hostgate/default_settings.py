"""Default plugin: the spec's settings, owned by the kernel whether or not a pack uses them."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import SplitResult, urlsplit

from .descriptors import SettingSpec
from .markers import hookimpl
from .services.connections.hostkeys import FIRST_USE_CHOICES, FIRST_USE_SETTING
from .services.netpolicy import PROTECTED_DEFAULT, validate_rules
from .services.version import DEFAULT_FEED, validate_feed_url

CURSOR_STYLES = ("block", "bar", "underline")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def url_setting_parts(value: object, shape: str) -> SplitResult | None:
    """``value`` split as a URL, None when empty; ValueError(``shape``) when it cannot be one.

    For the ``validate`` of a URL setting (a pack's too): whitespace or a control
    character inside, a host missing, an unclosed IPv6 bracket or a port out of range
    are refused at save time, not at the first login.
    """
    text = str(value).strip()
    if not text:
        return None
    if any(ch.isspace() or not ch.isprintable() for ch in text):
        raise ValueError(f"{shape} (no spaces or control characters)")
    try:
        parts = urlsplit(text)
        hostname = parts.hostname
        port = parts.port
    except ValueError:  # an unclosed IPv6 bracket, a port out of range
        raise ValueError(shape) from None
    if not hostname or port == 0:
        raise ValueError(shape)
    return parts


def validate_ldap_url(value: object) -> None:
    """Setting validator for ``auth.ldap_url``: empty, or ``ldap://host[:port]`` / ``ldaps://``."""
    shape = "must be an ldap:// or ldaps:// URL such as ldaps://ldap.example.org:636"
    parts = url_setting_parts(value, shape)
    if parts is not None and parts.scheme not in {"ldap", "ldaps"}:
        raise ValueError(shape)


def validate_issuer_url(value: object) -> None:
    """Setting validator for ``auth.oidc_issuer``: empty, or an https:// URL.

    http:// only on a loopback name (a provider on the same machine), as the OIDC pack
    accepts when it calls the provider; no query or fragment (OpenID Connect Discovery).
    """
    shape = "must be an https:// URL such as https://idp.example.org/realms/main"
    parts = url_setting_parts(value, shape)
    if parts is None:
        return
    if parts.scheme != "https" and not (
        parts.scheme == "http" and parts.hostname in LOOPBACK_NAMES
    ):
        raise ValueError(shape + " (http:// only on localhost)")
    if parts.query or parts.fragment:
        raise ValueError(shape + " without a query or fragment")


KERNEL_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "app.name",
        str,
        "hostgate",
        public=True,
        max_length=200,
        description="Instance name shown in the UI and in notifications",
    ),
    SettingSpec(
        "app.logo",
        str,
        None,
        public=True,
        nullable=True,
        max_length=2_000_000,
        description="Logo as a data URL, or null",
    ),
    SettingSpec(
        "health_monitor.enabled",
        bool,
        True,
        public=True,
        description="Whether the UI polls connection reachability",
    ),
    SettingSpec(
        "ssh.font_family",
        str,
        '"Fira Code", monospace',
        public=True,
        max_length=200,
        description="Default terminal font",
    ),
    SettingSpec(
        "ssh.font_size",
        float,
        14,
        public=True,
        minimum=6,
        maximum=72,
        description="Default terminal font size",
    ),
    SettingSpec(
        "ssh.cursor_style",
        str,
        "block",
        public=True,
        choices=CURSOR_STYLES,
        description="Default cursor style",
    ),
    SettingSpec("ssh.cursor_blink", bool, True, public=True, description="Default cursor blink"),
    SettingSpec(
        "ssh.theme",
        str,
        "vscode-dark",
        public=True,
        max_length=64,
        description="Default terminal theme",
    ),
    SettingSpec(
        "ssh.scrollback",
        int,
        5000,
        public=True,
        minimum=0,
        maximum=1_000_000,
        description="Default scrollback lines",
    ),
    SettingSpec("auth.ldap_enabled", bool, False, public=True, description="LDAP login on/off"),
    SettingSpec("auth.oidc_enabled", bool, False, public=True, description="OIDC login on/off"),
    SettingSpec(
        "auth.oidc_button_label",
        str,
        "Sign in with SSO",
        public=True,
        max_length=100,
        description="Label of the SSO button",
    ),
    SettingSpec(
        "security.idle_timeout_minutes",
        int,
        0,
        public=True,
        minimum=0,
        maximum=525_600,
        description="Idle minutes before a session ends (0 = never)",
    ),
    SettingSpec(
        "system.insecure_key",
        bool,
        False,
        public=True,
        readonly=True,
        description="True when the encryption key is a generated file (computed)",
    ),
    SettingSpec(
        "security.max_login_attempts",
        int,
        5,
        minimum=1,
        maximum=1000,
        description="Failed logins before an account locks",
    ),
    SettingSpec(
        "security.lockout_duration_minutes",
        int,
        30,
        minimum=1,
        maximum=525_600,
        description="How long a locked account stays locked",
    ),
    SettingSpec(
        "security.require_mfa",
        str,
        "off",
        choices=("off", "everyone", "roles"),
        description="Who must use two-step verification: nobody (off), everyone, or the "
        "roles named in security.require_mfa_roles. A user without it sets it up right "
        "after the password, before anything else; the SSH front door sends them to the "
        "browser app",
    ),
    SettingSpec(
        "security.require_mfa_roles",
        str,
        "",
        max_length=2000,
        description="Role names, comma-separated, that must use two-step verification "
        "when security.require_mfa is roles; only existing roles (400 unknown_role names "
        "the others), kept in step when a role is renamed or deleted",
    ),
    SettingSpec(
        "security.session_lifetime_days",
        float,
        30,
        minimum=0.01,
        maximum=3650,
        description="Lifetime of a session token",
    ),
    SettingSpec(
        "security.max_sessions_per_user",
        int,
        10,
        minimum=1,
        maximum=10_000,
        description="Concurrent live terminal/desktop sessions per user",
    ),
    SettingSpec(
        "security.max_sessions_total",
        int,
        500,
        minimum=1,
        maximum=100_000,
        description="Concurrent live terminal/desktop sessions on the instance",
    ),
    SettingSpec(
        FIRST_USE_SETTING,
        str,
        "trust",
        choices=FIRST_USE_CHOICES,
        description="A server's first SSH host key: trust (remembered at the first "
        "connection) or confirm (no session until someone who may edit the connection "
        "accepts it)",
    ),
    SettingSpec(
        "recordings.enabled", bool, True, description="Record terminal, VNC and RDP sessions"
    ),
    SettingSpec(
        "command_rules.approval_timeout",
        int,
        120,
        minimum=10,
        maximum=86_400,
        description=(
            "Seconds a command held by an approve command rule waits for an approver"
            " before it is refused"
        ),
    ),
    SettingSpec(
        "recordings.max_size_mb",
        float,
        0,
        minimum=0,
        maximum=1_000_000,
        description="Cap per recording in MB (0 = no cap)",
    ),
    SettingSpec(
        "recordings.upload_grace_seconds",
        float,
        30,
        minimum=1,
        maximum=3600,
        description="An RDP session whose browser recording upload stops for this long "
        "while the desktop carries traffic is ended (docs/terminals.md)",
    ),
    SettingSpec(
        "recordings.retention_days",
        int,
        90,
        minimum=0,
        maximum=36_500,
        description="Delete recordings older than this many days (0 = keep forever)",
    ),
    SettingSpec(
        "recordings.retention_max_total_mb",
        float,
        0,
        minimum=0,
        maximum=100_000_000,
        description="Delete the oldest recordings beyond this total size (0 = no cap)",
    ),
    SettingSpec(
        "recordings.min_free_disk_mb",
        float,
        256,
        minimum=0,
        maximum=1_000_000_000,
        description="Free disk below which new recordings stop (with an audit event)",
    ),
    SettingSpec("auth.local_enabled", bool, True, description="Local password login on/off"),
    SettingSpec(
        "auth.ldap_url",
        str,
        "",
        max_length=1000,
        validate=validate_ldap_url,
        description="ldap:// or ldaps:// URL",
    ),
    SettingSpec("auth.ldap_bind_dn", str, "", max_length=1000, description="Service bind DN"),
    SettingSpec("auth.ldap_search_base", str, "", max_length=1000, description="User search base"),
    SettingSpec(
        "auth.ldap_username_attr",
        str,
        "uid",
        max_length=100,
        description="Attribute holding the login name",
    ),
    SettingSpec(
        "auth.oidc_issuer",
        str,
        "",
        max_length=1000,
        validate=validate_issuer_url,
        description="OIDC issuer URL (https://; http:// only on localhost)",
    ),
    SettingSpec("auth.oidc_client_id", str, "", max_length=1000, description="OIDC client id"),
    SettingSpec(
        "network.allow",
        str,
        "",
        max_length=20_000,
        validate=validate_rules,
        description="Empty: every target not in network.protected or network.deny. "
        "Not empty: ONLY these targets (CIDR ranges, host patterns such as *.example.com, "
        "private): every other target, the notification channels and the update check are "
        "refused. To allow loopback as well as the rest, take it off network.protected",
    ),
    SettingSpec(
        "network.deny",
        str,
        "",
        max_length=20_000,
        validate=validate_rules,
        description="Targets the gateway must never connect to (wins over network.allow)",
    ),
    SettingSpec(
        "network.protected",
        str,
        PROTECTED_DEFAULT,
        max_length=20_000,
        validate=validate_rules,
        description="Targets refused unless an entry of network.allow covers them: by default "
        "loopback, link-local and the cloud metadata services",
    ),
    SettingSpec(
        "updates.feed_url",
        str,
        DEFAULT_FEED,
        max_length=2000,
        validate=validate_feed_url,
        description="Release feed /version checks for a newer release (PyPI JSON, or "
        "{version, url}); empty turns the check off: no outbound call at all",
    ),
    SettingSpec(
        "notifications.log_retention_days",
        int,
        90,
        minimum=1,
        maximum=36_500,
        description="Days the notification delivery log keeps entries",
    ),
)


@hookimpl
def register_settings() -> Sequence[SettingSpec]:
    """The spec's settings, owned by the kernel whether or not a pack uses them."""
    return KERNEL_SETTINGS
