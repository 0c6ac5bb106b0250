"""The terminal in the browser: throughput and keystroke echo in Chromium vs a Python client.

.venv/bin/python bench/web_terminal.py [--size 64] [--rounds 3] [--keystrokes 200]

A real ``hostgate serve`` in front of OpenSSH sshd (``testsupport.sshd``, needs root
for its login user) and Debian's Chromium through Playwright, signed in through the
form, with the app's terminal tab open on the connection. Printed:

- throughput: ``cat`` of a ``--size`` MiB text file (random base64 lines, like log
  output), then ``echo`` of a marker, in an interactive shell:
  - **browser**: typed into the app's terminal tab; from the Enter key (its keydown in
    the page) until the marker is on the screen. No observer runs while the output
    comes in: the last bytes of each socket frame are watched for the marker, then
    the screen's rows are read once per animation frame until it shows (at most one
    frame late). Everything the socket brought had been parsed and the screen drawn.
    ``--compare-end`` adds a round ended by a MutationObserver on xterm.js's rows
    (how this bench measured first; it cost the page 2-11% more CPU per MiB).
  - **python**: the same command through ``/ws/ssh`` with the ``websockets`` client
    (permessage-deflate, as the browser negotiates), until the marker is read.
  ``--rounds`` rounds alternate the two; medians, and the median of the per-round
  ratios. Goal: browser >= 0.8x python.
- keystroke to echo: one key, its echo on the screen (from its keydown in the page to
  the row changing) vs sent and its echo read by the Python client; p50 and p99 over
  ``--keystrokes`` keys each.

The page draws with xterm.js's DOM renderer, which is also what makes the screen
readable here: this Chromium's WebGL2 is SwiftShader, a software rasteriser, on which
the app chooses the DOM renderer itself (WebGL2 is refused here too, as in the e2e
tests, so the figure does not depend on that choice). ``--trace FILE`` writes a Chromium
performance trace of one browser ``cat`` (open it in chrome://tracing or Perfetto).
No assertions: figures only. Note the load average, printed with the figures: on a
shared machine the browser's processes, the gateway and sshd compete for the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (  # noqa: E402
    Row,
    median,
    percentile,
    print_table,
    socket_cat,
    socket_keystrokes,
    terminal_socket,
    text_file,
)

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess  # noqa: E402
from testsupport.sshd import SshdServer, start_sshd  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Before the app loads: no WebGL2 (xterm.js falls back to its DOM renderer), the bytes
# each terminal socket brings counted, and helpers that wait for text on the screen.
PAGE = """
const getContext = HTMLCanvasElement.prototype.getContext;
HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
  return kind === "webgl2" ? null : getContext.call(this, kind, ...rest);
};
window.hgBytes = 0;
window.hgLastFrame = 0;
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (event) => {
      if (event.data instanceof ArrayBuffer) {
        window.hgBytes += event.data.byteLength;
        window.hgLastFrame = performance.now();
        if (window.hgWant) hgSocketTail(event.data);
      }
    });
  }
};
// --end socket: no observer on the screen while the output runs; the frames' last bytes
// are watched for the marker, then the screen is checked once per animation frame
const tailDecoder = new TextDecoder();
let socketTail = "";
const hgSocketTail = (data) => {
  const bytes = new Uint8Array(data, Math.max(0, data.byteLength - 512));
  socketTail = (socketTail + tailDecoder.decode(bytes)).slice(-1024);
  if (!socketTail.includes(window.hgWant)) return;
  const text = window.hgWant;
  window.hgWant = "";
  const check = () => {
    if (window.hgText().includes(text)) window.hgFound(performance.now());
    else requestAnimationFrame(() => setTimeout(check, 0));
  };
  requestAnimationFrame(() => setTimeout(check, 0));
};
window.hgArmSocket = (text) => {
  let start = -1;
  const down = (event) => { if (start < 0) start = event.timeStamp; };
  document.addEventListener("keydown", down, true);
  socketTail = "";
  window.hgWant = text;
  window.hgDone = new Promise((resolve) => {
    window.hgFound = (end) => {
      document.removeEventListener("keydown", down, true);
      resolve([start, end]);
    };
  });
};
window.hgText = () => {
  const rows = document.querySelector(".xterm-rows");
  return rows ? rows.textContent.replace(/\\u00a0/g, " ") : "";
};
// Arm: the next keydown's time is the start; resolves with [start, end] once `text`
// is on the screen (end: the MutationObserver's callback after the rows changed).
window.hgArm = (text) => {
  let start = -1;
  const down = (event) => { if (start < 0) start = event.timeStamp; };
  document.addEventListener("keydown", down, true);
  window.hgDone = new Promise((resolve) => {
    const rows = document.querySelector(".xterm-rows");
    const check = () => {
      if (start >= 0 && window.hgText().includes(text)) {
        observer.disconnect();
        document.removeEventListener("keydown", down, true);
        resolve([start, performance.now()]);
      }
    };
    const observer = new MutationObserver(check);
    observer.observe(rows, { childList: true, subtree: true, characterData: true });
  });
};
"""


class Setup:
    """The gateway's admin, one SSH connection (host key trusted), a terminal ticket."""

    def __init__(self, gateway: GatewayProcess, server: SshdServer) -> None:
        self.gateway = gateway
        token = gateway.setup_admin()
        self.headers = {"Authorization": f"Bearer {token}"}
        self.api("PUT", "/settings", json={"security.max_sessions_per_user": 1000})
        body = {
            "name": "bench",
            "protocol": "ssh",
            "host": server.host,
            "port": server.port,
            "username": server.username,
            "password": server.password,
        }
        self.connection_id = str(self.api("POST", "/connections", json=body)["id"])
        scan = self.api("POST", f"/connections/{self.connection_id}/host-key/scan")
        if scan["state"] != "trusted":
            fingerprint = scan["presented"]["fingerprint"]
            self.api(
                "POST",
                f"/connections/{self.connection_id}/host-key/accept",
                json={"fingerprint": fingerprint},
            )

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        response = httpx.request(
            method,
            f"{self.gateway.url}/api/v1{path}",
            headers=self.headers,
            timeout=60,
            **kwargs,
        )
        response.raise_for_status()
        return response.json()

    async def socket(self) -> Any:
        """A ``/ws/ssh`` socket (permessage-deflate) resting at the shell prompt."""
        ticket = self.api("POST", "/auth/ws-ticket")["ticket"]
        url = f"{self.gateway.ws_url}/ws/ssh?ticket={ticket}&connectionId={self.connection_id}"
        return await terminal_socket(url)


async def python_cat(setup: Setup, path: Path, marker: int) -> tuple[int, float]:
    """Bytes and seconds for the ``cat`` and its marker through ``/ws/ssh``."""
    socket = await setup.socket()
    moved, elapsed = await socket_cat(socket, path, marker)
    await socket.close()
    return moved, elapsed


async def python_keys(setup: Setup, count: int) -> list[float]:
    return await socket_keystrokes(await setup.socket(), count)


def run(coroutine: Any) -> Any:
    """Run the Python client in a thread of its own (Playwright's sync API holds a loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class Browser:
    """The app's terminal tab on the connection, signed in through the form."""

    def __init__(self, playwright: Any, setup: Setup) -> None:
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = self.browser.new_context(viewport={"width": 1280, "height": 800})
        context.add_init_script(PAGE)
        self.page = page = context.new_page()
        self.errors: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        url = setup.gateway.url
        page.goto(url + "/")
        page.get_by_label("Username").fill("admin")
        page.get_by_label("Password").fill(ADMIN_PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.get_by_role("navigation", name="Connections").wait_for()
        page.goto(f"{url}/connections/{setup.connection_id}")
        page.get_by_role("button", name="Open terminal").click()
        tab = page.get_by_role("region", name="Terminal bench")
        tab.get_by_role("status").filter(has_text="Connected").wait_for(timeout=30_000)
        self.screen = page.get_by_role("region", name="Terminal output of bench")
        page.wait_for_function("window.hgText().includes('$')", timeout=30_000)
        self.screen.click()

    def command(self, text: str, marker: str, until: str = "observer") -> tuple[float, float]:
        """Type ``text``, arm, press Enter; the page's [keydown, marker on screen] times."""
        self.page.keyboard.insert_text(text)
        arm = "hgArmSocket" if until == "socket" else "hgArm"
        self.page.evaluate(f"(t) => window.{arm}(t)", marker)
        self.page.keyboard.press("Enter")
        start, end = self.page.evaluate("window.hgDone")
        return start, end

    def clear(self) -> None:
        self.command("clear; echo CLEARED-$((20+1))", "CLEARED-21")
        self.page.wait_for_timeout(100)

    def cat(self, path: Path, marker: int, until: str = "observer") -> tuple[int, float, float]:
        """Bytes the socket brought, seconds to the marker on screen, seconds to the last frame."""
        self.clear()
        before = self.page.evaluate("window.hgBytes")
        start, end = self.command(f"cat {path}; echo END-$(({marker}))", f"END-{marker}", until)
        moved, last = self.page.evaluate("[window.hgBytes, window.hgLastFrame]")
        if self.errors:
            raise RuntimeError(f"the page failed: {self.errors}")
        return moved - before, (end - start) / 1000, (last - start) / 1000

    def keys(self, count: int) -> list[float]:
        self.clear()
        samples = []
        typed = ""
        for index in range(count):
            key = "abcdefghij"[index % 10]
            typed += key
            self.page.evaluate("(t) => window.hgArm(t)", "$ " + typed)
            self.page.keyboard.press(key)
            start, end = self.page.evaluate("window.hgDone")
            samples.append(end - start)
            if index % 50 == 49:
                self.page.keyboard.press("Control+U")
                self.page.wait_for_timeout(50)
                typed = ""
        return samples

    def close(self) -> None:
        self.browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=64, help="MiB of text to cat")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keystrokes", type=int, default=200)
    parser.add_argument("--trace", type=Path, help="a Chromium trace of one browser cat")
    parser.add_argument(
        "--compare-end",
        action="store_true",
        help="each round also a browser cat ended by a MutationObserver on the screen's rows"
        " (the figure's cat has none: the socket's bytes are watched for the marker, then the"
        " screen is checked once per frame)",
    )
    args = parser.parse_args()

    from hostgate_web.assets import ensure_built
    from playwright.sync_api import sync_playwright

    ensure_built()
    server = start_sshd()
    work = Path(tempfile.mkdtemp(prefix="hg-web-terminal-"))
    gateway = GatewayProcess(work / "data").start()
    path = server.home / "bench-web-terminal.txt"
    try:
        setup = Setup(gateway, server)
        size = text_file(path, args.size)
        os.chmod(path, 0o644)
        print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
        with sync_playwright() as playwright:
            browser = Browser(playwright, setup)
            try:
                run(python_cat(setup, Path("/dev/null"), 1))  # warm up
                browser.cat(Path("/dev/null"), 2)
                python_rates, browser_rates, received_rates, ratios = [], [], [], []
                observer_rates: list[float] = []
                for round_ in range(args.rounds):
                    moved, elapsed = run(python_cat(setup, path, 100 + round_))
                    python_rate = moved / elapsed / 2**20
                    got, seconds, last = browser.cat(path, 200 + round_, until="socket")
                    if got < size:
                        raise RuntimeError(f"the browser got {got} of {size} bytes")
                    browser_rate = got / seconds / 2**20
                    python_rates.append(python_rate)
                    browser_rates.append(browser_rate)
                    received_rates.append(got / last / 2**20)
                    ratios.append(browser_rate / python_rate)
                    print(
                        f"round {round_ + 1}: python {python_rate:.1f} MB/s,"
                        f" browser {browser_rate:.1f} MB/s (last frame after {last:.2f} s,"
                        f" on screen after {seconds:.2f} s),"
                        f" load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
                    if args.compare_end:
                        got, seconds, last = browser.cat(path, 400 + round_, until="observer")
                        observer_rates.append(got / seconds / 2**20)
                        print(
                            f"  browser, MutationObserver: {observer_rates[-1]:.1f} MB/s"
                            f" (last frame after {last:.2f} s, on screen after {seconds:.2f} s)",
                            flush=True,
                        )
                if args.trace:
                    browser.browser.start_tracing(
                        page=browser.page, path=str(args.trace), screenshots=False
                    )
                    browser.cat(path, 300, until="socket")
                    browser.browser.stop_tracing()
                python_keystrokes = run(python_keys(setup, args.keystrokes))
                browser_keystrokes = browser.keys(args.keystrokes)
            finally:
                browser.close()
        rows = [
            Row("cat python client /ws/ssh", median(python_rates), "MB/s"),
            Row(
                "cat browser terminal, on screen",
                median(browser_rates),
                "MB/s",
                median(python_rates),
                ">= 0.8x",
                measured_ratio=median(ratios),
            ),
            Row("  (the browser's socket, last frame)", median(received_rates), "MB/s"),
            *(
                [Row("  (ended by a MutationObserver)", median(observer_rates), "MB/s")]
                if observer_rates
                else []
            ),
            Row(
                "keystroke p50 browser",
                percentile(browser_keystrokes, 50),
                "ms",
                percentile(python_keystrokes, 50),
            ),
            Row(
                "keystroke p99 browser",
                percentile(browser_keystrokes, 99),
                "ms",
                percentile(python_keystrokes, 99),
            ),
        ]
        print_table(rows)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        path.unlink(missing_ok=True)
        gateway.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
