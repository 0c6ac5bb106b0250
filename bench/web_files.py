"""Uploads and downloads in the browser's file browser vs curl through the same routes.

.venv/bin/python bench/web_files.py [--size 1024]

A real ``hostgate serve`` (with the web pack's built app) and the suite's OpenSSH
sshd run on 127.0.0.1; Debian's Chromium is driven by Playwright. The same file
(``--size`` MiB of random bytes) is uploaded and downloaded four ways over one
SFTP connection:

- in the browser: the file browser's *Upload files* picker (one XMLHttpRequest
  with the ``File`` as body) until its line says *done*, and a click on the
  file's download link until Chromium has written the whole file to disk;
- with curl: ``POST /upload`` with the file as the body (``-T``), and
  ``GET /download`` written to a file on the same disk.

Printed: MB/s of each, the browser/curl ratio (goal >= 0.9x), and the gateway's
RSS growth over its idle RSS while each transfer runs (psutil, children
included). Each pair runs ``HOSTGATE_BENCH_REPEATS`` times (default 3),
alternating, and the best counts. No assertions: figures only.

``--plain`` adds the same two clients against a plain HTTP server in the bench
process (the file sent with ``sendfile``, an upload read and dropped; a page of its
own with a file input and the same one-XHR upload): what Chromium itself reaches
next to curl on this machine with no gateway and no SFTP behind the route.
"""

from __future__ import annotations

import argparse
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import Row, hostgate_server, print_table  # noqa: E402
from files_smb_ftp import (  # noqa: E402
    BLOCK,
    CURL,
    MIB,
    REPEATS,
    Gateway,
    RssSampler,
    source_file,
)

CHROMIUM = "/usr/bin/chromium"
DONE = """(name) => [...document.querySelectorAll('[aria-label="Uploads"] li')]
  .some((item) => item.innerText.includes(name) && /done|cancelled/.test(item.innerText)
    || item.querySelector('[role="alert"]'))"""


PLAIN_PAGE = b"""<!doctype html><title>plain</title>
<label>Upload files <input type="file"></label><p id="state">idle</p>
<a href="/download" download>Download</a>
<script>
document.querySelector("input").onchange = (event) => {
  const state = document.getElementById("state");
  state.textContent = "uploading";
  const xhr = new XMLHttpRequest();
  xhr.upload.onprogress = () => {};
  xhr.onload = () => { state.textContent = xhr.status === 200 ? "done" : "failed"; };
  xhr.onerror = () => { state.textContent = "failed"; };
  xhr.open("POST", "/upload");
  xhr.setRequestHeader("Content-Type", "application/octet-stream");
  xhr.send(event.target.files[0]);
  event.target.value = "";
};
</script>"""


class PlainServer:
    """A plain HTTP/1.1 server: the page, ``GET /download`` (sendfile), ``POST /upload``."""

    def __init__(self, source: Path) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path != "/download":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(PLAIN_PAGE)))
                    self.end_headers()
                    self.wfile.write(PLAIN_PAGE)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Disposition", 'attachment; filename="plain.bin"')
                self.send_header("Content-Length", str(source.stat().st_size))
                self.end_headers()
                self.wfile.flush()
                with source.open("rb") as file:
                    self.connection.sendfile(file)

            def do_POST(self) -> None:  # noqa: N802
                remaining = int(self.headers.get("Content-Length", 0))
                buffer = memoryview(bytearray(MIB))
                while remaining:
                    got = self.rfile.readinto(buffer[: min(MIB, remaining)])
                    if not got:
                        break
                    remaining -= got
                self.send_response(200 if not remaining else 400)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def timed(run: Callable[[], int]) -> float:
    """MB/s of one transfer that returns the bytes moved."""
    started = time.perf_counter()
    moved = run()
    return moved / 1e6 / (time.perf_counter() - started)


def measured(gateway: Gateway, run: Callable[[], int]) -> tuple[float, float]:
    """(MB/s, gateway RSS growth MiB) of one transfer that returns the bytes moved."""
    with RssSampler(gateway.pid) as sampler:
        started = time.perf_counter()
        moved = run()
        elapsed = time.perf_counter() - started
    return moved / 1e6 / elapsed, sampler.growth


class Browser:
    """One Chromium page on the file browser of a connection, signed in with the cookie."""

    def __init__(self, playwright: Any, gateway: Gateway, token: str, downloads: Path) -> None:
        self.browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
            headless=True,
            downloads_path=str(downloads),
        )
        self.context = self.browser.new_context(accept_downloads=True)
        self.context.add_cookies([{"name": "hostgate_token", "value": token, "url": gateway.url}])
        self.page = self.context.new_page()
        self.page.set_default_timeout(30 * 60_000)
        self.gateway = gateway

    def open(self, connection_id: str, folder: str) -> None:
        self.page.goto(f"{self.gateway.url}/connections/{connection_id}/files?path={folder}")
        self.page.get_by_role("table").wait_for()

    def upload(self, source: Path, name: str) -> int:
        """Pick the file; wait (polling every 50 ms) until its line says done."""
        clear = self.page.get_by_role("button", name="Clear finished")
        if clear.count():
            clear.click()
        self.page.get_by_label("Upload files").set_input_files(source)
        self.page.wait_for_function(DONE, arg=name, polling=50)
        text = self.page.get_by_role("list", name="Uploads").inner_text()
        if "done" not in text:
            raise RuntimeError(f"the browser upload failed: {text}")
        return source.stat().st_size

    def download(self, name: str, page: Any = None) -> int:
        """Click the file's link; wait until Chromium has written all of it."""
        page = page or self.page
        with page.expect_download() as info:
            page.get_by_role("link", name=f"Download {name}".strip()).click()
        path = Path(info.value.path())
        size = path.stat().st_size
        path.unlink()
        return size

    def plain_page(self, url: str) -> Any:
        """A second tab on the plain server's page."""
        page = self.context.new_page()
        page.set_default_timeout(30 * 60_000)
        page.goto(url + "/")
        return page

    def plain_upload(self, page: Any, source: Path) -> int:
        page.get_by_label("Upload files").set_input_files(source)
        page.wait_for_function(
            "!['idle', 'uploading'].includes(document.getElementById('state').textContent)",
            polling=50,
        )
        state = page.locator("#state").inner_text()
        if state != "done":
            raise RuntimeError(f"the plain upload failed: {state}")
        page.evaluate("document.getElementById('state').textContent = 'idle'")
        return source.stat().st_size

    def close(self) -> None:
        self.context.close()
        self.browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="file size in MiB (default 1024)")
    parser.add_argument(
        "--plain", action="store_true", help="also both clients against a plain HTTP server"
    )
    args = parser.parse_args()
    if not CURL:
        raise SystemExit("curl is needed for the comparison (apt-get install curl)")
    from hostgate_web.assets import ensure_built
    from playwright.sync_api import sync_playwright

    from testsupport.sshd import start_sshd

    ensure_built()
    size = max(1, args.size * MIB // BLOCK) * BLOCK
    source = source_file(size)
    scratch = Path(tempfile.mkdtemp(prefix="hg-bench-web-"))
    server = start_sshd()
    folder = f"bench-web-{uuid.uuid4().hex[:6]}"
    remote = server.home / folder
    remote.mkdir()
    shutil.chown(remote, server.username, server.username)
    rows: list[Row] = []
    try:
        with hostgate_server() as gateway_server, sync_playwright() as playwright:
            gateway = Gateway.setup(gateway_server.url, gateway_server.pid)
            token = gateway.headers["Authorization"].removeprefix("Bearer ")
            connection_id = gateway.connection(
                {
                    "name": "bench sftp",
                    "protocol": "sftp",
                    "host": server.host,
                    "port": server.port,
                    "username": server.username,
                    "password": server.password,
                }
            )
            # the browser asks before trusting a new host key: trust it as its prompt would
            scanned = httpx.post(
                f"{gateway.url}/api/v1/connections/{connection_id}/host-key/scan",
                headers=gateway.headers,
            ).json()
            httpx.post(
                f"{gateway.url}/api/v1/connections/{connection_id}/host-key/accept",
                json={"fingerprint": scanned["presented"]["fingerprint"]},
                headers=gateway.headers,
            ).raise_for_status()
            browser = Browser(playwright, gateway, token, scratch)
            browser.open(connection_id, folder)
            remote_path = f"{folder}/source.bin"
            curl_target = scratch / "curl-download.bin"

            def curl_upload() -> int:
                url = gateway._url("sftp", connection_id, "upload", f"{folder}/curl.bin")
                run_curl("-X", "POST", "-T", str(source), "-o", "/dev/null", url)
                return size

            def curl_download() -> int:
                url = gateway._url("sftp", connection_id, "download", remote_path)
                moved = run_curl("-o", str(curl_target), "-w", "%{size_download}", url)
                curl_target.unlink(missing_ok=True)
                return moved

            def run_curl(*arguments: str) -> int:
                # Playwright's sync API keeps an event loop running: curl runs without asyncio
                auth = ["-H", f"Authorization: {gateway.headers['Authorization']}"]
                done = subprocess.run(
                    [CURL or "curl", "-sS", "--fail", *auth, *arguments],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                return int(done.stdout.strip() or 0)

            best: dict[str, float] = {}
            growth: dict[str, float] = {}
            plain_runs: tuple[tuple[str, Callable[[], int]], ...] = ()
            if args.plain:
                plain = PlainServer(source)
                plain_tab = browser.plain_page(plain.url)
                plain_runs = (
                    ("plain browser upload", lambda: browser.plain_upload(plain_tab, source)),
                    (
                        "plain curl upload",
                        lambda: (
                            run_curl("-X", "POST", "-T", str(source), f"{plain.url}/upload") or size
                        ),
                    ),
                    ("plain browser download", lambda: browser.download("", plain_tab)),
                    (
                        "plain curl download",
                        lambda: run_curl(
                            "-o",
                            str(curl_target),
                            "-w",
                            "%{size_download}",
                            f"{plain.url}/download",
                        ),
                    ),
                )
            for _ in range(REPEATS):
                for key, run in (
                    ("browser upload", lambda: browser.upload(source, "source.bin")),
                    ("curl upload", curl_upload),
                    ("browser download", lambda: browser.download("source.bin")),
                    ("curl download", curl_download),
                ):
                    speed, grown = measured(gateway, run)
                    best[key] = max(best.get(key, 0.0), speed)
                    growth[key] = max(growth.get(key, 0.0), grown)
                    print(f"  {key}: {speed:.0f} MB/s, RSS +{grown:.1f} MiB", flush=True)
                    assert (remote / "source.bin").stat().st_size == size
                for key, run in plain_runs:
                    best[key] = max(best.get(key, 0.0), timed(run))
                print(
                    "round: " + ", ".join(f"{key} {speed:.0f}" for key, speed in best.items()),
                    f"(best so far, MB/s), load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
            if args.plain:
                plain.close()
            browser.close()
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
        shutil.rmtree(remote, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(source.parent, ignore_errors=True)
    mib = size // MIB
    rows += [
        Row(
            f"SFTP upload {mib} MiB, browser vs curl",
            best["browser upload"],
            "MB/s",
            best["curl upload"],
            ">= 0.90x",
        ),
        Row(
            f"SFTP download {mib} MiB, browser vs curl",
            best["browser download"],
            "MB/s",
            best["curl download"],
            ">= 0.90x",
        ),
        *(
            Row(f"gateway RSS growth, {key}", growth[key], "MiB", None, "flat")
            for key in ("browser upload", "curl upload", "browser download", "curl download")
        ),
    ]
    if args.plain:
        rows += [
            Row(
                f"plain server upload {mib} MiB, browser vs curl",
                best["plain browser upload"],
                "MB/s",
                best["plain curl upload"],
            ),
            Row(
                f"plain server download {mib} MiB, browser vs curl",
                best["plain browser download"],
                "MB/s",
                best["plain curl download"],
            ),
        ]
    print(f"file {mib} MiB, best of {REPEATS}, Chromium {CHROMIUM}, load {os.getloadavg()[0]:.2f}")
    print_table(rows)


if __name__ == "__main__":
    main()
