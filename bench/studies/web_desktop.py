"""Desktop latency and frame rate in Chromium: VNC through the relay vs direct, and RDP.

.venv/bin/python bench/studies/web_desktop.py [--samples 40] [--seconds 5]
    [--skip rdp,direct,unrecorded,volume]

A real ``hostgate serve`` (with the web pack's built app), an Xvnc (TigerVNC) and
an xrdp in front of a second Xvnc run on 127.0.0.1; Debian's Chromium is driven by
Playwright. On each X display a window fills the screen (testsupport.xdisplay's
Painter); the script changes its colour on the X server (and waits until the X
server has done it), and the page watches one pixel of the desktop canvas:

- **latency**: from the X server having painted a new colour to the canvas showing
  it (the script's clock and the page's ``performance.timeOrigin + now()`` are the
  same machine's clock; the page polls the pixel every ~4 ms), ``--samples`` times;
- **frames**: the colour changes as fast as the X server takes them for
  ``--seconds``; the canvas's distinct colour changes seen per second.

Three paths, one browser:

- ``vnc relay``: the app's desktop tab (noVNC) over ``/ws/vnc/<id>``, the gateway
  doing VNC authentication and recording the session (``recordings.enabled``);
- ``vnc relay, not recorded``: the same with ``recordings.enabled`` off (the
  recording's cost: recorded >= 0.9x of it);
- ``vnc direct``: the same noVNC (the app's node_modules copy, served as plain ES
  modules) over a WebSocket-to-TCP bridge in this process (what websockify does:
  each binary frame to the socket and back, nothing else) in front of the same Xvnc,
  authenticating itself with the password;
- ``rdp relay``: the app's desktop tab (IronRDP) over ``/ws/rdp-raw`` to xrdp, whose
  VNC module shows the second Xvnc (there is no direct browser path for RDP: IronRDP
  in a browser needs an RDCleanPath proxy).

- ``rdp volume``: bytes per minute of the RDP relay (server to browser, from the
  gateway's ``hostgate_relay_bytes``) and of the browser's WebM recording (the
  session's ``fileSize``), for an idle desktop and for a busy one (the window
  repainted in a new colour as fast as the X server takes it), ``--volume-seconds``
  each: what gateway-side capture of the raw stream would store, next to what the
  browser uploads today (docs/terminals.md, "RDP recordings the gateway enforces").

No assertions: figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import socketserver
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import Row, free_port, median, percentile, print_table  # noqa: E402

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess  # noqa: E402
from testsupport.peers import stop  # noqa: E402
from testsupport.xdisplay import Painter  # noqa: E402
from testsupport.xrdp import start_xrdp  # noqa: E402
from testsupport.xvnc import TEST_PASSWORD, start_xvnc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOVNC = ROOT / "plugins" / "web" / "ui" / "node_modules" / "@novnc" / "novnc"
CHROMIUM = "/usr/bin/chromium"
WIDTH, HEIGHT = 800, 560
COLOURS = [0xC0392B, 0x2471A3, 0x1E8449, 0xB7950B, 0x7D3C98, 0x117A65]

# The page side: one pixel of the canvas, watched.
WATCH = """
window.hgCanvas = (selector) => {
  if (selector !== "rdp") return document.querySelector("canvas");
  return document.querySelector("iron-remote-desktop").shadowRoot.querySelector("canvas");
};
window.hgPixel = (kind, x, y) => {
  const canvas = window.hgCanvas(kind);
  const [r, g, b] = canvas.getContext("2d").getImageData(x, y, 1, 1).data;
  return (r << 16) | (g << 8) | b;
};
window.hgNear = (a, b) =>
  [16, 8, 0].every((s) => Math.abs(((a >> s) & 255) - ((b >> s) & 255)) < 12);
window.hgWait = (kind, x, y, colour) => new Promise((resolve) => {
  const started = performance.now();
  const tick = () => {
    const now = performance.timeOrigin + performance.now();
    if (window.hgNear(window.hgPixel(kind, x, y), colour)) resolve(now);
    else if (performance.now() - started > 10000) resolve(-1);
    else setTimeout(tick, 0);
  };
  tick();
});
window.hgCount = (kind, x, y, ms) => new Promise((resolve) => {
  let last = window.hgPixel(kind, x, y), changes = 0;
  const end = performance.now() + ms;
  const tick = () => {
    const now = window.hgPixel(kind, x, y);
    if (now !== last) { changes += 1; last = now; }
    if (performance.now() < end) setTimeout(tick, 0); else resolve(changes);
  };
  tick();
});
"""

DIRECT_PAGE = """<!doctype html><meta charset="utf-8"><title>noVNC direct</title>
<style>html,body{margin:0;height:100%}#screen{width:100%;height:100%}</style>
<div id="screen"></div>
<script type="module">
import RFB from "./core/rfb.js";
const params = new URLSearchParams(location.search);
const rfb = new RFB(document.getElementById("screen"), params.get("ws"),
  { credentials: { password: params.get("password") } });
rfb.scaleViewport = true;
rfb.addEventListener("connect", () => { document.title = "connected"; });
</script>"""


@contextmanager
def static_novnc() -> Iterator[str]:
    """noVNC's core as plain ES modules, and the direct page, on a free port."""
    page = DIRECT_PAGE.encode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(NOVNC), **kwargs)

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            if self.path.startswith("/direct.html"):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            super().do_GET()

        def log_message(self, *args: Any) -> None:
            pass

    port = free_port()
    server = socketserver.ThreadingTCPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def websocket_bridge(host: str, target_port: int) -> Iterator[str]:
    """A WebSocket-to-TCP bridge (websockify's job) on a free port, in a thread."""
    import websockets

    port = free_port()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stopping: asyncio.Future[None] | None = None

    async def relay(socket: Any) -> None:
        reader, writer = await asyncio.open_connection(host, target_port)

        async def up() -> None:
            async for frame in socket:
                writer.write(frame if isinstance(frame, bytes) else frame.encode())
                await writer.drain()
            writer.close()

        async def down() -> None:
            while data := await reader.read(65536):
                await socket.send(data)
            await socket.close()

        await asyncio.gather(up(), down(), return_exceptions=True)

    async def main() -> None:
        nonlocal stopping
        stopping = loop.create_future()
        async with websockets.serve(relay, "127.0.0.1", port, compression=None, max_size=None):
            ready.set()
            await stopping

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"ws://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(lambda: stopping is not None and stopping.set_result(None))
        thread.join(10)


def measure(
    page: Any, painter: Painter, kind: str, samples: int, seconds: float
) -> dict[str, float]:
    """Latency (ms) samples and changes seen per second at one pixel of the canvas."""
    x, y = 120, 120
    painter.fill(0x000000)
    page.evaluate("([k, x, y]) => window.hgWait(k, x, y, 0)", [kind, x, y])
    latencies: list[float] = []
    for index in range(samples):
        colour = COLOURS[index % len(COLOURS)]
        page.evaluate(
            "([k, x, y, c]) => { window.hgPending = window.hgWait(k, x, y, c); }",
            [kind, x, y, colour],
        )
        painter.fill(colour)
        painted = time.time() * 1000
        seen = page.evaluate("() => window.hgPending")
        if seen > 0:
            latencies.append(max(0.0, seen - painted))
        time.sleep(0.05)
    # frames: the colour changes as fast as the X server takes them
    done = threading.Event()
    fills = 0

    def churn() -> None:
        nonlocal fills
        while not done.is_set():
            painter.fill(COLOURS[fills % len(COLOURS)])
            fills += 1

    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    changes = page.evaluate(
        "([k, x, y, ms]) => window.hgCount(k, x, y, ms)", [kind, x, y, seconds * 1000]
    )
    done.set()
    worker.join(5)
    return {
        "p50": median(latencies),
        "p95": percentile(latencies, 95),
        "fps": changes / seconds,
        "fills": fills / seconds,
        "lost": samples - len(latencies),
    }


def relay_bytes_out(gateway: GatewayProcess, headers: dict[str, str], protocol: str) -> int:
    """The gateway's ``hostgate_relay_bytes`` server-to-browser total for a protocol."""
    import httpx

    text = httpx.get(f"{gateway.url}/api/v1/metrics", headers=headers, timeout=30).text
    total = 0
    for line in text.splitlines():
        wanted = f'protocol="{protocol}"' in line and 'direction="out"' in line
        if line.startswith("hostgate_relay_bytes") and wanted:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def webm_bytes(gateway: GatewayProcess, headers: dict[str, str]) -> int:
    """Bytes of the browser RDP recordings uploaded so far (their ``fileSize``)."""
    import httpx

    listed = httpx.get(f"{gateway.url}/api/v1/sessions", headers=headers, timeout=30).json()
    return sum(row["fileSize"] or 0 for row in listed["sessions"] if row["protocol"] == "rdp")


def rdp_volume(
    gateway: GatewayProcess, headers: dict[str, str], painter: Painter, seconds: float
) -> dict[str, float]:
    """Relay and WebM bytes per minute, idle then busy."""
    figures: dict[str, float] = {}
    for phase in ("idle", "busy"):
        done = threading.Event()

        def churn(done: threading.Event = done) -> None:
            count = 0
            while not done.is_set():
                painter.fill(COLOURS[count % len(COLOURS)])
                count += 1

        relay, webm = relay_bytes_out(gateway, headers, "rdp"), webm_bytes(gateway, headers)
        started = time.monotonic()
        worker = threading.Thread(target=churn, daemon=True)
        if phase == "busy":
            worker.start()
        time.sleep(seconds)
        done.set()
        if phase == "busy":
            worker.join(5)
        time.sleep(3)  # the recorder's chunk in flight (CHUNK_MS 2 s) lands
        minutes = (time.monotonic() - started) / 60
        figures[f"{phase} relay"] = (relay_bytes_out(gateway, headers, "rdp") - relay) / minutes
        figures[f"{phase} webm"] = (webm_bytes(gateway, headers) - webm) / minutes
    return figures


def open_tab(page: Any, gateway: GatewayProcess, connection_id: str) -> None:
    page.goto(f"{gateway.url}/connections/{connection_id}")
    page.get_by_role("button", name="Open desktop").click()
    page.get_by_role("status").filter(has_text="Connected").wait_for(timeout=30_000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--skip", default="", help="comma-separated: direct, rdp, unrecorded, volume"
    )
    parser.add_argument("--volume-seconds", type=float, default=30.0)
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, float]] = {}
    volume: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="hg-bench-desktop-") as tmp:
        root = Path(tmp)
        vnc = start_xvnc(
            root / "vnc", password=TEST_PASSWORD, width=WIDTH, height=HEIGHT, desktop="bench"
        )
        desk = start_xvnc(
            root / "desk", password=TEST_PASSWORD, width=WIDTH, height=HEIGHT, desktop="rdp"
        )
        xrdp = start_xrdp(root / "xrdp", desktop=desk)
        gateway = GatewayProcess(root / "data").start()
        painters = [Painter(vnc.display, WIDTH, HEIGHT), Painter(desk.display, WIDTH, HEIGHT)]
        try:
            token = gateway.setup_admin()
            headers = {"Authorization": f"Bearer {token}"}
            import httpx

            def create(body: dict[str, Any]) -> str:
                response = httpx.post(
                    f"{gateway.url}/api/v1/connections", headers=headers, json=body
                )
                response.raise_for_status()
                return str(response.json()["id"])

            vnc_id = create(
                {
                    "name": "bench-vnc",
                    "protocol": "vnc",
                    "host": vnc.host,
                    "port": vnc.port,
                    "password": TEST_PASSWORD,
                }
            )
            rdp_id = create(
                {
                    "name": "bench-rdp",
                    "protocol": "rdp",
                    "host": xrdp.host,
                    "port": xrdp.port,
                    "username": "bench",
                    "password": TEST_PASSWORD,
                    "skipCertValidation": True,
                }
            )
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True
                )
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                context.add_init_script(WATCH)
                page = context.new_page()
                page.goto(f"{gateway.url}/")
                page.get_by_label("Username").fill("admin")
                page.get_by_label("Password").fill(ADMIN_PASSWORD)
                page.get_by_role("button", name="Sign in", exact=True).click()
                page.get_by_role("navigation", name="Connections").wait_for()

                # recordings.enabled is on by default: the gateway records this VNC session
                open_tab(page, gateway, vnc_id)
                page.get_by_role("button", name="1:1").click()
                results["vnc relay"] = measure(page, painters[0], "vnc", args.samples, args.seconds)

                if "unrecorded" not in skip:
                    httpx.put(
                        f"{gateway.url}/api/v1/settings",
                        headers=headers,
                        json={"recordings.enabled": False},
                    ).raise_for_status()
                    bare = context.new_page()
                    bare.goto(f"{gateway.url}/")
                    open_tab(bare, gateway, vnc_id)
                    bare.get_by_role("button", name="1:1").click()
                    results["vnc relay, not recorded"] = measure(
                        bare, painters[0], "vnc", args.samples, args.seconds
                    )
                    bare.close()
                    httpx.put(
                        f"{gateway.url}/api/v1/settings",
                        headers=headers,
                        json={"recordings.enabled": True},
                    ).raise_for_status()

                if "direct" not in skip:
                    with static_novnc() as site, websocket_bridge(vnc.host, vnc.port) as bridge:
                        direct = context.new_page()
                        direct.goto(f"{site}/direct.html?ws={bridge}&password={TEST_PASSWORD}")
                        direct.wait_for_function("() => document.title === 'connected'")
                        results["vnc direct"] = measure(
                            direct, painters[0], "vnc", args.samples, args.seconds
                        )
                        direct.close()

                if "rdp" not in skip:
                    rdp_page = context.new_page()
                    rdp_page.goto(f"{gateway.url}/")
                    open_tab(rdp_page, gateway, rdp_id)
                    canvas = rdp_page.get_by_role(
                        "application", name="Remote desktop bench-rdp"
                    ).locator("canvas")
                    canvas.click()
                    rdp_page.keyboard.press("Enter")  # xrdp's login window: OK
                    deadline = time.monotonic() + 20
                    while (
                        "VNC connection complete" not in xrdp.log() and time.monotonic() < deadline
                    ):
                        time.sleep(0.1)
                    rdp_page.wait_for_timeout(1000)
                    results["rdp relay"] = measure(
                        rdp_page, painters[1], "rdp", args.samples, args.seconds
                    )
                    if "volume" not in skip:
                        volume = rdp_volume(gateway, headers, painters[1], args.volume_seconds)
                browser.close()
        finally:
            for painter in painters:
                painter.close()
            gateway.stop()
            stop(xrdp.process)
            stop(desk.process)
            stop(vnc.process)

    rows: list[Row] = []
    direct = results.get("vnc direct")
    for name, figures in results.items():
        base = direct if name == "vnc relay" and direct else None
        rows.append(
            Row(
                f"{name}: change -> canvas p50",
                figures["p50"],
                "ms",
                base and base["p50"],
                "relay <= direct + 10 ms",
            )
        )
        rows.append(
            Row(f"{name}: change -> canvas p95", figures["p95"], "ms", base and base["p95"])
        )
        rows.append(
            Row(f"{name}: changes seen per second", figures["fps"], "/s", base and base["fps"])
        )
        rows.append(Row(f"{name}: X server fills per second", figures["fills"], "/s"))
        if figures["lost"]:
            rows.append(Row(f"{name}: samples never seen (10 s)", figures["lost"], ""))
    for name, per_minute in volume.items():
        rows.append(Row(f"rdp volume: {name} per minute", per_minute / 1024, "KiB"))
    bare = results.get("vnc relay, not recorded")
    recorded = results.get("vnc relay")
    if bare and recorded:
        rows.append(
            Row(
                "vnc relay recorded: changes seen per second",
                recorded["fps"],
                "/s",
                bare["fps"],
                "recorded >= 0.9x not recorded",
            )
        )
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
