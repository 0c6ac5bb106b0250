"""``POST /auth/login/ldap`` and ``POST /auth/ldap/test``."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any, NotRequired

from hostgate import (
    LOGIN_NAME_PATTERN,
    SECRET_MASK,
    TRUSTED_DEVICE_COOKIE,
    Account,
    ApiError,
    ClientInfo,
    InvalidInput,
    KernelAPI,
    MfaChallenge,
    PermissionDenied,
    RemoteUnreachable,
    Session,
    answers,
    check_login_name,
    current_caller,
    current_kernel,
    login_response,
    public,
    request_client,
    requires,
)
from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from .model import (
    AmbiguousUser,
    DirectoryError,
    DirectoryRefused,
    DirectorySettings,
    DirectoryUnreachable,
    DirectoryUser,
    endpoint,
    redact,
    role_for_groups,
)
from .settings import parse_role_map

log = logging.getLogger("hostgate.ldap")
blueprint = Blueprint("ldap", __name__)
PROVIDER = "ldap"
DISABLED = "LDAP login is disabled"
MAX_PASSWORD = 1024


class LdapLogin(BaseModel):
    """Directory credentials."""

    model_config = ConfigDict(extra="forbid")
    username: str = Field(
        min_length=1, max_length=256, json_schema_extra={"pattern": LOGIN_NAME_PATTERN}
    )
    password: str = Field(min_length=1, max_length=MAX_PASSWORD)


class LdapTest(BaseModel):
    """Connection settings to try (the other LDAP settings are taken as stored)."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(max_length=1000)
    bindDn: str = Field(default="", max_length=1000)  # noqa: N815 - wire name
    bindPassword: str | None = Field(default=None, max_length=1024)  # noqa: N815 - wire name
    searchBase: str = Field(max_length=1000)  # noqa: N815 - wire name


async def approved(kernel: KernelAPI, settings: DirectorySettings) -> DirectorySettings:
    """``settings`` with the address the network policy approved for the URL's host.

    A refusal is audited by the policy (``network.denied``, purpose ``ldap``) and
    raised as DirectoryRefused; a name that does not resolve as DirectoryUnreachable.
    """
    host, port, _ = endpoint(settings)
    try:
        address = await kernel.outbound.check(host, port, purpose="ldap")
    except ApiError as exc:
        error = DirectoryRefused if exc.code == "target_denied" else DirectoryUnreachable
        raise error(exc.message) from None
    return replace(settings, address=address)


async def _directory_down(
    kernel: KernelAPI, client: ClientInfo, username: str, error: DirectoryError
) -> RemoteUnreachable:
    """Audit an outage (it does not count against the account) and build the 502."""
    log.warning("LDAP login for %r failed: %s", username, error)
    await kernel.audit.record(
        "auth.login_failed",
        username=username[:200],
        target=username[:200],
        details={"reason": error.reason, "provider": PROVIDER, "error": str(error)[:500]},
        ip_address=client.ip_address,
    )
    return RemoteUnreachable(
        "The LDAP directory is not available; try again later", code=error.reason
    )


async def _authenticate(
    kernel: KernelAPI, settings: DirectorySettings, username: str, password: str, client: ClientInfo
) -> DirectoryUser:
    """Search, lockout check, user bind; every failure is counted and answered the same."""
    from .directory import check_password, find_user  # ldap3: loaded at the first login

    logins = kernel.logins
    try:
        settings = await approved(kernel, settings)
        entry = await asyncio.to_thread(find_user, settings, username)
    except AmbiguousUser:
        await logins.check_not_locked(None, client, username=username)
        await logins.record_failure(
            None, username, client, reason="ldap_ambiguous_user", provider=PROVIDER
        )
        raise logins.invalid_credentials() from None
    except DirectoryError as exc:
        raise await _directory_down(kernel, client, username, exc) from None
    if entry is None:
        await logins.check_not_locked(None, client, username=username)
        await logins.record_failure(
            None, username, client, reason="user_not_found", provider=PROVIDER
        )
        raise logins.invalid_credentials()
    linked = await logins.find_external(PROVIDER, entry.dn)
    await logins.check_not_locked(linked, client, username=username)
    try:
        accepted = await asyncio.to_thread(check_password, settings, entry.dn, password)
    except DirectoryError as exc:
        raise await _directory_down(kernel, client, username, exc) from None
    if not accepted:
        await logins.record_failure(
            linked, username, client, reason="invalid_password", provider=PROVIDER
        )
        raise logins.invalid_credentials()
    return entry


async def directory_sign_in(
    kernel: KernelAPI, username: str, password: str, client: ClientInfo
) -> Account:
    """The directory's check of a user name and password; the account (made on first use).

    The login method's ``check_password``, used by the route below and by doors that
    ask for a password themselves (the SSH front door); the caller hits the rate limit.
    """
    if not kernel.settings.get("auth.ldap_enabled"):
        raise PermissionDenied(DISABLED, code="ldap_disabled")
    username = check_login_name(username).strip()
    if not username:
        raise InvalidInput("username: must not be blank")
    if not password or len(password) > MAX_PASSWORD:  # never an anonymous (empty) bind
        await kernel.logins.check_not_locked(None, client, username=username)
        await kernel.logins.record_failure(
            None, username, client, reason="invalid_password", provider=PROVIDER
        )
        raise kernel.logins.invalid_credentials()
    settings = DirectorySettings.from_settings(kernel.settings.get)
    entry = await _authenticate(kernel, settings, username, password, client)
    role = role_for_groups(
        entry.groups, parse_role_map(str(kernel.settings.get("auth.ldap_group_role_map") or ""))
    )
    return await kernel.logins.provision_external(
        PROVIDER, entry.dn, entry.username, entry.display_name, entry.email, role
    )


class LdapTestResult(TypedDict):
    """Whether the service bind and search worked; the error when not."""

    success: bool
    error: NotRequired[str]


@blueprint.post("/auth/login/ldap")
@public
@validate_request(LdapLogin)
@tag(["auth"])
@answers(Session | MfaChallenge, errors=(401, 403, 429, 502, 504))
async def ldap_login(data: LdapLogin) -> Response:
    """Log in with directory credentials; the account is created on first login.

    The second step follows as after a local password: ``mfaRequired`` with an
    ``mfaToken`` when the account holds TOTP, or a passkey in a role that requires
    two-step verification.
    """
    kernel = current_kernel()
    if not kernel.settings.get("auth.ldap_enabled"):
        raise PermissionDenied(DISABLED, code="ldap_disabled")
    client = request_client()
    username = check_login_name(data.username).strip()
    await kernel.logins.limit_ip(client)
    user = await directory_sign_in(kernel, username, data.password, client)
    outcome = await kernel.logins.after_first_factor(
        user,
        client,
        method=PROVIDER,
        details={"provider": PROVIDER},
        device=request.cookies.get(TRUSTED_DEVICE_COOKIE),
    )
    return login_response(outcome, with_role=False)


@blueprint.post("/auth/ldap/test")
@requires("settings.manage")
@validate_request(LdapTest)
@tag(["auth"])
@answers(LdapTestResult)
async def ldap_test(data: LdapTest) -> dict[str, Any]:
    """Try a service bind and read the search base; ``{success}`` or ``{success, error}``."""
    from .directory import test_connection  # ldap3: loaded at the first use

    kernel = current_kernel()
    if not kernel.settings.get("auth.ldap_enabled"):
        return {"success": False, "error": DISABLED}
    stored = DirectorySettings.from_settings(kernel.settings.get)
    password = data.bindPassword
    if password is None or password == SECRET_MASK:
        # Reuse the stored password only against the stored server and DN, so it can
        # never be sent to a server the caller picked.
        same_target = data.url.strip() == stored.url and data.bindDn.strip() == stored.bind_dn
        password = stored.bind_password if same_target else ""
    settings = replace(
        stored,
        url=data.url.strip(),
        bind_dn=data.bindDn.strip(),
        bind_password=password,
        search_base=data.searchBase.strip(),
    )
    try:
        await asyncio.to_thread(test_connection, await approved(kernel, settings))
        result: dict[str, Any] = {"success": True}
    except DirectoryError as exc:
        result = {
            "success": False,
            "error": redact(str(exc), password, stored.bind_password),
        }
    await kernel.audit.record(
        "auth.ldap_tested",
        actor=current_caller(),
        target=settings.url[:200],
        details={"success": result["success"], "error": result.get("error", "")},
    )
    return result
