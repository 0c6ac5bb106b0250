"""Connections tests: a fake protocol pack for validation, the real ssh pack for sshd.

Every GET response in the suite is scanned for secret values (``secret_scan`` in
``testsupport.fixtures``); here ``s3cr3t`` is one too, so a secret embedded in a
longer value is caught as well.
"""

from __future__ import annotations

import hostgate_access.plugin as access_plugin
import hostgate_ssh.plugin as ssh_plugin
import pytest
from hostgate import ConnectionField, ProtocolSpec, hookimpl

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
    return [FakeProtocols(), ssh_plugin, access_plugin]


@pytest.fixture(autouse=True)
def marker_is_secret(secret_values: set[str]) -> None:
    """Values containing ``s3cr3t`` are secrets in these tests (see ``secret_scan``)."""
    secret_values.add(MARKER)
