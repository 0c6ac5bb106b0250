"""The SSH terminal tab: xterm.js against the suite's real sshd; the server's command log too."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

# The WebGL renderer draws text on a canvas, which no test can read. Without WebGL2 (as on
# GPUs that lack it) xterm's DOM renderer draws real text: these tests read that.
NO_WEBGL = """
const getContext = HTMLCanvasElement.prototype.getContext;
HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
  return kind === "webgl2" ? null : getContext.call(this, kind, ...rest);
};
"""


def ssh_connection(gateway: Gateway, token: str, server: SshdServer) -> str:
    body = {
        "name": "lab-ssh",
        "protocol": "ssh",
        "host": server.host,
        "port": server.port,
        "username": server.username,
        "password": server.password,
    }
    response = gateway.api("POST", "/connections", token, json=body)
    assert response.status_code == 201, response.text
    connection_id = str(response.json()["id"])
    gateway.trust_host_key(token, connection_id)  # host-key prompts: test_hostkeys.py
    return connection_id


PROMPT = re.compile(r"@[^\s:]+:~\$")


def run(page: Any, screen: Any, command: str, expected: str | re.Pattern[str]) -> None:
    """Enter a command into the terminal and wait for its output on screen.

    The text goes in as one input event: typed key by key, a pause right after a ``$``
    (``again-$((...``) can look like a shell prompt to the server's command log.
    """
    screen.click()
    page.keyboard.insert_text(command)
    page.keyboard.press("Enter")
    expect(screen).to_contain_text(expected)


def test_ssh_terminal_types_resizes_and_reconnects(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    screens: Screens,
) -> None:
    connection_id = ssh_connection(gateway, admin_token, sshd)
    page.context.add_init_script(NO_WEBGL)
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open terminal").click()
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
    tabs = page.get_by_role("navigation", name="Open terminals")
    expect(tabs.get_by_role("link", name="lab-ssh")).to_have_attribute("aria-current", "page")
    screen = page.get_by_role("region", name="Terminal output of lab-ssh")
    expect(screen).to_contain_text(PROMPT)
    run(page, screen, "echo hello-$((6*7))", "hello-42")
    screens.check(page, "terminal")

    # the window size reaches the PTY, and follows the browser window
    run(page, screen, "stty size | sed 's/ /x/;s/^/one-/'", re.compile(r"one-\d+x\d+"))
    first = re.findall(r"one-(\d+)x(\d+)", screen.inner_text())[-1]
    page.set_viewport_size({"width": 900, "height": 600})
    page.wait_for_timeout(300)  # ResizeObserver, then the resize frame

    run(page, screen, "stty size | sed 's/ /x/;s/^/two-/'", re.compile(r"two-\d+x\d+"))
    second = re.findall(r"two-(\d+)x(\d+)", screen.inner_text())[-1]
    assert second != first and int(second[1]) < int(first[1])

    # the shell ends: the server's reason, then one click to reconnect
    run(page, screen, "exit", "exit")
    expect(tab.get_by_role("alert")).to_have_text(re.compile(r"Disconnected: .+"))
    tab.get_by_role("button", name="Reconnect").click()
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
    expect(screen).to_contain_text(PROMPT)  # a fresh shell, on a cleared screen
    run(page, screen, "echo again-$((40+2))", "again-42")

    # closing the tab ends the session
    tabs.get_by_role("button", name="Close lab-ssh").click()
    expect(tabs).to_have_count(0)
    expect(page).to_have_url(gateway.url + "/")

    # what the server saw: the typed commands in the two sessions' command logs
    def commands() -> list[str]:
        sessions = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
        assert len(sessions) == 2
        found = []
        for session in sessions:
            log = gateway.api("GET", f"/sessions/{session['id']}/commands", admin_token).json()
            found += [entry["command"] for entry in log["commands"]]
        return found

    for _ in range(50):  # the log of the session just closed is written as it ends
        if "echo again-$((40+2))" in commands():
            break
        page.wait_for_timeout(200)
    assert "echo hello-$((6*7))" in commands()
    assert "echo again-$((40+2))" in commands()


def test_terminal_code_loads_only_with_the_first_terminal(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
) -> None:
    connection_id = ssh_connection(gateway, admin_token, sshd)
    loaded: list[str] = []
    page.on("request", lambda request: loaded.append(request.url))
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    expect(page.get_by_role("button", name="Open terminal")).to_be_visible()
    assert not any("/assets/session-" in url for url in loaded)
    page.get_by_role("button", name="Open terminal").click()
    expect(page.get_by_role("status").filter(has_text="Connected")).to_be_visible(timeout=30_000)
    assert any("/assets/session-" in url for url in loaded)
