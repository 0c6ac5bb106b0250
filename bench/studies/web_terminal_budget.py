"""Where the browser terminal's renderer CPU per MiB goes: each part alone, in one Chromium.

.venv/bin/python bench/studies/web_terminal_budget.py [--size 8] [--rounds 8]

xterm.js alone (plain_terminal.page, the DOM renderer, the app's default options) in
Debian's Chromium, no gateway, no sshd. Each round, in alternating order, the renderer
process's CPU (psutil: load-robust, unlike the page's wall clock) per MiB of random
base64 lines (as bench/studies/web_terminal.py's ``cat``) for:

- ``socket``: the bytes received from the bench's plain WebSocket server (permessage-
  deflate, 200 KiB frames) and dropped: Chromium's share of a message, no terminal;
  ``socket, no deflate``: the same from a server that does not compress;
- ``parse``: the bytes already in the page written to xterm.js at once (one drawing);
- ``parse nosync``: the same with xterm.js 6's ``Viewport._sync`` (run on every
  scrolled line) replaced by a no-op through its private fields (bench-only);
- ``parse, a drawing per MiB`` / ``per 256 KiB``: written in pieces, each drawn before
  the next: what a drawing of the screen costs.

Medians and minimums over ``--rounds``; the load average printed with them.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from plain_terminal import PlainServer, page  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
OPTIONS = {
    "fontFamily": "DejaVu Sans Mono, monospace",
    "fontSize": 14,
    "cursorStyle": "block",
    "cursorBlink": False,
    "scrollback": 5000,
    "minimumContrastRatio": 4.5,
    "allowProposedApi": True,
    "cols": 150,
    "rows": 40,
}
NO_WEBGL = """
const getContext = HTMLCanvasElement.prototype.getContext;
HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
  return kind === "webgl2" ? null : getContext.call(this, kind, ...rest);
};
"""
# written in pieces of `piece` bytes (0: at once), each drawn before the next
WRITE = """async ([piece, sync]) => {
  const view = term._core._viewport;
  view._sync = sync ? window.hgSync : () => {};
  const data = window.hgData;
  const step = piece || data.length;
  for (let i = 0; i < data.length; i += step) {
    await new Promise((done) => term.write(data.subarray(i, i + step), done));
    await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  }
}"""
RECEIVE = """([url, total]) => new Promise((done) => {
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  let got = 0;
  socket.onopen = () =>
    socket.send(JSON.stringify({ type: "data", data: "cat x; echo END-$((7))\\r" }));
  socket.onmessage = (event) => {
    if (!(event.data instanceof ArrayBuffer)) return;
    got += event.data.byteLength;
    if (got >= total) {
      socket.close();
      done();
    }
  };
})"""


def renderer_cpu() -> float:
    """CPU seconds of Chromium's renderer processes under this one."""
    seconds = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            if "--type=renderer" in " ".join(child.cmdline()):
                times = child.cpu_times()
                seconds += times.user + times.system
        except psutil.Error:
            continue
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=8, help="MiB of text")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    lines = b"".join(
        base64.b64encode(os.urandom(57)) + b"\r\n" for _ in range(args.size * 2**20 // 78)
    )
    mib = len(lines) / 2**20
    frame = 200 * 1024
    plain = PlainServer([lines[i : i + frame] for i in range(0, len(lines), frame)])
    plain.html = page(OPTIONS, plain.url, [])
    raw = PlainServer(plain.frames, deflate=False)
    parts: dict[str, Any] = {
        "socket": ("receive", plain.url),
        "socket, no deflate": ("receive", raw.url),
        "parse": ("write", [0, True]),
        "parse nosync": ("write", [0, False]),
        "parse, a drawing per MiB": ("write", [2**20, True]),
        "parse, a drawing per 256 KiB": ("write", [2**18, True]),
    }
    spent: dict[str, list[float]] = {name: [] for name in parts}
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            context = chromium.new_context(viewport={"width": 1280, "height": 800})
            context.add_init_script(NO_WEBGL)
            tab = context.new_page()
            tab.goto(plain.origin + "/")
            tab.evaluate(
                """(text) => {
                  window.hgData = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
                  const view = term._core._viewport;
                  window.hgSync = view._sync.bind(view);
                }""",
                base64.b64encode(lines).decode(),
            )
            names = list(parts)
            for round_ in range(args.rounds):
                for name in names if round_ % 2 else names[::-1]:
                    kind, value = parts[name]
                    before = renderer_cpu()
                    if kind == "receive":
                        tab.evaluate(RECEIVE, [value, len(lines)])
                    else:
                        tab.evaluate(WRITE, value)
                    spent[name].append((renderer_cpu() - before) * 1000 / mib)
            chromium.close()
    finally:
        plain.stop()
        raw.stop()
    for name, values in spent.items():
        print(
            f"{name:32s} renderer CPU per MiB: median {statistics.median(values):5.1f} ms,"
            f" min {min(values):5.1f} ms ({len(values)} rounds of {mib:.1f} MiB)"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({name: [round(v, 1) for v in values] for name, values in spent.items()}))


if __name__ == "__main__":
    main()
