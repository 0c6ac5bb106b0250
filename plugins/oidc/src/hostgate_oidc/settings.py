"""The pack's own settings (the spec's ``auth.oidc_*`` keys belong to the kernel)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hostgate import SettingSpec, url_setting_parts

CALLBACK_PATH = "/api/v1/auth/oidc/callback"


def parse_role_map(text: str) -> dict[str, str]:
    """``auth.oidc_role_map`` as a dict (claim value -> role name); ValueError if malformed."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"must be a JSON object: {exc.msg}") from None
    if not isinstance(value, Mapping):
        raise ValueError('must be a JSON object like {"hostgate-admins": "admin"}')
    out: dict[str, str] = {}
    for claim_value, role in value.items():
        if not isinstance(claim_value, str) or not claim_value:
            raise ValueError("claim values must be non-empty strings")
        if not isinstance(role, str) or not role.strip():
            raise ValueError(f"the role for {claim_value!r} must be a non-empty role name")
        out[claim_value] = role.strip()
    return out


def _role_map(value: Any) -> None:
    parse_role_map(str(value))


def check_redirect_uri(value: Any) -> None:
    """Setting validator for ``auth.oidc_redirect_uri``: empty, or this gateway's callback.

    An absolute http(s) URL whose path is :data:`CALLBACK_PATH`, without spaces or
    control characters, user info, a query or a fragment. The gateway is served at the
    root of its host (the browser app and its cookies use absolute paths), so the
    path has no prefix either.
    """
    shape = f"must be an absolute http(s) URL whose path is {CALLBACK_PATH}"
    parts = url_setting_parts(value, shape)
    if parts is None:
        return
    if parts.scheme not in {"https", "http"} or parts.path != CALLBACK_PATH:
        raise ValueError(shape)
    if "@" in parts.netloc:
        raise ValueError(f"{shape}, without user info")
    if "?" in str(value) or "#" in str(value):
        raise ValueError(f"{shape}, without a query or fragment")


def _pem(value: Any) -> None:
    text = str(value).strip()
    if text and "-----BEGIN CERTIFICATE-----" not in text:
        raise ValueError("must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)")


def _scope(value: Any) -> None:
    if "openid" not in str(value).split():
        raise ValueError("must include openid")


OIDC_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "auth.oidc_client_secret",
        str,
        "",
        secret=True,
        max_length=2000,
        description="Client secret registered at the identity provider (stored encrypted)",
    ),
    SettingSpec(
        "auth.oidc_redirect_uri",
        str,
        "",
        max_length=1000,
        validate=check_redirect_uri,
        description="Callback URL registered at the provider, "
        f"https://<host>{CALLBACK_PATH} (empty: derived from the request)",
    ),
    SettingSpec(
        "auth.oidc_scope",
        str,
        "openid email profile",
        max_length=500,
        validate=_scope,
        description="Scopes to request (must include openid)",
    ),
    SettingSpec(
        "auth.oidc_username_claim",
        str,
        "preferred_username",
        max_length=100,
        description="Claim that becomes the username (falls back to email, then sub)",
    ),
    SettingSpec(
        "auth.oidc_display_name_claim",
        str,
        "name",
        max_length=100,
        description="Claim that becomes the display name",
    ),
    SettingSpec(
        "auth.oidc_token_auth_method",
        str,
        "client_secret_basic",
        choices=("client_secret_basic", "client_secret_post"),
        description="How the client authenticates at the token endpoint",
    ),
    SettingSpec(
        "auth.oidc_tls_verify",
        bool,
        True,
        description="Verify the provider's TLS certificate (turn off only for labs)",
    ),
    SettingSpec(
        "auth.oidc_ca_cert",
        str,
        "",
        max_length=100_000,
        validate=_pem,
        description="Extra PEM CA certificate(s) to trust for the provider",
    ),
    SettingSpec(
        "auth.oidc_timeout_seconds",
        int,
        10,
        minimum=1,
        maximum=120,
        description="Timeout for requests to the provider",
    ),
    SettingSpec(
        "auth.oidc_role_claim",
        str,
        "",
        max_length=100,
        description="Claim holding group or role names for auth.oidc_role_map (e.g. groups)",
    ),
    SettingSpec(
        "auth.oidc_role_map",
        str,
        "",
        max_length=20_000,
        validate=_role_map,
        description="JSON object of claim value to role name; the first value the user has "
        "decides the role of a new account (empty: default role)",
    ),
)
