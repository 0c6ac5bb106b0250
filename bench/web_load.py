"""Browser app first load: bytes before the sign-in screen and time to an interactive form.

.venv/bin/python bench/web_load.py [--loads 15]

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
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                for _ in range(args.loads + 1):  # the first warms the server and the disk
                    context = browser.new_context()
                    page = context.new_page()
                    page.goto(gateway.url + "/")
                    page.get_by_role("button", name="Sign in", exact=True).wait_for()
                    ready = page.evaluate("performance.now()")
                    times.append(ready)
                    context.close()
                browser.close()
            times = times[1:]
            print(
                f"time to an interactive sign-in: median {statistics.median(times):.0f} ms,"
                f" worst {max(times):.0f} ms over {len(times)} cold loads (goal < 300 ms)"
            )
        finally:
            gateway.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
