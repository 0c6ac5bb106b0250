"""The SSH terminal tab: xterm.js against the suite's real sshd; the server's command log too."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture
from testsupport.telnetd import TelnetServer, telnetd  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, server_connection, signed_in
from .terminals import PROMPT, commands_seen, open_terminal, run, size

pytestmark = pytest.mark.peer("chromium")


# WebGL2 that says it is drawn by a GPU (the renderer name the app reads to choose).
HARDWARE_WEBGL = """
const getParameter = WebGL2RenderingContext.prototype.getParameter;
const GPU = "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060, D3D11)";
WebGL2RenderingContext.prototype.getParameter = function (name) {
  return name === 0x9246 ? GPU : getParameter.call(this, name);  // UNMASKED_RENDERER_WEBGL
};
"""


@pytest.mark.parametrize("webgl", ["software", "hardware"])
def test_terminal_renderer_follows_the_gpu(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
    webgl: str,
) -> None:
    """xterm.js's WebGL renderer on a GPU; on a software WebGL (this headless Chromium's
    SwiftShader) the DOM renderer, which drew `cat` about five times faster there, with
    a cursor that blinks without a CSS animation."""
    connection_id = server_connection(gateway, admin_token, sshd)
    software = page.evaluate(
        """() => {
          const gl = document.createElement("canvas").getContext("webgl2");
          const info = gl && gl.getExtension("WEBGL_debug_renderer_info");
          return info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : "";
        }"""
    )
    assert "SwiftShader" in software  # the premise: this Chromium's WebGL2 is software
    if webgl == "hardware":
        page.context.add_init_script(HARDWARE_WEBGL)
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open terminal").click()
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    expect(tab.get_by_role("status")).to_have_text("Connected", timeout=30_000)
    screen = page.get_by_role("region", name="Terminal output of lab-ssh")
    canvases = screen.locator(".xterm-screen canvas")
    if webgl == "hardware":
        expect(canvases).not_to_have_count(0)
        expect(screen.locator(".xterm-rows")).to_have_count(0)
    else:
        expect(screen).to_contain_text(PROMPT)  # real text: the DOM renderer's rows
        run(page, screen, "echo drawn-$((6*7))", "drawn-42")
        expect(canvases).to_have_count(0)
        # its cursor blinks by a class on the box, with no CSS animation to draw every frame
        phase = """(off) => {
          const box = document.querySelector(".hg-blink");
          const cursor = box && box.querySelector(".xterm-cursor");
          return cursor && box.classList.contains("hg-blink-off") === off
            && getComputedStyle(cursor).backgroundColor;
        }"""
        hidden = page.wait_for_function(phase, arg=True).json_value()
        shown = page.wait_for_function(phase, arg=False).json_value()
        assert hidden != shown
        cursor = screen.locator(".xterm-cursor")
        assert cursor.evaluate("(c) => c.getAnimations().length") == 0


def test_ssh_terminal_types_resizes_and_reconnects(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    lab_ssh: str,
    screens: Screens,
) -> None:
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    tabs = page.get_by_role("navigation", name="Open terminals")
    expect(tabs.get_by_role("link", name="lab-ssh")).to_have_attribute("aria-current", "page")
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

    # what the server saw: the typed commands in the two sessions' command logs (the log of
    # the session just closed is written as it ends)
    wanted = ["echo hello-$((6*7))", "echo again-$((40+2))"]
    assert all(command in commands_seen(gateway, admin_token, page, wanted) for command in wanted)
    assert len(gateway.api("GET", "/sessions", admin_token).json()["sessions"]) == 2


def test_a_flood_of_output_reaches_the_screen_whole_and_in_order(
    page: Any,
    lab_ssh: str,
) -> None:
    """Megabytes of output, which the terminal hands to xterm.js in batches while it is
    busy (lib/terminal/feed.ts): nothing lost or out of order, and keys answered after."""
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    screen.click()
    page.keyboard.insert_text("seq -w 1 400000 | sed 's/^/n-/'; echo flood-$((6*7))")
    page.keyboard.press("Enter")
    expect(screen).to_contain_text("flood-42", timeout=60_000)

    # the screen's last rows: consecutive numbers up to the last one
    rows = screen.locator(".xterm-rows > div").all_inner_texts()
    numbers = [int(m.group(1)) for row in rows if (m := re.fullmatch(r"n-(\d+)\s*", row))]
    assert len(numbers) > 10
    assert numbers == list(range(400000 - len(numbers) + 1, 400001))
    # lines from earlier batches, in the scrollback, each once
    tab.get_by_role("button", name="Search").click()
    for line in ("n-396001", "n-398765"):
        tab.get_by_label("Search in terminal").fill(line)
        tab.get_by_label("Search in terminal").press("Enter")
        expect(tab.get_by_text(re.compile(r"^Match 1 of 1$"))).to_be_visible()
    tab.get_by_role("button", name="Search").click()

    run(page, screen, "echo after-$((6*7))", "after-42")


def test_terminal_code_loads_only_with_the_first_terminal(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    sshd: SshdServer,  # noqa: F811
) -> None:
    connection_id = server_connection(gateway, admin_token, sshd)
    loaded: list[str] = []
    page.on("request", lambda request: loaded.append(request.url))
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/connections/{connection_id}")
    expect(page.get_by_role("button", name="Open terminal")).to_be_visible()
    assert not any("/assets/session-" in url for url in loaded)
    page.get_by_role("button", name="Open terminal").click()
    expect(page.get_by_role("status").filter(has_text="Connected")).to_be_visible(timeout=30_000)
    assert any("/assets/session-" in url for url in loaded)


def test_split_view_shows_two_terminals_each_fitted_and_resized(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    lab_ssh: str,
    screens: Screens,
) -> None:
    left = open_terminal(page, lab_ssh, "lab-ssh")
    _, alone = size(page, left, "alone")
    right = open_terminal(page, lab_ssh, "lab-ssh")
    expect(left).to_be_hidden()

    # keyboard only: Tab to the button, Enter; the tab opened before shows beside this one
    splitter = page.get_by_role("button", name="Split view")
    expect(splitter).to_have_attribute("aria-pressed", "false")
    splitter.focus()
    page.keyboard.press("Enter")
    expect(splitter).to_have_attribute("aria-pressed", "true")
    expect(left).to_be_visible()
    expect(right).to_be_visible()
    left_box, right_box = left.bounding_box(), right.bounding_box()
    assert left_box["x"] + left_box["width"] <= right_box["x"]  # side by side
    assert abs(left_box["width"] - right_box["width"]) < 4
    screens.check(page, "terminal-split")

    # each half fitted its width and told its server: fewer than half the columns each
    _, right_cols = size(page, right, "right")
    page.keyboard.press("Alt+Shift+ArrowLeft")  # the keyboard moves to the other half
    page.keyboard.insert_text("stty size | sed 's/ /x/;s/^/left-/'")
    page.keyboard.press("Enter")
    expect(left).to_contain_text(re.compile(r"left-\d+x\d+"))
    expect(right).not_to_contain_text("left-")
    links = page.get_by_role("navigation", name="Open terminals").get_by_role("link")
    expect(links.nth(0)).to_have_attribute("aria-current", "page")
    right.click()  # a click in a half makes it the current tab too
    expect(links.nth(1)).to_have_attribute("aria-current", "page")
    expect(left).to_be_visible()
    left.click()
    left_cols = int(re.findall(r"left-\d+x(\d+)", left.inner_text())[-1])
    assert left_cols <= alone // 2 and right_cols <= alone // 2
    assert min(left_cols, right_cols) > alone // 3

    # back to one: the current tab takes the whole width again, and says so
    page.get_by_role("button", name="Split view").click()
    expect(page.get_by_role("button", name="Split view")).to_have_attribute("aria-pressed", "false")
    expect(right).to_be_hidden()
    _, whole = size(page, left, "whole")
    assert whole == alone

    wanted = [f"stty size | sed 's/ /x/;s/^/{m}-/'" for m in ("alone", "right", "left", "whole")]
    seen = commands_seen(gateway, admin_token, page, wanted)
    assert all(command in seen for command in wanted)


def test_copy_on_select_and_paste_asks_for_several_lines(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    lab_ssh: str,
    screens: Screens,
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=gateway.url)
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    run(page, screen, "echo copy$((6*7))word", "copy42word")

    # copy on select: a double-click selects the word, the clipboard has it
    word = screen.get_by_text("copy42word", exact=True).bounding_box()
    page.mouse.dblclick(word["x"] + word["width"] / 2, word["y"] + word["height"] / 2)
    page.wait_for_function("() => navigator.clipboard.readText().then(t => t === 'copy42word')")
    assert page.evaluate("navigator.clipboard.readText()") == "copy42word"

    def paste(text: str) -> None:
        """What the browser does on Ctrl+V (headless Chromium has no paste shortcut)."""
        screen.click()
        screen.locator("textarea").evaluate(
            """(area, text) => {
                const data = new DataTransfer();
                data.setData("text/plain", text);
                area.dispatchEvent(new ClipboardEvent("paste", {
                    clipboardData: data, bubbles: true, cancelable: true }));
            }""",
            text,
        )

    # one line goes straight in, without a question
    paste("echo single-$((3*3))")
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    expect(screen).to_contain_text("echo single-$((3*3))")
    page.keyboard.press("Enter")
    expect(screen).to_contain_text("single-9")

    # several lines: the dialog shows them; Cancel sends nothing
    paste("echo first-$((1+1))\necho second-$((2+2))\n")
    dialog = page.get_by_role("alertdialog", name="Paste several lines?")
    expect(dialog).to_be_visible()
    expect(dialog.locator("pre")).to_have_text("echo first-$((1+1))\necho second-$((2+2))\n")
    screens.check(page, "terminal-paste")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    page.wait_for_timeout(300)
    expect(screen).not_to_contain_text("first-2")

    # ...and Paste sends them (bracketed: bash holds them until Enter), both commands run
    paste("echo first-$((1+1))\necho second-$((2+2))\n")
    dialog.get_by_role("button", name="Paste").click()
    expect(dialog).to_be_hidden()
    expect(screen).to_contain_text("echo second-$((2+2))")
    page.keyboard.press("Enter")
    expect(screen).to_contain_text("first-2")
    expect(screen).to_contain_text("second-4")

    seen = commands_seen(gateway, admin_token, page, ["echo single-$((3*3))"])
    assert "echo single-$((3*3))" in seen

    # the recording (what the server's shell wrote) has each pasted command's output once:
    # the cancelled paste never reached it
    [session] = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
    recording = ""
    for _ in range(50):
        recording = gateway.api("GET", f"/sessions/{session['id']}/recording", admin_token).text
        if "second-4" in recording:
            break
        page.wait_for_timeout(200)
    assert recording.count("first-2\\r\\n") == 1 and recording.count("second-4\\r\\n") == 1


def test_search_in_the_scrollback_and_links_open_apart(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    lab_ssh: str,
    screens: Screens,
) -> None:
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")

    # a marker scrolled far out of sight by 300 lines of output
    run(page, screen, "echo needle-$((7*6)); seq 1 300 | sed 's/^/line-/'", "line-300")
    expect(screen).not_to_contain_text("needle-42")
    tab.get_by_role("button", name="Search").click()
    tab.get_by_label("Search in terminal").fill("needle-42")
    tab.get_by_label("Search in terminal").press("Enter")
    expect(tab.get_by_text(re.compile(r"^Match 1 of 1$"))).to_be_visible()
    expect(screen).to_contain_text("needle-42")  # scrolled to the match
    screens.check(page, "terminal-search")
    tab.get_by_label("Search in terminal").fill("no-such-text")
    tab.get_by_label("Search in terminal").press("Enter")
    expect(tab.get_by_text("No match")).to_be_visible()

    # a URL the server prints is a link: it opens in a new tab, without a way back (noopener)
    # the printed URL differs from the typed command (the shell computes its end), so the
    # wait below ends once the output is there, after `clear`, not at the command's echo
    command = f"clear; echo {gateway.url}/linked-from-the-$((6*7))"
    target = f"{gateway.url}/linked-from-the-42"
    run(page, screen, command, target)
    row = screen.locator(".xterm-rows > div").filter(has_text=target).last
    box = row.bounding_box()
    page.mouse.move(box["x"] + 40, box["y"] + box["height"] / 2)
    # the link addon has found the link under the pointer
    expect(page.locator(".xterm-cursor-pointer")).to_have_count(1)
    with page.context.expect_page() as opened:
        page.mouse.click(box["x"] + 40, box["y"] + box["height"] / 2)
    new_page = opened.value
    new_page.wait_for_load_state()
    assert new_page.url == target
    assert new_page.evaluate("window.opener") is None
    new_page.close()

    # what the server saw
    seen = commands_seen(gateway, admin_token, page, [command])
    assert "echo needle-$((7*6)); seq 1 300 | sed 's/^/line-/'" in seen
    assert command in seen


def test_telnet_terminal_in_a_tab(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    telnetd: TelnetServer,  # noqa: F811
    lab_ssh: str,
) -> None:
    telnet_id = server_connection(
        gateway, admin_token, telnetd, name="lab-telnet", protocol="telnet", trust=False
    )

    # a telnet tab beside an SSH tab: both live, each its own session
    screen = open_terminal(page, telnet_id, "lab-telnet", prompt="$ ")
    run(page, screen, "echo telnet-$((6*7))", "telnet-42")
    rows, cols = size(page, screen, "tn")
    ssh_screen = open_terminal(page, lab_ssh, "lab-ssh")
    run(page, ssh_screen, "echo ssh-$((2*21))", "ssh-42")
    tabs = page.get_by_role("navigation", name="Open terminals")
    tabs.get_by_role("link", name="lab-telnet").click()
    expect(screen).to_be_visible()
    run(page, screen, "echo back-$((40+2))", "back-42")
    tabs.get_by_role("button", name="Close lab-telnet").click()

    # what the server saw: the telnet session's commands, its window size and its recording
    found: dict[str, Any] = {}
    for _ in range(50):
        sessions = gateway.api("GET", "/sessions", admin_token).json()["sessions"]
        found = {s["protocol"]: s for s in sessions}
        if "telnet" in found and found["telnet"].get("endedAt"):
            break
        page.wait_for_timeout(200)
    entry = found["telnet"]
    log = gateway.api("GET", f"/sessions/{entry['id']}/commands", admin_token).json()
    commands = [c["command"] for c in log["commands"]]
    assert "echo telnet-$((6*7))" in commands and "echo back-$((40+2))" in commands
    assert "echo ssh-$((2*21))" not in commands
    recording = gateway.api("GET", f"/sessions/{entry['id']}/recording", admin_token)
    assert recording.status_code == 200
    header = json.loads(recording.text.splitlines()[0])
    assert (header["height"], header["width"]) == (rows, cols) or "telnet-42" in recording.text
    assert "telnet-42" in recording.text
    assert telnetd.password not in recording.text


def test_terminal_preferences_apply_live_to_open_terminals(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    lab_ssh: str,
    screens: Screens,
) -> None:
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    _, before = size(page, screen, "before")
    terminal = screen.locator(".xterm")
    expect(terminal.locator(".xterm-cursor-block")).to_have_count(1)

    # the profile's terminal settings change while the terminal stays open
    page.locator("button[aria-controls='user-menu']").click()
    page.get_by_role("link", name="Your profile").click()
    page.get_by_label("Font size").fill("24")
    page.get_by_label("Cursor", exact=True).select_option("bar")
    page.get_by_label("Colours").select_option(label="Solarized light")
    page.get_by_label("Scrollback lines").fill("5000")
    page.get_by_role("button", name="Save terminal settings").click()
    expect(page.get_by_text("Your terminal settings are saved.")).to_be_visible()
    saved = gateway.api("GET", "/profile/ssh-prefs", admin_token).json()
    assert saved["fontSize"] == 24 and saved["theme"] == "solarized-light"

    # back in the tab (no reload): the new font, cursor, colours, scrollback, and the new size
    tabs = page.get_by_role("navigation", name="Open terminals")
    tabs.get_by_role("link", name="lab-ssh").click()
    expect(terminal.locator(".xterm-cursor-bar")).to_have_count(1)
    expect(screen).to_have_css("background-color", "rgb(253, 246, 227)")
    expect(terminal.locator(".xterm-rows")).to_have_css("font-size", "24px")
    _, after = size(page, screen, "after")
    assert after < before * 0.75  # bigger letters, fewer columns: the server was told
    screens.check(page, "terminal-preferences")

    # 5000 lines of scrollback now (1000 before): the first of 3000 lines is still there
    run(page, screen, "seq 1 3000 | sed 's/^/s-/;s/$/-e/'", "s-3000-e")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    tab.get_by_role("button", name="Search").click()
    tab.get_by_label("Search in terminal").fill("s-1-e")
    tab.get_by_label("Search in terminal").press("Enter")
    expect(tab.get_by_text(re.compile(r"^Match 1 of 1$"))).to_be_visible()


def test_terminal_preferences_follow_in_another_tab_and_on_focus(
    page: Any, gateway: Gateway, admin_token: str, lab_ssh: str
) -> None:
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    terminal = screen.locator(".xterm")
    expect(terminal.locator(".xterm-cursor-block")).to_have_count(1)

    # another tab of the same browser saves new settings in the profile
    other = page.context.new_page()
    other.goto(gateway.url + "/profile")
    other.get_by_label("Font size").fill("20")
    other.get_by_label("Cursor", exact=True).select_option("underline")
    other.get_by_label("Colours").select_option(label="Solarized light")
    other.get_by_role("button", name="Save terminal settings").click()
    expect(other.get_by_text("Your terminal settings are saved.")).to_be_visible()

    # the first tab's open terminal follows, without a reload (and without the focus: the
    # other tab is still in front)
    expect(terminal.locator(".xterm-cursor-underline")).to_have_count(1)
    expect(terminal.locator(".xterm-rows")).to_have_css("font-size", "20px")
    expect(screen).to_have_css("background-color", "rgb(253, 246, 227)")
    other.close()

    # changed elsewhere (another browser: straight through the API): the tab fetches the
    # settings again when it gets the focus back
    changed = gateway.api(
        "PUT",
        "/profile/ssh-prefs",
        admin_token,
        json={**gateway.api("GET", "/profile/ssh-prefs", admin_token).json(), "fontSize": 16},
    )
    assert changed.status_code == 200, changed.text
    expect(terminal.locator(".xterm-rows")).to_have_css("font-size", "20px")
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    expect(terminal.locator(".xterm-rows")).to_have_css("font-size", "16px")
    expect(terminal.locator(".xterm-cursor-underline")).to_have_count(1)


def test_why_a_terminal_closed_is_said_in_words(
    page: Any, gateway: Gateway, admin_token: str, lab_ssh: str
) -> None:
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    tab = page.get_by_role("region", name="Terminal lab-ssh")
    alert = tab.get_by_role("alert")

    # the SSH server's end of the connection dies: its session process is killed
    screen.click()
    page.keyboard.insert_text("kill -9 $PPID")
    page.keyboard.press("Enter")
    expect(alert).to_have_text(
        re.compile(r"^Disconnected: The connection to the server was lost\.\s*Reconnect$"),
        timeout=20_000,
    )
    expect(tab.get_by_role("status").first).to_have_text("Disconnected")

    # the network policy now refuses the server: the reconnect says so, naming the rule
    denied = gateway.api("PUT", "/settings", admin_token, json={"network.deny": "127.0.0.1/32"})
    assert denied.status_code == 200, denied.text
    tab.get_by_role("button", name="Reconnect").click()
    expect(alert).to_contain_text(
        "Disconnected: Refused by the gateway's network policy: connecting to 127.0.0.1 is "
        "not allowed (matches network.deny entry '127.0.0.1/32').",
        timeout=20_000,
    )


def test_escapes_from_the_server_never_reach_the_clipboard_or_the_title(
    page: Any,
    lab_ssh: str,
) -> None:
    """OSC 52 (clipboard write) and OSC 0/2 (title) from the shell change nothing: the app's
    xterm.js has no clipboard addon and follows no title; the text around them shows."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    screen = open_terminal(page, lab_ssh, "lab-ssh")
    title = page.title()
    page.evaluate("navigator.clipboard.writeText('untouched')")
    run(
        page,
        screen,
        r"printf '\033]52;c;%s\007\033]0;%s\007\033]2;%s\007%s\n' "
        '"$(printf hostile-clip | base64)" owned-$((0))title owned-$((1))title '
        "escaped-$((6*7))",
        "escaped-42",
    )
    run(page, screen, "echo after-$((6*7))", "after-42")
    assert page.title() == title
    assert page.evaluate("navigator.clipboard.readText()") == "untouched"
    assert "owned-0title" not in screen.inner_text()
