"""Passwords, password hashes, MFA secrets and tokens never show up where they must not:
any response body (but the one that hands the value out), any log record, any audit entry."""

import json
import logging

import pyotp
import pytest
from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.identity import User
from hostgate.db.models.settings import SystemValue
from hostgate.logging_setup import configure_logging
from sqlmodel import select

from tests.services.identity.helpers import API, next_code

ISSUED_FIELDS = ("token", "mfaToken", "secret", "otpauthUrl", "qrDataUrl", "ticket")


class Recorder:
    """A test client that keeps every response body."""

    def __init__(self, client):
        self.client = client
        self.seen = []

    async def __call__(self, method, path, token=None, body=None, **kwargs):
        headers = kwargs.pop("headers", {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        response = await self.client.open(
            f"{API}{path}", method=method, headers=headers, json=body, **kwargs
        )
        text = (await response.get_data()).decode()
        data = json.loads(text) if text.startswith(("{", "[")) else {}
        self.seen.append((method, path, text, data if isinstance(data, dict) else {}))
        return response, data


@pytest.fixture
def debug_logging(caplog):
    """Logging as `hostgate serve --log-level DEBUG` sets it up; restored afterwards.

    caplog's level is set first so its teardown (which runs after ours) restores the
    level from before, not the DEBUG we set: otherwise every later test in the
    session runs with DEBUG logging.
    """
    caplog.set_level(logging.DEBUG)
    root = logging.getLogger()
    saved = (root.level, list(root.handlers), logging.getLogger("aiosqlite").level)
    configure_logging("DEBUG")
    yield
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    logging.getLogger("aiosqlite").setLevel(saved[2])


async def test_no_secret_leaks(app, kernel, caplog, debug_logging):
    call = Recorder(app.test_client())
    password = "root-password-1"
    secrets = {password, "user-password-1", "changed-password-2", "wrong-password-x"}

    _, setup = await call("POST", "/auth/setup", body={"username": "root", "password": password})
    admin = setup["token"]
    _, created = await call(
        "POST",
        "/users",
        admin,
        {"username": "ulla", "password": "user-password-1", "role": "user"},
    )
    await call("POST", "/auth/login", body={"username": "ulla", "password": "wrong-password-x"})
    await call("POST", "/auth/login", body={"username": "ghost", "password": "wrong-password-x"})
    _, login = await call(
        "POST", "/auth/login", body={"username": "ulla", "password": "user-password-1"}
    )
    user = login["token"]
    _, mfa_setup = await call("POST", "/profile/mfa/setup", user)
    totp = pyotp.TOTP(mfa_setup["secret"])
    await call("POST", "/profile/mfa/verify", user, {"token": totp.now()})
    _, challenge = await call(
        "POST", "/auth/login", body={"username": "ulla", "password": "user-password-1"}
    )
    await call(
        "POST",
        "/auth/login/mfa",
        body={"mfaToken": challenge["mfaToken"], "code": "000000", "trustDevice": False},
    )
    response, mfa_login = await call(
        "POST",
        "/auth/login/mfa",
        body={"mfaToken": challenge["mfaToken"], "code": next_code(totp), "trustDevice": True},
    )
    device = next(
        c.split(";")[0].split("=", 1)[1]
        for c in response.headers.getlist("Set-Cookie")
        if c.startswith("hostgate_trusted_device=")
    )
    _, ticket = await call("POST", "/auth/ws-ticket", user)
    await call(
        "PUT",
        "/profile/password",
        user,
        {"currentPassword": "user-password-1", "newPassword": "changed-password-2"},
    )
    await call(
        "POST",
        f"/users/{created['id']}/reset-password",
        admin,
        {"newPassword": "changed-password-2"},
    )
    for path in (
        "/auth/me",
        "/auth/status",
        "/auth/providers",
        "/profile",
        "/profile/mfa/status",
        "/profile/login-sessions",
        "/profile/ssh-prefs",
        "/users",
        "/roles",
        "/roles/permissions",
        "/audit?limit=200",
        "/audit/event-types",
        "/audit/users",
        "/settings",
    ):
        response, _ = await call("GET", path, admin)
        assert response.status_code == 200, path
    await call("POST", "/profile/mfa/disable", admin, {"password": "wrong-password-x"})
    await call("POST", "/auth/logout", admin)

    secrets |= {
        admin,
        user,
        challenge["mfaToken"],
        mfa_login["token"],
        mfa_setup["secret"],
        ticket["ticket"],
        device,
        kernel.identity.signing_key,
        (await kernel.audit.chain_key()).hex(),
    }
    async with kernel.db.session() as session:
        for row in (await session.exec(select(User))).all():
            secrets |= {v for v in (row.password_hash, row.mfa_secret, row.mfa_pending_secret) if v}
        for row in (await session.exec(select(SystemValue))).all():
            if row.value.startswith("hg1:"):
                secrets.add(row.value)
        audit_rows = (await session.exec(select(AuditEntry))).all()

    for method, path, text, data in call.seen:
        issued = {str(data[f]) for f in ISSUED_FIELDS if f in data}
        for secret in secrets - issued:
            assert secret not in text, f"{method} {path} leaks a secret"
        if method == "GET":
            assert not issued, path

    audit_text = json.dumps([row.model_dump(mode="json") for row in audit_rows])
    assert len(audit_rows) > 10
    for secret in secrets:
        assert secret not in audit_text, "an audit entry holds a secret"

    log_text = caplog.text + "".join(
        f"{r.getMessage()} {r.args!r} {r.__dict__!r}" for r in caplog.records
    )
    for secret in secrets:
        assert secret not in log_text, "a log record holds a secret"
