"""Search across recordings in Chromium against the suite's real sshd.

An SSH session recorded through the gateway (output indexing on) is found from the
session history's search box by its output and by a command, the words found marked
in the snippet; a hit opens the player at the moment the text appeared (the player's
position control says so).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, server_connection, signed_in
from .test_sessions import cast_events, recorded_session, wait_position

pytestmark = pytest.mark.peer("chromium")


def test_search_finds_output_and_commands_and_plays_at_the_hit(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    enabled = gateway.api("PUT", "/settings", admin_token, json={"recordings.index_output": True})
    assert enabled.status_code == 200, enabled.text
    connection_id = server_connection(gateway, admin_token, sshd)
    session_id = recorded_session(gateway, admin_token, connection_id)
    appeared = next(
        e[0] for e in cast_events(gateway, admin_token, session_id) if "needle-found" in e[2]
    )
    commands = gateway.api("GET", f"/sessions/{session_id}/commands", admin_token).json()
    logged = {c["command"]: c["elapsed"] / 1000 for c in commands["commands"]}

    # what the server has: the hit is the moment the needle appeared
    found = gateway.api("GET", "/sessions/search?q=needle+found&kind=output", admin_token).json()
    [hit] = found["hits"]
    assert hit["sessionId"] == session_id and abs(hit["offset"] - appeared) < 0.1, hit

    signed_in(page, gateway)
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Sessions").click()
    search = page.get_by_role("search", name="Search recordings")
    search.get_by_label("Find in recordings").fill("NEEDLE found")
    search.get_by_label("In", exact=True).select_option("output")
    search.get_by_role("button", name="Search").click()
    results = page.get_by_role("list", name="Search results")
    expect(results.get_by_role("listitem")).to_have_count(1)
    expect(results).to_contain_text("needle-found")
    expect(results).to_contain_text("Output")
    # the words found are marked (whatever their case in the query), the terminal's lines kept
    expect(results.locator("mark")).to_have_text(["needle-found"])
    shown = results.locator("code").inner_text()
    assert "found\nneedle-found" in shown, shown
    expect(page.get_by_text("1 hit · page 1 of 1")).to_be_visible()
    assert "q=NEEDLE+found" in page.url and "kind=output" in page.url
    screens.check(page, "sessions-search", scroll_to=results)

    results.get_by_role("link", name=re.compile(r"^Play at [0-9:]+, lab-ssh: ")).click()
    expect(page).to_have_url(re.compile(rf"/sessions/{session_id}/play\?t="))
    player = page.get_by_role("region", name="Recording player")
    expect(page.get_by_role("slider", name="Position")).to_be_visible()
    expect(player).to_contain_text("needle-found")
    # with pauses kept as they were the player's clock is the session's: at the hit
    page.get_by_label("Skip pauses longer than").select_option("0")
    wait_position(page, hit["offset"], tolerance=0.15)

    # a command: found in the command log's entries, the player at the moment it was entered
    page.go_back()
    page.go_back()
    search = page.get_by_role("search", name="Search recordings")
    search.get_by_label("Find in recordings").fill("echo second")
    search.get_by_label("In", exact=True).select_option("command")
    search.get_by_role("button", name="Search").click()
    results = page.get_by_role("list", name="Search results")
    expect(results.get_by_role("listitem")).to_have_count(1)
    expect(results).to_contain_text("echo second-$((40+2))")
    expect(results).to_contain_text("Command")
    expect(results.locator("mark")).to_have_text(["echo second"])
    results.get_by_role("link", name=re.compile(r"^Play at [0-9:]+, lab-ssh: ")).click()
    expect(page.get_by_role("slider", name="Position")).to_be_visible()
    page.get_by_label("Skip pauses longer than").select_option("0")
    wait_position(page, logged["echo second-$((40+2))"], tolerance=0.15)

    # nothing found, said in words; clearing the search shows the list again
    page.goto(f"{gateway.url}/sessions?q=never+printed+anywhere")
    expect(page.get_by_role("status").filter(has_text="Nothing found")).to_be_visible()
    page.get_by_role("button", name="Clear search").click()
    history = page.get_by_role("region", name="Session history")
    expect(history.get_by_role("cell", name="lab-ssh", exact=True)).to_be_visible()
