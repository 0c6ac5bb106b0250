"""Driving the app's terminal tab in the e2e tests: the SSH connection, opening a tab,
typing a command and waiting for its output, the PTY size, the server's command log.

The ``lab_ssh`` fixture (conftest.py) does the usual start: the connection
(``server_connection``), the page with xterm's DOM renderer, signed in as admin.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from playwright.sync_api import expect

if TYPE_CHECKING:
    from .conftest import Gateway

# The WebGL renderer draws text on a canvas, which no test can read. Without WebGL2 (as on
# GPUs that lack it) xterm's DOM renderer draws real text: these tests read that.
NO_WEBGL = """
const getContext = HTMLCanvasElement.prototype.getContext;
HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
  return kind === "webgl2" ? null : getContext.call(this, kind, ...rest);
};
"""

PROMPT = re.compile(r"@[^\s:]+:~\$")


def open_terminal(
    page: Any, connection_id: str, name: str, prompt: str | re.Pattern[str] = PROMPT
) -> Any:
    """Open a terminal tab for the connection (through the app, no reload); its screen,
    once the tab says Connected and the screen shows ``prompt``."""
    page.evaluate(
        "path => { history.pushState({}, '', path); dispatchEvent(new PopStateEvent('popstate')) }",
        f"/connections/{connection_id}",
    )
    expect(page.get_by_role("button", name="Open terminal")).to_be_visible()
    tabs = page.locator(f"section[aria-label='Terminal {name}']")
    index = tabs.count()
    page.get_by_role("button", name="Open terminal").click()
    tab = tabs.nth(index)  # a locator that stays on this tab
    expect(tab.get_by_role("status").first).to_have_text("Connected", timeout=30_000)
    screen = tab.get_by_role("region", name=f"Terminal output of {name}")
    expect(screen).to_contain_text(prompt, timeout=20_000)
    return screen


def run(page: Any, screen: Any, command: str, expected: str | re.Pattern[str]) -> None:
    """Enter a command into the terminal and wait for its output on screen.

    The text goes in as one input event: typed key by key, a pause right after a ``$``
    (``again-$((...``) can look like a shell prompt to the server's command log.
    """
    screen.click()
    page.keyboard.insert_text(command)
    page.keyboard.press("Enter")
    expect(screen).to_contain_text(expected)


def size(page: Any, screen: Any, marker: str) -> tuple[int, int]:
    """The PTY's size as the server sees it (``stty size``): rows, columns."""
    run(page, screen, f"stty size | sed 's/ /x/;s/^/{marker}-/'", re.compile(rf"{marker}-\d+x\d+"))
    rows, cols = re.findall(rf"{marker}-(\d+)x(\d+)", screen.inner_text())[-1]
    return int(rows), int(cols)


def commands_seen(gateway: Gateway, token: str, page: Any, wanted: list[str]) -> list[str]:
    """Every command in the sessions' command logs, once ``wanted`` are all there (or 10 s)."""
    found: list[str] = []
    for _ in range(50):
        found = []
        for session in gateway.api("GET", "/sessions", token).json()["sessions"]:
            log = gateway.api("GET", f"/sessions/{session['id']}/commands", token).json()
            found += [entry["command"] for entry in log["commands"]]
        if all(command in found for command in wanted):
            break
        page.wait_for_timeout(200)
    return found
