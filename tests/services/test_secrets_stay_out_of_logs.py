"""A run that handles every kind of secret leaves none in a log line or an audit entry.

The suite's ``secret_scan`` fixture already fails any test whose GET responses hold a
secret; this test drives the routes that take or hand out secrets (logins right and
wrong, connection credentials, LDAP and OIDC settings, the LDAP test, notification
channels that deliver and that fail, API tokens, MFA, a password change, a backup)
and then scans what the server logged (hostgate's loggers at DEBUG, the others at
INFO, as an operator would run it) and every audit row for any of those values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import hostgate_chat.plugin
import hostgate_ldap.plugin
import hostgate_notifications.plugin
import hostgate_oidc.plugin
import hostgate_smtp.plugin
import hostgate_ssh.plugin
import pytest
from hostgate.config import Config
from hostgate.db.models.audit import AuditEntry
from sqlmodel import select

from tests.services.connections.support import PRIVATE_KEY
from testsupport.fixtures import PASSWORD
from testsupport.peers import free_port
from testsupport.receivers import http_receiver  # noqa: F401
from testsupport.secretscan import SecretLedger, needles

CHANNELS = "/api/v1/notifications/channels"
BOT_TOKEN = "424242:Bot-Token-Secret-abcdefghijk"


@pytest.fixture
def plugins() -> list[object]:
    return [
        hostgate_chat.plugin,
        hostgate_notifications.plugin,
        hostgate_smtp.plugin,
        hostgate_ldap.plugin,
        hostgate_oidc.plugin,
        hostgate_ssh.plugin,
    ]


@pytest.fixture
def config(config: Config, http_receiver: Any) -> Config:  # noqa: F811
    return config.with_overrides(
        plugin_options={
            "chat": {"telegram_api_base": http_receiver.base},
            "notifications": {"retry_delays": [0.1]},
        }
    )


class Captured(logging.Handler):
    """Every record, formatted with its exception, as the server would write it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def server_log() -> Iterator[Captured]:
    captured = Captured()
    root, ours = logging.getLogger(), logging.getLogger("hostgate")
    levels = root.level, ours.level
    root.addHandler(captured)
    root.setLevel(logging.INFO)
    ours.setLevel(logging.DEBUG)
    try:
        yield captured
    finally:
        root.removeHandler(captured)
        root.setLevel(levels[0])
        ours.setLevel(levels[1])


async def call(
    client: Any, method: str, path: str, headers: Any, expect: int = 200, **kwargs: Any
) -> Any:
    response = await client.open(path, method=method, headers=headers, **kwargs)
    assert response.status_code == expect, (path, await response.get_data(as_text=True))
    return response


async def test_no_secret_reaches_a_log_line_or_an_audit_entry(
    client,
    kernel,
    admin,
    http_receiver,  # noqa: F811
    server_log: Captured,
    secret_scan: SecretLedger,
):
    headers = admin.headers
    # Logins, right and wrong (both passwords are in the ledger: request bodies).
    await call(
        client, "POST", "/api/v1/auth/login", {}, json={"username": "admin", "password": PASSWORD}
    )
    await call(
        client,
        "POST",
        "/api/v1/auth/login",
        {},
        expect=401,
        json={"username": "admin", "password": "Wrong-Pw-3141"},
    )
    # Connection credentials, created and changed.
    created = await call(
        client,
        "POST",
        "/api/v1/connections",
        headers,
        expect=201,
        json={
            "name": "db",
            "protocol": "ssh",
            "host": "127.0.0.1",
            "port": free_port(),
            "username": "root",
            "password": "Conn-Secret-pw-1",
            "privateKey": PRIVATE_KEY,
        },
    )
    connection_id = (await created.get_json())["id"]
    await call(
        client,
        "PUT",
        f"/api/v1/connections/{connection_id}",
        headers,
        json={"password": "Conn-Secret-pw-2"},
    )
    # Directory and SSO secrets in the settings; a directory that is not there.
    ldap_url = f"ldap://127.0.0.1:{free_port()}"
    await call(
        client,
        "PUT",
        "/api/v1/settings",
        headers,
        json={
            "auth.ldap_enabled": True,
            "auth.ldap_url": ldap_url,
            "auth.ldap_bind_dn": "cn=admin,dc=example,dc=org",
            "auth.ldap_bind_password": "Ldap-Bind-Secret-9",
            "auth.ldap_search_base": "dc=example,dc=org",
            "auth.oidc_client_secret": "Oidc-Client-Secret-7",
        },
    )
    await call(
        client,
        "POST",
        "/api/v1/auth/ldap/test",
        headers,
        json={
            "url": ldap_url,
            "bindDn": "cn=x",
            "bindPassword": "Ldap-Test-Secret-3",
            "searchBase": "dc=x",
        },
    )
    await call(
        client,
        "POST",
        "/api/v1/auth/login/ldap",
        {},
        expect=502,
        json={"username": "alice", "password": "Ldap-User-Secret-5"},
    )
    # Notification channels: secrets in a URL's query, a header, a bot token; one delivery
    # reaches its receiver, one fails (its error text is logged and stored).
    hook = http_receiver.url("/hook?token=Url-Token-Secret-1")
    await call(
        client,
        "PUT",
        f"{CHANNELS}/webhook",
        headers,
        json={
            "enabled": True,
            "config": {
                "url": hook,
                "method": "POST",
                "headers": {"Authorization": "Bearer Header-Secret-2"},
            },
        },
    )
    await call(client, "POST", f"{CHANNELS}/webhook/test", headers)
    await call(
        client,
        "PUT",
        f"{CHANNELS}/telegram",
        headers,
        json={"enabled": True, "config": {"botToken": BOT_TOKEN, "chatId": "42"}},
    )
    await call(client, "POST", f"{CHANNELS}/telegram/test", headers)
    down = f"http://127.0.0.1:{free_port()}/hook/Path-Secret-4?key=Query-Secret-8"
    await call(
        client,
        "PUT",
        f"{CHANNELS}/webhook",
        headers,
        json={"enabled": True, "config": {"url": down}},
    )
    await call(client, "POST", f"{CHANNELS}/webhook/test", headers, expect=502)
    secret_scan.add(["Url-Token-Secret-1", "Path-Secret-4", "Query-Secret-8", "Header-Secret-2"])
    # What the server hands out once: an API token (then used), an MFA secret.
    made = await call(
        client,
        "POST",
        "/api/v1/profile/api-tokens",
        headers,
        expect=201,
        json={"name": "ci", "expiresInDays": 1},
    )
    token = (await made.get_json())["secret"]
    await call(client, "GET", "/api/v1/auth/me", {"Authorization": f"Bearer {token}"})
    mfa = await call(client, "POST", "/api/v1/profile/mfa/setup", headers)
    secret_scan.add([token, (await mfa.get_json())["secret"]])
    # A backup with a password, then a password change.
    backup = await call(
        client, "POST", "/api/v1/backup/export", headers, json={"password": "Backup-Pw-123456"}
    )
    await backup.get_data()
    await call(
        client,
        "PUT",
        "/api/v1/profile/password",
        headers,
        json={"currentPassword": PASSWORD, "newPassword": "New-Admin-Pw-77x"},
    )

    async with kernel.db.session() as session:
        rows = (await session.exec(select(AuditEntry))).all()
    audit = [json.dumps(row.model_dump(mode="json"), ensure_ascii=False) for row in rows]
    assert len(audit) > 10 and server_log.lines  # the run did what it says
    expected = {
        "Conn-Secret-pw-1",
        "Ldap-Bind-Secret-9",
        "Oidc-Client-Secret-7",
        "Ldap-Test-Secret-3",
        "Ldap-User-Secret-5",
        "Wrong-Pw-3141",
        BOT_TOKEN,
        "Backup-Pw-123456",
        "New-Admin-Pw-77x",
    }
    assert expected <= secret_scan.values  # the ledger picked up what the requests carried
    leaks = []
    for value in sorted(secret_scan.values):
        forms = needles(value)
        for where, texts in (("log", server_log.lines), ("audit", audit)):
            for text in texts:
                if any(form.decode() in text for form in forms):
                    leaks.append(f"{where}: {value[:30]!r} in {text[:300]}")
    assert not leaks, "\n".join(leaks)
