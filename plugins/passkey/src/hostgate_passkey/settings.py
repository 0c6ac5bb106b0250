"""The pack's settings: on/off, relying party id and origins, how many passkeys a user may keep."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from hostgate import SettingSpec


def parse_origins(text: str) -> list[str]:
    """``security.passkey_origin`` as a list (comma-separated in the setting)."""
    return [part.strip().rstrip("/") for part in text.split(",") if part.strip()]


def _origins(value: Any) -> None:
    for origin in parse_origins(str(value)):
        parts = urlsplit(origin)
        if parts.scheme not in {"https", "http"} or not parts.netloc or parts.path:
            raise ValueError(f"{origin!r} is not an origin such as https://gateway.example.org")


def _rp_id(value: Any) -> None:
    text = str(value).strip()
    if text and ("/" in text or ":" in text or " " in text):
        raise ValueError("must be a bare host name such as gateway.example.org")


PASSKEY_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "security.passkey_enabled",
        bool,
        True,
        description="Passkey (WebAuthn) registration and login on/off",
    ),
    SettingSpec(
        "security.passkey_rp_id",
        str,
        "",
        max_length=253,
        validate=_rp_id,
        description="WebAuthn relying party id: the gateway's host name (empty: the "
        "[plugins.passkey] rp_id config value, else the request's host)",
    ),
    SettingSpec(
        "security.passkey_origin",
        str,
        "",
        max_length=2000,
        validate=_origins,
        description="Origin(s) the browser uses, comma-separated, e.g. "
        "https://gateway.example.org (empty: the [plugins.passkey] origin config value, "
        "else the request's origin)",
    ),
    SettingSpec(
        "security.passkey_max_per_user",
        int,
        10,
        minimum=1,
        maximum=100,
        description="How many passkeys one user may register",
    ),
)
