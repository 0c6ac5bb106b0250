"""Network policy rules: parsing, matching, and the settings that hold them."""

from __future__ import annotations

import ipaddress

import pytest
from hostgate.services.netpolicy import parse_rules, refusal

from tests.services.connections.support import get_json, send


def check(host, addresses, allow="", deny=""):
    found = refusal(
        host, [ipaddress.ip_address(a) for a in addresses], parse_rules(allow), parse_rules(deny)
    )
    return None if found is None else found[1]


def test_empty_lists_allow_everything():
    assert check("anything.example", ["8.8.8.8", "127.0.0.1", "::1"]) is None


@pytest.mark.parametrize(
    ("host", "addresses", "deny"),
    [
        ("x", ["10.1.2.3"], "10.0.0.0/8"),
        ("x", ["0.0.0.0"], "127.0.0.0/8"),  # "this host" reaches loopback
        ("x", ["::ffff:127.0.0.1"], "127.0.0.1"),  # IPv4-mapped IPv6
        ("x", ["::"], "loopback"),
        ("x", ["169.254.169.254"], "link-local"),
        ("x", ["192.168.1.5"], "private"),
        ("db.corp.example", ["8.8.8.8"], "*.corp.example"),
        ("DB.Corp.Example.", ["8.8.8.8"], "*.corp.example"),
        ("x", ["8.8.8.8", "10.0.0.1"], "10.0.0.0/8"),  # any address denied -> refused
        ("x", ["2001:db8::5"], "2001:db8::/32"),
    ],
)
def test_deny_matches(host, addresses, deny):
    assert check(host, addresses, deny=deny).startswith("matches network.deny entry")


def test_allow_list_needs_a_match_for_every_address():
    assert check("a.corp.example", ["8.8.8.8"], allow="*.corp.example") is None
    assert check("b.example", ["10.0.0.7"], allow="10.0.0.0/8") is None
    assert check("b.example", ["10.0.0.7", "11.0.0.1"], allow="10.0.0.0/8") is not None
    assert check("b.example", ["8.8.8.8"], allow="*.corp.example") == "not covered by network.allow"


async def test_bad_entries_are_refused_by_the_settings_api(client, admin):
    for bad in ["10.*", "http://x", "10.0.0.0/33", "a b/c", "host:22", "10.1"]:
        error = await send(client, "PUT", "/settings", admin, {"network.deny": bad}, expect=400)
        assert "network.deny" in error["error"], bad
    settings = await get_json(client, "/settings", admin)
    assert settings["settings"]["network.deny"] == ""


async def test_policy_settings_are_admin_only_and_not_public(client, admin, make_user):
    await send(client, "PUT", "/settings", admin, {"network.allow": "10.0.0.0/8\n*.corp.example"})
    public = await get_json(client, "/settings/public", admin)
    assert "network.allow" not in public["settings"]
    user = await make_user("user1")
    await send(client, "PUT", "/settings", user, {"network.allow": ""}, expect=403)
