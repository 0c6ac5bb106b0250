"""Connections tests: a fake protocol pack for validation, the real ssh pack for sshd.

Every GET response these tests make is scanned for secret values (see
``secret_scan``): secrets used in these tests contain ``s3cr3t``, and the real
sshd's password and key are added by the tests that use them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import hostgate_ssh.plugin as ssh_plugin
import pytest
from hostgate import ConnectionField, ProtocolSpec, hookimpl
from quart import Quart

from testsupport.sshd import private_sshd, sshd  # noqa: F401

MARKER = "s3cr3t"


class FakeProtocols:
    """Two protocols the kernel knows nothing about, declared the way a pack would."""

    @hookimpl
    def register_protocols(self) -> list[ProtocolSpec]:
        return [
            ProtocolSpec(
                name="fakedesk",
                default_port=7900,
                title="Fake desktop",
                fields=(
                    ConnectionField("domain", str),
                    ConnectionField("secure", bool, default=False),
                    ConnectionField("retries", int),
                    ConnectionField("token", str, secret=True),
                ),
            ),
            ProtocolSpec(
                name="fakeshare",
                default_port=4450,
                fields=(ConnectionField("share", str, required=True),),
            ),
        ]

    @hookimpl
    def register_permissions(self) -> dict[str, list[str]]:
        return {"connections": ["connections.use_fakedesk", "connections.use_fakeshare"]}


@pytest.fixture
def plugins() -> list[object]:
    return [FakeProtocols(), ssh_plugin]


class ScanningClient:
    """The test client, recording every GET response body for the secret scan."""

    def __init__(self, inner: Any, seen: list[tuple[str, str]]) -> None:
        self._inner = inner
        self._seen = seen

    async def get(self, path: str, *args: Any, **kwargs: Any) -> Any:
        response = await self._inner.get(path, *args, **kwargs)
        self._seen.append((path, await response.get_data(as_text=True)))
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def secret_values() -> set[str]:
    """Strings that must never appear in a GET response (tests add their own)."""
    return {MARKER}


@pytest.fixture
def secret_scan(secret_values: set[str]) -> Iterator[list[tuple[str, str]]]:
    """Fails the test if any GET response held a secret.

    ``/connections/:id/session`` is the one credential route: its ``password``
    field is allowed (the owner's own password), nothing else in it is.
    """
    seen: list[tuple[str, str]] = []
    yield seen
    found = leaks(seen, secret_values)
    assert not found, f"GET responses returned secrets: {found}"


def leaks(seen: list[tuple[str, str]], secret_values: set[str]) -> list[str]:
    """``"GET path"`` of every recorded response that holds a secret value."""
    found = []
    for path, body in seen:
        text = body
        if path.split("?")[0].endswith("/session"):
            data = json.loads(body)
            if isinstance(data, dict):
                data.pop("password", None)
            text = json.dumps(data)
        if any(secret in text for secret in secret_values):
            found.append(f"GET {path}: {body[:200]}")
    return found


@pytest.fixture
def client(app: Quart, secret_scan: list[tuple[str, str]]) -> ScanningClient:
    return ScanningClient(app.test_client(), secret_scan)
