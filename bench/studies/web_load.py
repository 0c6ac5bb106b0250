"""Browser app first load: bytes before the sign-in screen and time to an interactive form.

.venv/bin/python bench/studies/web_load.py [--loads 15]

A real ``hostgate serve`` on a free port (one admin, so the sign-in screen shows) and
Debian's Chromium through Playwright. Printed:

- the gzip size of the JavaScript and CSS ``index.html`` loads (lazy chunks excluded:
  the password checker and xterm.js), goal < 150 KB;
- time from navigation start to the sign-in form being usable (the "Sign in" button
  enabled and the username field focusable), each load in a fresh browser context
  (empty cache), over loopback; median and worst of ``--loads``. Goal < 300 ms.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common import median  # noqa: E402
from hostgate_web.assets import STATIC, ensure_built  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from testsupport.gateway import GatewayProcess  # noqa: E402

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# Navigation and resource timings at the moment the form is ready: each request's start
# and end (its hashed name without the hash), the document's parse and script phases.
TIMINGS = """() => {
  const marks = {};
  const nav = performance.getEntriesByType("navigation")[0];
  marks["index.html"] = [nav.requestStart, nav.responseEnd];
  marks["DOMContentLoaded"] = [nav.domInteractive, nav.domContentLoadedEventEnd];
  for (const entry of performance.getEntriesByType("resource")) {
    const url = new URL(entry.name);
    const name = url.pathname.replace(/-[A-Za-z0-9_-]{8}\\./, ".");
    marks[name] = [entry.startTime, entry.responseEnd];
  }
  return [performance.now(), marks];
}"""


# In the page, from the start: the moment (performance.now()) the form's "Sign in"
# button is first in the document and enabled, seen by a MutationObserver, so that the
# figure does not include Playwright's polling and round trip.
READY_MARK = """
new MutationObserver((_, observer) => {
  const button = [...document.querySelectorAll("button")].find(
    (b) => b.textContent.trim() === "Sign in" && !b.disabled);
  if (button && window.hgReady === undefined) {
    window.hgReady = performance.now();
    observer.disconnect();
  }
}).observe(document, { childList: true, subtree: true, attributes: true });
"""


def initial_bytes() -> tuple[int, int]:
    html = (STATIC / "index.html").read_text()
    assets = re.findall(r'(?:src|href)="/(assets/[^"]+\.(?:js|css))"', html)
    raw = sum((STATIC / a).stat().st_size for a in assets)
    packed = sum(len(gzip.compress((STATIC / a).read_bytes(), 9)) for a in assets)
    return raw, packed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", type=int, default=15)
    args = parser.parse_args()
    ensure_built()
    raw, packed = initial_bytes()
    print(f"initial JS+CSS: {raw / 1024:.1f} KB, {packed / 1024:.1f} KB gzip (goal < 150 KB)")
    with tempfile.TemporaryDirectory() as work:
        gateway = GatewayProcess(Path(work) / "data").start()
        try:
            gateway.setup_admin()
            times = []
            phases: dict[str, list[float]] = {}
            in_page: list[float] = []
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                for _ in range(args.loads + 1):  # the first warms the server and the disk
                    context = browser.new_context()
                    context.add_init_script(READY_MARK)
                    page = context.new_page()
                    page.goto(gateway.url + "/")
                    page.get_by_role("button", name="Sign in", exact=True).wait_for()
                    ready, marks = page.evaluate(TIMINGS)
                    times.append(ready)
                    in_page.append(page.evaluate("window.hgReady"))
                    for name, at in marks.items():
                        phases.setdefault(name, []).append(at)
                    context.close()
                browser.close()
            times, in_page = times[1:], in_page[1:]
            print("where the time goes (median ms since navigation start, start-end):")
            for name, ats in phases.items():
                starts = [start for start, _ in ats[1:]]
                ends = [end for _, end in ats[1:]]
                if ends:
                    print(
                        f"  {name:<32} {median(starts):6.0f}"
                        f" - {median(ends):4.0f}   (n={len(ends)})"
                    )
            print(
                f"time to an interactive sign-in: median {median(times):.0f} ms,"
                f" worst {max(times):.0f} ms over {len(times)} cold loads (goal < 300 ms)"
            )
            print(
                f"  of which in the page (the form's button enabled, seen by the page itself):"
                f" median {median(in_page):.0f} ms, worst {max(in_page):.0f} ms"
            )
        finally:
            gateway.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
