"""App, kernel, client and user fixtures. Tests never auto-load entry points."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.config import Config
from hostgate.db.models.identity import Role, User
from hostgate.kernel import Kernel
from hostgate.security.passwords import hash_password_sync
from hostgate.security.secretbox import SecretBox
from hostgate.services.identity.identity import ClientInfo
from hostgate.testing import PatientTestApp
from quart import Quart
from sqlmodel import select

from testsupport.secretscan import (
    ScanningClient,
    SecretLedger,
    recording_seal,
    set_current_ledger,
)

PASSWORD = "correct horse battery"
_PASSWORD_HASH = hash_password_sync(PASSWORD)


@pytest.fixture(autouse=True)
def _logging_is_left_as_found() -> Iterator[None]:
    """A test that changes the root logger must not slow down every later test."""
    import logging

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers


@pytest.fixture(scope="session", autouse=True)
def _patient_test_app() -> Iterator[None]:
    """Every ``app.test_app()`` of the session (fixtures of any scope, a test's own) is
    the test kit's :class:`~hostgate.testing.PatientTestApp`, as its ``hostgate_app`` is."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Quart, "test_app_class", PatientTestApp)
        yield


@pytest.fixture(autouse=True)
def secret_scan(monkeypatch: pytest.MonkeyPatch) -> Iterator[SecretLedger]:
    """Fails the test if a GET response held a secret written earlier in it.

    Every Quart test client is a :class:`ScanningClient` for the test, and every value
    the secret box seals is recorded (see ``testsupport.secretscan``).
    """
    ledger = SecretLedger()
    monkeypatch.setattr(Quart, "test_client_class", ScanningClient)
    monkeypatch.setattr(SecretBox, "seal", recording_seal)
    set_current_ledger(ledger)
    yield ledger
    set_current_ledger(None)
    ledger.assert_clean()


@pytest.fixture
def secret_values(secret_scan: SecretLedger) -> set[str]:
    """The test's secret values: add any a GET response must never hold."""
    return secret_scan.values


@pytest.fixture(scope="session")
def template_db(hostgate_database_template: Path) -> Path:
    """A migrated SQLite file to copy into each test's data dir (the test kit's)."""
    return hostgate_database_template


@pytest.fixture
def config(hostgate_config: Config) -> Config:
    """The test kit's config: a temporary data dir, a fixed key, no entry-point loading."""
    return hostgate_config


@pytest.fixture
def plugins() -> list[object]:
    """Extra plugins for the app; override in a pack's conftest to register the pack."""
    return []


@pytest.fixture
async def app(config: Config, plugins: list[object]) -> AsyncIterator[Quart]:
    """A started app (start-up and shut-down hooks run)."""
    application = create_app(config, plugins=plugins)
    async with application.test_app() as test_app:
        yield test_app.app  # type: ignore[attr-defined]


@pytest.fixture
def kernel(app: Quart) -> Kernel:
    """The app's kernel."""
    return kernel_of(app)


@pytest.fixture
def client(app: Quart) -> Any:
    """A test client."""
    return app.test_client()


async def store_unchecked(kernel: Kernel, key: str, value: Any) -> None:
    """Store a setting without the save-time check, as a database from an older release
    (or a restored backup) may hold it: for tests of what happens when it is used."""
    async with kernel.db.session() as session:
        await kernel.settings.write(session, {key: value})
        await session.commit()
    kernel.settings.remember({key: value})


@dataclass
class TestUser:
    """A user created for a test, with a live session token."""

    id: str
    username: str
    password: str
    token: str
    role_id: str

    @property
    def headers(self) -> dict[str, str]:
        """Authorization headers."""
        return {"Authorization": f"Bearer {self.token}"}


MakeUser = Callable[..., Any]


@pytest.fixture
def make_user(kernel: Kernel) -> MakeUser:
    """``await make_user("bob", role="user" | permissions=[...])`` -> TestUser with a token."""
    counter = iter(range(10_000))

    async def make(
        username: str | None = None,
        *,
        role: str | None = "user",
        permissions: Iterable[str] | None = None,
        password: str = PASSWORD,
        email: str = "",
    ) -> TestUser:
        name = username or f"user{next(counter)}"
        async with kernel.db.session() as session:
            if permissions is not None:
                role_row = Role(name=f"role-{name}", permissions=list(permissions))
                session.add(role_row)
                await session.flush()
            else:
                role_row = (await session.exec(select(Role).where(Role.name == role))).one()
            user = User(
                username=name,
                username_key=name.lower(),
                display_name=name.title(),
                email=email,
                password_hash=(
                    _PASSWORD_HASH if password == PASSWORD else hash_password_sync(password)
                ),
                role_id=role_row.id,
            )
            session.add(user)
            await session.commit()
        issued = await kernel.identity.issue_session(user, ClientInfo(ip_address="127.0.0.1"))
        return TestUser(user.id, name, password, issued.token, role_row.id)

    return make


@pytest.fixture
async def admin(make_user: MakeUser) -> TestUser:
    """An admin with every permission."""
    return await make_user("admin", role="admin")  # type: ignore[no-any-return]


@pytest.fixture
def run_cli() -> Callable[..., tuple[int, str, str]]:
    """Run ``python -m hostgate ARGS`` in a subprocess: ``(code, stdout, stderr)``."""
    import subprocess

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Any:
        import os

        proc = subprocess.run(
            [sys.executable, "-m", "hostgate", *args],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            timeout=timeout,
        )
        return proc.returncode, proc.stdout, proc.stderr

    return run


@pytest.fixture
def event_loop_policy() -> Iterator[asyncio.AbstractEventLoopPolicy]:
    """Default policy (kept explicit for pytest-asyncio)."""
    yield asyncio.DefaultEventLoopPolicy()


@pytest.fixture
def make_connection(kernel: Kernel) -> Callable[..., Any]:
    """``await make_connection(owner, protocol, host, port, username=..., password=...)``."""
    import json as _json

    from hostgate.db.models.connections import Connection

    async def make(
        owner: TestUser,
        protocol: str,
        host: str = "127.0.0.1",
        port: int = 22,
        *,
        name: str | None = None,
        username: str = "",
        password: str | None = None,
        private_key: str | None = None,
        extra: dict[str, Any] | None = None,
        secret_extra: dict[str, Any] | None = None,
        shared: bool = False,
    ) -> Connection:
        box = kernel.secrets
        row = Connection(
            owner_id=owner.id,
            name=name or f"{protocol} {host}:{port}",
            protocol=protocol,
            host=host,
            port=port,
            username=username,
            password=box.seal_optional(password),
            private_key=box.seal_optional(private_key),
            extra_config=dict(extra or {}),
            extra_secrets=box.seal(_json.dumps(secret_extra)) if secret_extra else None,
            shared=shared,
        )
        async with kernel.db.session() as session:
            session.add(row)
            await session.commit()
        return row

    return make
