"""The terminal in the browser: throughput and keystroke echo in Chromium vs a Python client.

.venv/bin/python bench/studies/web_terminal.py [--size 64] [--rounds 3] [--keystrokes 200]
    [--variants app,direct,...] [--trace FILE]

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
``--variants``: the page's levers measured off and on in one run (``VARIANTS``
below; each a tab of its own, set through ``window.hgTerminalBench``, which the app's
``lib/terminal/session.ts`` reads): every round cats once in each, in a rotating order,
after the Python client. For each: MB/s, the ratio to the Python client of its round,
and the page's cost per MiB of output: the renderer process's CPU (psutil; the
renderer that did the most in that ``cat``), all Chromium processes' CPU (renderers,
browser, GPU/compositing, network service), its main thread's task, script, layout
and style time (the DevTools ``Performance.getMetrics`` counters: wall time, inflated
on a loaded machine; the CPU figures are the steady ones), and the animation frames
run per MiB (xterm.js draws the screen in one), xterm.js's own drawings (``onRender``) and
the writes it was given per MiB.
The ceiling (``--variants app,appplain,ceiling,ceiling100ms``): a plain WebSocket server in
the bench (``plain_terminal.py``, no gateway, no sshd) replays the bytes of one ``cat``
through the gateway, in the frame sizes the app's tab got them. ``ceiling``: a page with
xterm.js alone (the app terminal's options, read from its tab) writing each frame as it
comes; ``ceiling100ms``: the same joining frames per 100 ms as the app's feed does; what
xterm.js reaches in this Chromium at all, and each tab's rate as a ratio of it in the same
round. ``appplain``: the app's terminal fed by that server (the app's code, no gateway).
No assertions: figures only. Note the load average, printed with the figures: on a
shared machine the browser's processes, the gateway and sshd compete for the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
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
from plain_terminal import PlainServer, record_cat  # noqa: E402
from plain_terminal import page as page_html  # noqa: E402

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
window.hgFrames = 0;
// animation frame callbacks run: xterm.js draws in one (the bench's own checks add a few)
window.hgDraws = 0;
const animationFrame = window.requestAnimationFrame.bind(window);
window.requestAnimationFrame = (callback) =>
  animationFrame((time) => { window.hgDraws += 1; callback(time); });
window.hgLastFrame = 0;
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (event) => {
      if (event.data instanceof ArrayBuffer) {
        window.hgBytes += event.data.byteLength;
        window.hgFrames += 1;
        window.hgLastFrame = performance.now();
        if (window.hgSizes) window.hgSizes.push(event.data.byteLength);
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


# The levers a run can compare (``--variants``): what the app's terminal does by default
# ("app") and each lever turned off or changed (window.hgTerminalBench, read by
# lib/terminal/session.ts: ``batch`` the most bytes joined per write, 0 = each socket
# frame written as it comes; ``interval`` ms between writes during a flood, 0 = a write
# as soon as the last is parsed; ``options`` xterm.js's). The bench's own: ``plain`` the
# app's terminal on the plain server (plain_terminal.py: the frames of a real ``cat``
# replayed, no gateway, no sshd); ``ceiling`` xterm.js alone with the app's options on
# that server, each frame written as it comes (what xterm.js reaches in this Chromium at
# all) or, with ``interval``, joined as the app's feed does; ``patches`` its bench-only
# changes (plain_terminal.PATCHES).
VARIANTS: dict[str, dict[str, Any]] = {
    "app": {},
    "ceiling": {"ceiling": True},
    "ceilingnosync": {"ceiling": True, "patches": ["nosync"]},
    "ceiling100ms": {"ceiling": True, "interval": 100},
    "ceiling100msnosync": {"ceiling": True, "interval": 100, "patches": ["nosync"]},
    "appplain": {"plain": True},
    "direct": {"batch": 0},
    "joined": {"interval": 0},
    "every33ms": {"interval": 33},
    "every50ms": {"interval": 50},
    "every200ms": {"interval": 200},
    "batch1m": {"batch": 2**20},
    "scrollback0": {"options": {"scrollback": 0}},
    "scrollback1000": {"options": {"scrollback": 1000}},
    "scrollback50000": {"options": {"scrollback": 50000}},
    "contrast1": {"options": {"minimumContrastRatio": 1}},
    "smooth0": {"options": {"smoothScrollDuration": 0}},
    "noglyphs": {"options": {"customGlyphs": False, "rescaleOverlappingGlyphs": False}},
}

# The DevTools counters read around each cat (seconds of the page's main thread).
METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def chromium_cpu() -> dict[int, tuple[bool, float]]:
    """CPU seconds of each Chromium process under this one (and whether it is a renderer)."""
    seconds = {}
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() not in ("chromium", "chrome", "headless_shell"):
                continue
            times = child.cpu_times()
            renderer = "--type=renderer" in " ".join(child.cmdline())
            seconds[child.pid] = (renderer, times.user + times.system)
        except psutil.Error:
            continue
    return seconds


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


async def recorded_cat(setup: Setup, path: Path) -> list[bytes]:
    """The frames of one ``cat`` of ``path`` through ``/ws/ssh`` (the plain server replays them)."""
    socket = await setup.socket()
    frames = await record_cat(socket, path, 999)
    await socket.close()
    return frames


async def python_keys(setup: Setup, count: int) -> list[float]:
    return await socket_keystrokes(await setup.socket(), count)


def run(coroutine: Any) -> Any:
    """Run the Python client in a thread of its own (Playwright's sync API holds a loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class Browser:
    """The app's terminal tab on the connection, signed in through the form."""

    def __init__(
        self,
        browser: Any,
        setup: Setup,
        name: str = "app",
        levers: dict[str, Any] | None = None,
        plain: PlainServer | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """The app's tab (``levers``: ``VARIANTS``), or with ``ceiling`` among them
        xterm.js alone with ``options`` on ``plain`` (the app's options, ``app_options``)."""
        self.browser = browser
        self.name = name
        levers = dict(levers or {})
        ceiling = levers.pop("ceiling", False)
        patches = levers.pop("patches", [])
        if levers.pop("plain", False) or ceiling:
            assert plain is not None
            levers["url"] = plain.url
        # the app's CSP allows sockets to its own origin only: not to the plain server
        context = browser.new_context(
            viewport={"width": 1280, "height": 800}, bypass_csp="url" in levers
        )
        context.add_init_script(PAGE)
        context.add_init_script(f"window.hgTerminalBench = {json.dumps(levers)};")
        self.page = page = context.new_page()
        self.cdp = context.new_cdp_session(page)
        self.cdp.send("Performance.enable")
        self.cost: dict[str, float] = {}
        self.errors: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        if ceiling:
            assert plain is not None and options is not None
            # the app's blink is a class toggled twice a second (lib/terminal/renderer.ts),
            # xterm.js's own a CSS animation drawing every frame: none here
            interval = levers.get("interval", 0)
            plain.html = page_html(dict(options, cursorBlink=False), plain.url, patches, interval)
            page.goto(plain.origin + "/")
        else:
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
        # xterm.js's own count of drawings (onRender) and the writes it was given
        page.evaluate(
            """() => {
              const term = window.hgTerminal;
              window.hgRenders = 0;
              window.hgWrites = 0;
              term.onRender(() => { window.hgRenders += 1; });
              const write = term.write.bind(term);
              term.write = (data, done) => { window.hgWrites += 1; write(data, done); };
            }"""
        )
        self.screen.click()

    def app_options(self) -> dict[str, Any]:
        """The app terminal's xterm.js options, its columns and rows among them."""
        return dict(
            self.page.evaluate(
                """() => {
                  const term = window.hgTerminal;
                  const options = {};
                  for (const key in term.options) options[key] = term.options[key];
                  Object.assign(options, { cols: term.cols, rows: term.rows });
                  return JSON.parse(JSON.stringify(options));
                }"""
            )
        )

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

    def metrics(self) -> dict[str, float]:
        found = self.cdp.send("Performance.getMetrics")["metrics"]
        return {m["name"]: m["value"] for m in found if m["name"] in METRICS}

    def cat(self, path: Path, marker: int, until: str = "observer") -> tuple[int, float, float]:
        """Bytes the socket brought, seconds to the marker on screen, seconds to the last frame.

        ``self.cost``: what the cat cost the page, in ms per MiB (``renderer`` CPU and
        the main thread's ``METRICS``).
        """
        self.clear()
        counters_js = "[window.hgBytes, window.hgFrames, window.hgDraws, hgRenders, hgWrites]"
        before = self.page.evaluate(counters_js)
        cpu, counters = chromium_cpu(), self.metrics()
        start, end = self.command(f"cat {path}; echo END-$(({marker}))", f"END-{marker}", until)
        cpu_after, counters_after = chromium_cpu(), self.metrics()
        moved, frames, draws, renders, writes = self.page.evaluate(counters_js)
        last = self.page.evaluate("window.hgLastFrame")
        if self.errors:
            raise RuntimeError(f"the page failed: {self.errors}")
        mib = (moved - before[0]) / 2**20
        spent = {
            pid: (renderer, seconds - cpu.get(pid, (renderer, 0.0))[1])
            for pid, (renderer, seconds) in cpu_after.items()
        }
        busiest = max(seconds for renderer, seconds in spent.values() if renderer)
        self.cost = {
            "renderer": busiest * 1000 / mib,
            "chromium": sum(seconds for _, seconds in spent.values()) * 1000 / mib,
            "frame KiB": mib * 1024 / max(1, frames - before[1]),
            "draws": (draws - before[2]) / mib,
            "renders": (renders - before[3]) / mib,
            "writes": (writes - before[4]) / mib,
        }
        for name in METRICS:
            self.cost[name] = (counters_after[name] - counters[name]) * 1000 / mib
        return moved - before[0], (end - start) / 1000, (last - start) / 1000

    def frame_sizes(self, path: Path, marker: int) -> list[int]:
        """The sizes of the socket frames a ``cat`` of ``path`` brought this tab."""
        self.page.evaluate("window.hgSizes = []")
        self.cat(path, marker, until="socket")
        return list(self.page.evaluate("window.hgSizes.splice(0)"))

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
        self.page.context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=64, help="MiB of text to cat")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keystrokes", type=int, default=200)
    parser.add_argument(
        "--variants",
        default="app",
        help=f"comma-separated, each a tab with its levers: {', '.join(VARIANTS)}",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        help="a Chromium trace of one browser cat (one per variant: FILE-<variant>.json)",
    )
    parser.add_argument(
        "--compare-end",
        action="store_true",
        help="each round also a browser cat ended by a MutationObserver on the screen's rows"
        " (the figure's cat has none: the socket's bytes are watched for the marker, then the"
        " screen is checked once per frame)",
    )
    args = parser.parse_args()
    names = args.variants.split(",")
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")

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
        plain = None
        if any({"plain", "ceiling"} & VARIANTS[name].keys() for name in names):
            frames = run(recorded_cat(setup, path))
            plain = PlainServer(frames)
            average = sum(map(len, frames)) / len(frames) / 1024
            print(
                f"plain server: {len(frames)} frames of {average:.0f} KiB on average"
                " (one cat through the gateway, replayed)",
                flush=True,
            )
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            tabs = [
                Browser(chromium, setup, name, VARIANTS[name], plain)
                for name in names
                if "ceiling" not in VARIANTS[name]
            ]
            if len(tabs) < len(names):
                app = tabs[0] if tabs else Browser(chromium, setup, "app", {}, plain)
                options = app.app_options()
                if not tabs:
                    app.close()
                tabs += [
                    Browser(chromium, setup, name, VARIANTS[name], plain, options)
                    for name in names
                    if "ceiling" in VARIANTS[name]
                ]
                tabs.sort(key=lambda tab: names.index(tab.name))
            try:
                rows = measure(args, setup, tabs, path, size, plain)
            finally:
                for tab in tabs:
                    tab.close()
                chromium.close()
                if plain:
                    plain.stop()
        print_table(rows)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        path.unlink(missing_ok=True)
        gateway.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def resplit(frames: list[bytes], sizes: list[int]) -> list[bytes]:
    """The bytes of ``frames`` cut into pieces of ``sizes`` (the big ones: not an echo)."""
    data = b"".join(frames)
    pieces, offset = [], 0
    for size in sizes:
        if size < 1024:
            continue
        pieces.append(data[offset : offset + size])
        offset += size
        if offset >= len(data):
            break
    if offset < len(data):
        pieces.append(data[offset:])
    return [piece for piece in pieces if piece]


def measure(
    args: argparse.Namespace,
    setup: Setup,
    tabs: list[Browser],
    path: Path,
    size: int,
    plain: PlainServer | None = None,
) -> list[Row]:
    """Alternating rounds (the Python client, then each tab in a rotating order); the rows."""
    run(python_cat(setup, Path("/dev/null"), 1))  # warm up
    for index, tab in enumerate(tabs):
        tab.cat(Path("/dev/null"), 2 + index)
    gateway_tabs = [tab for tab in tabs if not VARIANTS[tab.name].keys() & {"plain", "ceiling"}]
    if plain is not None and gateway_tabs:
        # the plain server's frames: the bytes of the gateway's cat in the sizes the app's
        # tab got them (bigger than the Python client's: the gateway joins what waits)
        app = gateway_tabs[0]
        plain.frames = resplit(plain.frames, app.frame_sizes(path, 990))
        print(
            f"plain server: {len(plain.frames)} frames of"
            f" {size / len(plain.frames) / 1024:.0f} KiB on average, as the app's tab got them",
            flush=True,
        )
    python_rates: list[float] = []
    rates: dict[str, list[float]] = {tab.name: [] for tab in tabs}
    received: dict[str, list[float]] = {tab.name: [] for tab in tabs}
    ratios: dict[str, list[float]] = {tab.name: [] for tab in tabs}
    # each tab's rate over each ceiling's (xterm.js alone, unpatched) in the same round
    ceilings = [
        tab.name
        for tab in tabs
        if VARIANTS[tab.name].get("ceiling") and not VARIANTS[tab.name].get("patches")
    ]
    of_ceiling: dict[tuple[str, str], list[float]] = {
        (tab.name, ceiling): [] for tab in tabs for ceiling in ceilings
    }
    costs: dict[str, list[dict[str, float]]] = {tab.name: [] for tab in tabs}
    observer_rates: list[float] = []
    marker = 1000
    for round_ in range(args.rounds):
        moved, elapsed = run(python_cat(setup, path, marker))
        marker += 1
        python_rate = moved / elapsed / 2**20
        python_rates.append(python_rate)
        print(f"round {round_ + 1}: python {python_rate:.1f} MB/s", flush=True)
        shift = round_ % len(tabs)
        round_rates: dict[str, float] = {}
        for tab in tabs[shift:] + tabs[:shift]:
            got, seconds, last = tab.cat(path, marker, until="socket")
            marker += 1
            if got < size:
                raise RuntimeError(f"the browser got {got} of {size} bytes")
            rate = got / seconds / 2**20
            rates[tab.name].append(rate)
            round_rates[tab.name] = rate
            received[tab.name].append(got / last / 2**20)
            ratios[tab.name].append(rate / python_rate)
            costs[tab.name].append(tab.cost)
            print(
                f"  {tab.name}: {rate:.1f} MB/s ({rate / python_rate:.2f}x; last frame after"
                f" {last:.2f} s, on screen after {seconds:.2f} s), per MiB: renderer"
                f" {tab.cost['renderer']:.0f} ms CPU (all Chromium {tab.cost['chromium']:.0f}),"
                f" task {tab.cost['TaskDuration']:.0f}"
                f" (script {tab.cost['ScriptDuration']:.0f}, layout"
                f" {tab.cost['LayoutDuration']:.0f}, style {tab.cost['RecalcStyleDuration']:.0f}),"
                f" {tab.cost['draws']:.1f} animation frames, {tab.cost['renders']:.1f} xterm.js"
                f" renders, {tab.cost['writes']:.1f} writes; socket frames of"
                f" {tab.cost['frame KiB']:.0f} KiB; load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        for (name, ceiling), ratio in of_ceiling.items():
            ratio.append(round_rates[name] / round_rates[ceiling])
        for ceiling in ceilings:
            print(
                f"  of [{ceiling}]: "
                + ", ".join(f"{t.name} {of_ceiling[t.name, ceiling][-1]:.2f}x" for t in tabs),
                flush=True,
            )
        if args.compare_end:
            got, seconds, last = tabs[0].cat(path, marker, until="observer")
            marker += 1
            observer_rates.append(got / seconds / 2**20)
            print(
                f"  {tabs[0].name}, MutationObserver: {observer_rates[-1]:.1f} MB/s"
                f" (last frame after {last:.2f} s, on screen after {seconds:.2f} s)",
                flush=True,
            )
    if args.trace:
        for tab in tabs:
            trace = args.trace
            if len(tabs) > 1:
                trace = trace.with_name(f"{trace.stem}-{tab.name}{trace.suffix or '.json'}")
            tab.browser.start_tracing(page=tab.page, path=str(trace), screenshots=False)
            tab.cat(path, marker, until="socket")
            marker += 1
            tab.browser.stop_tracing()
    python_keystrokes = run(python_keys(setup, args.keystrokes))
    keystrokes = {tab.name: tab.keys(args.keystrokes) for tab in tabs}

    python_rate = median(python_rates)
    rows = [Row("cat python client /ws/ssh", python_rate, "MB/s")]
    for tab in tabs:
        name = tab.name
        rows += [
            Row(
                f"cat browser [{name}], on screen",
                median(rates[name]),
                "MB/s",
                python_rate,
                ">= 0.8x",
                measured_ratio=median(ratios[name]),
            ),
            Row("  (the browser's socket, last frame)", median(received[name]), "MB/s"),
            *(
                Row(f"  of [{ceiling}] (per-round ratio)", median(of_ceiling[name, ceiling]), "x")
                for ceiling in ceilings
                if ceiling != name
            ),
            *(
                Row(f"  {what} per MiB", median(c[what] for c in costs[name]), "ms")
                for what in ("renderer", "chromium", *METRICS)
            ),
            *(
                Row(f"  {what} per MiB", median(c[what] for c in costs[name]), "")
                for what in ("draws", "renders", "writes")
            ),
        ]
    if observer_rates:
        rows.append(Row("  (ended by a MutationObserver)", median(observer_rates), "MB/s"))
    for tab in tabs:
        for pct in (50, 99):
            rows.append(
                Row(
                    f"keystroke p{pct} browser [{tab.name}]",
                    percentile(keystrokes[tab.name], pct),
                    "ms",
                    percentile(python_keystrokes, pct),
                )
            )
    return rows


if __name__ == "__main__":
    main()
