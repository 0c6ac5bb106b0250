"""Administration, system: health, the version and the update banner from a real release
feed, the key warning, and the plugin packs the instance runs, a failed one with its
reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostgate.testing import HttpReceiver, Reply
from playwright.sync_api import expect

from testsupport.receivers import http_receiver  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")


@pytest.fixture
def broken_pack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A pack whose dependency is missing: an entry point to a module that cannot import."""
    root = tmp_path_factory.mktemp("packs")
    (root / "hostgate_broken.py").write_text("import dependency_that_is_not_installed\n")
    dist = root / "hostgate_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hostgate-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[hostgate]\nbroken = hostgate_broken\n")
    yield root


@pytest.fixture
def gateway_env(broken_pack: Path) -> dict[str, str]:
    """The broken pack on the path, and no key in the environment (insecure_key)."""
    return {
        "PYTHONPATH": f"{broken_pack}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "HOSTGATE_ENCRYPTION_KEY": "",
    }


def test_system_screen(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    screens: Screens,
    http_receiver: HttpReceiver,  # noqa: F811
) -> None:
    http_receiver.reply(
        "/feed",
        ok=Reply(200, b'{"version": "99.1.0", "url": "https://example.org/releases/99.1.0"}'),
    )
    running = gateway.api("GET", "/version", admin_token).json()["current"]
    packs = {
        p["name"]: p for p in gateway.api("GET", "/system/plugins", admin_token).json()["plugins"]
    }
    assert packs["broken"]["state"] == "failed"

    signed_in(page, gateway)
    page.goto(gateway.url + "/admin/system")
    expect(page.get_by_role("heading", name="System")).to_be_visible()

    # health
    health = page.get_by_role("region", name="Health")
    expect(health).to_contain_text("Running")
    expect(health).to_contain_text("answered in")

    # the feed at its default (unreachable in tests): the failure is said, no banner
    version = page.get_by_role("region", name="Version")
    expect(version).to_contain_text(running)
    expect(version).to_contain_text("The update check failed")
    expect(page.get_by_text("is available")).to_have_count(0)

    # the key lies next to the data: said until a key is supplied
    key = page.get_by_role("region", name="Encryption key")
    expect(key).to_contain_text("Next to the data")
    expect(key).to_contain_text("HOSTGATE_ENCRYPTION_KEY")

    # every pack the instance found, the failed one with its reason
    table = page.get_by_role("table", name="Plugin packs this gateway found when it started")
    for name, pack in packs.items():
        row = table.get_by_role("row").filter(has=page.get_by_text(name, exact=True))
        expect(row).to_contain_text(pack["version"])
        expect(row).to_contain_text(pack["state"])
    broken = table.get_by_role("row").filter(has=page.get_by_text("broken", exact=True))
    expect(broken).to_contain_text("failed")
    expect(broken).to_contain_text("dependency_that_is_not_installed")
    ssh = table.get_by_role("row").filter(has=page.get_by_text("ssh", exact=True))
    expect(ssh).to_contain_text("protocols")
    expect(page.get_by_role("heading", name="Plugin packs")).to_contain_text("1 failed")

    # a release feed with a newer version: "Check for updates now" brings the banner
    gateway.set_settings(admin_token, updates__feed_url=http_receiver.url("/feed"))
    page.get_by_role("button", name="Check for updates now").click()
    banner = page.get_by_role("status").filter(has_text="hostgate 99.1.0 is available")
    expect(banner).to_contain_text(f"this gateway runs {running}")
    link = banner.get_by_role("link", name="What is new in 99.1.0")
    expect(link).to_have_attribute("href", "https://example.org/releases/99.1.0")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(version).to_contain_text("99.1.0")
    assert http_receiver.received("/feed"), "the gateway never asked the feed"
    assert "system.version_check" in gateway.audit_types(admin_token)
    screens.check(page, "admin-system")

    # an allow list without the feed's host: the check says the policy refused it, in words
    gateway.set_settings(admin_token, network__allow="10.0.0.0/8")
    try:
        page.get_by_role("button", name="Check for updates now").click()
        expect(version).to_contain_text("network policy refused the release feed's address")
        expect(version).not_to_contain_text("target_denied")
        expect(version.get_by_role("link", name="Network access settings")).to_have_attribute(
            "href", "/admin/settings/network"
        )
        screens.check(page, "admin-system-feed-denied")
    finally:
        gateway.set_settings(admin_token, network__allow="")
