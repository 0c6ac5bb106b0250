"""Uploads and downloads in the browser's file browser vs curl, with what each costs the gateway.

.venv/bin/python bench/studies/web_files.py [--size 1024] [--rounds 3] [--plain [--paced MBPS]]
    [--shapes] [--strace DIR]

A real ``hostgate serve`` (with the web pack's built app) and the suite's OpenSSH
sshd run on 127.0.0.1; Debian's Chromium is driven by Playwright. The same file
(``--size`` MiB of random bytes) is uploaded and downloaded over SFTP:

- ``chromium``: the file browser's *Upload files* picker (one XMLHttpRequest
  with the ``File`` as body) until its line says *done*, and a click on the
  file's download link until Chromium has written the whole file to disk;
- ``curl``: ``POST /upload`` with the file as the body (``-T``), and
  ``GET /download`` of the same remote file written to a file in the same
  directory as Chromium's downloads (the same filesystem, not /dev/null).

``--plain`` adds both clients against a plain HTTP server (a process of its
own: ``sendfile`` out, an upload read and dropped; a page with the same
one-XHR upload and a download link): what Chromium itself costs and reaches
next to curl with no gateway and no SFTP behind the route; with ``--paced N``
also against the same server held to N MB/s (about the gateway's rate), to
tell what a slower peer costs Chromium from what the gateway does. ``--shapes`` adds
uploads through the gateway's route from the app's page sent other ways
(``xhr``: the app's request, ``xhr-bare``: without a progress listener,
``fetch``: ``fetch()`` with the ``File`` as body), the levers of the
request's shape measured in the same rounds.

Each round runs every transfer once, the order of the clients rotating from
round to round so that a change in machine load favours none. Per transfer:
MB/s, and CPU seconds per GiB of the gateway (its process and children), of
sshd's tree, of Chromium's process tree (its renderers' share apart: the
page's own work), of curl and of the plain server
(``/proc`` readings, steady under load where MB/s is not). Printed are the
medians over the rounds and the median per-round ratios: Chromium / curl
through the gateway (goal >= 0.9x), and, with ``--plain``, Chromium through
the gateway / against the plain server beside curl's same ratio (whether the
gateway treats Chromium's transfer worse than curl's). The gateway's RSS
growth during each transfer is the largest seen. No assertions: figures only.

``--strace DIR`` runs one more transfer of each kind with ``strace -c -f``
attached to the gateway and to Chromium's process tree and keeps the summaries
in DIR: the syscalls per GiB, and the bytes per read and per write of each.
"""

from __future__ import annotations

import argparse
import http.server
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import (  # noqa: E402
    Row,
    TreeCpu,
    children_cpu,
    cpu_seconds,
    hostgate_server,
    median,
    print_table,
)
from file_rounds import GIB  # noqa: E402
from files_smb_ftp import BLOCK, CURL, MIB, Gateway, RssSampler, source_file  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
Transfer = Callable[[], int]
"""One transfer: runs it, returns the bytes it moved."""
DONE = """(name) => new Promise((resolve) => {
  // waits without polling: a check at each change of the page (the app redraws a running
  // upload a few times a second), so the bench adds no work of its own to the renderer
  const finished = () => [...document.querySelectorAll('[aria-label="Uploads"] li')]
    .some((item) => item.textContent.includes(name) && /done|cancelled/.test(item.textContent)
      || item.querySelector('[role="alert"]'));
  if (finished()) return resolve(true);
  const observer = new MutationObserver(() => {
    if (finished()) {
      observer.disconnect();
      resolve(true);
    }
  });
  observer.observe(document.body, { subtree: true, childList: true, characterData: true });
})"""

SEND = """async ([shape, url, headers]) => {
  const file = document.getElementById("bench-file").files[0];
  if (shape === "fetch") {
    const response = await fetch(url, { method: "POST", body: file, headers });
    await response.arrayBuffer();
    return response.status;
  }
  return await new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    if (shape === "xhr") xhr.upload.onprogress = (event) => { window.benchLoaded = event.loaded; };
    xhr.onload = () => resolve(xhr.status);
    xhr.onerror = () => resolve(0);
    xhr.open("POST", url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.send(file);
  });
}"""
"""An upload of the picked file (``#bench-file``) in one of the shapes ``--shapes`` compares."""

PICKER = """() => {
  if (document.getElementById("bench-file")) return;
  const input = Object.assign(document.createElement("input"), { type: "file", id: "bench-file" });
  input.hidden = true;
  document.body.append(input);
}"""

PLAIN_PAGE = """<!doctype html><title>plain</title>
<a href="/download" download>Download </a>
<a href="/download?pace={pace}" download>Download paced</a>"""


SHAPES = ("xhr", "xhr-bare", "fetch")


class Pacer:
    """Sleeps so that ``rate`` MB/s is not exceeded (no limit for a rate of 0)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.started = time.perf_counter()
        self.moved = 0

    def moved_on(self, count: int) -> None:
        self.moved += count
        if self.rate:
            ahead = self.moved / (self.rate * 1e6) - (time.perf_counter() - self.started)
            if ahead > 0:
                time.sleep(ahead)


def serve_plain(source: Path, pace: float) -> None:
    """The plain HTTP/1.1 server (``--serve-plain``): prints its URL, serves until killed.

    ``?pace=N`` on ``/upload`` or ``/download`` holds that transfer to N MB/s (reads or
    ``sendfile`` in 1 MiB pieces with a sleep when ahead): a receiver or sender as slow
    as the gateway, with none of its work.
    """
    page = PLAIN_PAGE.format(pace=pace).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def pacer(self) -> Pacer:
            _, _, query = self.path.partition("?pace=")
            return Pacer(float(query or 0))

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if not self.path.startswith("/download"):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            size = source.stat().st_size
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Disposition", 'attachment; filename="plain.bin"')
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.flush()
            pacer = self.pacer()
            with source.open("rb") as file:
                if not pacer.rate:
                    self.connection.sendfile(file)
                    return
                while pacer.moved < size:
                    sent = os.sendfile(self.connection.fileno(), file.fileno(), pacer.moved, MIB)
                    if not sent:
                        break
                    pacer.moved_on(sent)

        def do_POST(self) -> None:  # noqa: N802
            remaining = int(self.headers.get("Content-Length", 0))
            buffer = memoryview(bytearray(MIB))
            pacer = self.pacer()
            while remaining:
                got = self.rfile.readinto(buffer[: min(MIB, remaining)])
                if not got:
                    break
                remaining -= got
                pacer.moved_on(got)
            self.send_response(200 if not remaining else 400)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


class PlainServer:
    """``serve_plain`` in a process of its own, so its CPU is read apart from the bench's."""

    def __init__(self, source: Path, pace: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-plain", str(source), "--paced", str(pace)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        self.pid = self.process.pid

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


def chromium_root() -> int:
    """The pid of the Chromium browser process Playwright started (its tree is all of Chromium)."""
    import psutil

    for process in psutil.Process().children(recursive=True):
        parent = process.parent()
        if "chromium" in process.name() and parent is not None and "chromium" not in parent.name():
            return process.pid
    raise RuntimeError("no Chromium process found")


class Browser:
    """One Chromium page on the file browser of a connection, signed in with the cookie."""

    def __init__(self, playwright: Any, gateway: Gateway, token: str, downloads: Path) -> None:
        self.browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
            headless=True,
            downloads_path=str(downloads),
        )
        self.pid = chromium_root()
        self.context = self.browser.new_context(accept_downloads=True)
        self.context.add_cookies([{"name": "hostgate_token", "value": token, "url": gateway.url}])
        self.page = self.context.new_page()
        self.page.set_default_timeout(30 * 60_000)
        self.gateway = gateway

    def open(self, connection_id: str, folder: str) -> None:
        self.page.goto(f"{self.gateway.url}/connections/{connection_id}/files?path={folder}")
        self.page.get_by_role("table").wait_for()
        self.page.evaluate(PICKER)

    def upload(self, source: Path, name: str) -> int:
        """Pick the file in the app; wait until its line says done."""
        clear = self.page.get_by_role("button", name="Clear finished")
        if clear.count():
            clear.click()
        self.page.get_by_label("Upload files").set_input_files(source)
        self.page.evaluate(DONE, name)
        text = self.page.get_by_role("list", name="Uploads").inner_text()
        if "done" not in text:
            raise RuntimeError(f"the browser upload failed: {text}")
        return source.stat().st_size

    def send(self, page: Any, shape: str, url: str, headers: dict[str, str], source: Path) -> int:
        """Upload ``source`` from ``page`` to ``url`` in one of ``SHAPES``."""
        page.locator("#bench-file").set_input_files(source)
        status = page.evaluate(SEND, [shape, url, headers])
        if status != 200:
            raise RuntimeError(f"the {shape} upload answered {status}")
        return source.stat().st_size

    def download(self, name: str, page: Any = None) -> int:
        """Click the file's link; wait until Chromium has written all of it."""
        page = page or self.page
        with page.expect_download() as info:
            page.get_by_role("link", name=f"Download {name}".strip(), exact=True).click()
        path = Path(info.value.path())
        size = path.stat().st_size
        path.unlink()
        return size

    def plain_page(self, url: str) -> Any:
        """A second tab on the plain server's page."""
        page = self.context.new_page()
        page.set_default_timeout(30 * 60_000)
        page.goto(url + "/")
        page.evaluate(PICKER)
        return page

    def close(self) -> None:
        self.context.close()
        self.browser.close()


@dataclass
class Figures:
    """One kind of transfer's readings, one per round."""

    speed: list[float] = field(default_factory=list)
    gateway: list[float] = field(default_factory=list)
    sshd: list[float] = field(default_factory=list)
    chromium: list[float] = field(default_factory=list)
    renderer: list[float] = field(default_factory=list)
    curl: list[float] = field(default_factory=list)
    plain: list[float] = field(default_factory=list)
    rss: float = 0.0


@dataclass
class Meters:
    """The processes whose CPU each transfer reads."""

    gateway: Gateway
    sshd: int
    chromium: int
    plain: int | None = None

    def measure(self, figures: Figures, run: Transfer) -> float:
        """Run one transfer; keep its MB/s and every process's CPU seconds per GiB."""
        gateway_cpu = cpu_seconds(self.gateway.pid, tree=True)
        plain_cpu = cpu_seconds(self.plain, tree=True) if self.plain else 0.0
        curl_cpu = children_cpu()
        sshd, chromium = TreeCpu(self.sshd), TreeCpu(self.chromium)
        with RssSampler(self.gateway.pid) as sampler, sshd, chromium:
            started = time.perf_counter()
            moved = run()
            elapsed = time.perf_counter() - started
        per_gib = GIB / moved
        figures.speed.append(moved / 1e6 / elapsed)
        figures.gateway.append((cpu_seconds(self.gateway.pid, tree=True) - gateway_cpu) * per_gib)
        figures.sshd.append(sshd.seconds * per_gib)
        figures.chromium.append(chromium.seconds * per_gib)
        figures.renderer.append(renderers(chromium) * per_gib)
        figures.curl.append((children_cpu() - curl_cpu) * per_gib)
        if self.plain:
            figures.plain.append((cpu_seconds(self.plain, tree=True) - plain_cpu) * per_gib)
        figures.rss = max(figures.rss, sampler.growth)
        return figures.speed[-1]


def renderers(tree: TreeCpu) -> float:
    """The CPU seconds of the renderer processes (the pages' own work) in a Chromium tree."""
    total = 0.0
    for (pid, started), seconds in tree.seen.items():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                renderer = b"--type=renderer" in handle.read()
        except OSError:
            continue
        if renderer:
            total += seconds - tree.first.get((pid, started), 0.0)
    return total


def strace_summaries(
    tracees: dict[str, list[int]], run: Transfer, out: Path
) -> dict[str, tuple[str, int]]:
    """``strace -c -f`` of each set of processes during one transfer (``out``-<label>.txt)."""
    tracers = {
        label: subprocess.Popen(
            ["strace", "-c", "-f", *(f"-p{pid}" for pid in pids), "-o", f"{out}-{label}.txt"],
            stderr=subprocess.DEVNULL,
        )
        for label, pids in tracees.items()
    }
    time.sleep(1.0)  # attached to every thread
    moved = run()
    summaries = {}
    for label, tracer in tracers.items():
        tracer.send_signal(signal.SIGINT)
        tracer.wait(60)
        path = Path(f"{out}-{label}.txt")
        text = path.read_text()
        path.write_text(f"{moved} bytes moved\n{text}")
        summaries[label] = (text, moved)
    return summaries


def tree(pid: int) -> list[int]:
    """A process and all its descendants."""
    import psutil

    return [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]


def calls_per_gib(summary: str, moved: int, names: tuple[str, ...]) -> int:
    """Calls per GiB of the named syscalls in an ``strace -c`` summary."""
    total = 0
    for line in summary.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1] in names and parts[3].isdigit():
            total += int(parts[3])
    return round(total * GIB / moved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="file size in MiB (default 1024)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument(
        "--plain", action="store_true", help="also both clients against a plain HTTP server"
    )
    parser.add_argument(
        "--shapes", action="store_true", help="also uploads from the app's page in other shapes"
    )
    parser.add_argument(
        "--paced",
        type=float,
        default=0,
        help="with --plain: also both clients against it held to this many MB/s",
    )
    parser.add_argument("--strace", type=Path, help="keep strace -c of the gateway here")
    parser.add_argument("--serve-plain", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_plain:
        serve_plain(args.serve_plain, args.paced)
        return
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
    figures: dict[str, Figures] = {}
    plain: PlainServer | None = None
    traced: dict[str, tuple[str, int]] = {}
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
            session_id = browser.page.evaluate(
                "(id) => sessionStorage.getItem(`hostgate.fileSession.${id}`)", connection_id
            )
            remote_path = f"{folder}/source.bin"
            curl_target = scratch / "curl-download.bin"

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

            def curl_upload(url: str) -> Transfer:
                return lambda: (
                    run_curl("-X", "POST", "-T", str(source), "-o", "/dev/null", url) or size
                )

            def curl_download(url: str) -> Transfer:
                def run() -> int:
                    moved = run_curl("-o", str(curl_target), "-w", "%{size_download}", url)
                    curl_target.unlink(missing_ok=True)
                    return moved

                return run

            upload_url = gateway._url("sftp", connection_id, "upload", remote_path)
            transfers: dict[str, Transfer] = {
                "upload chromium": lambda: browser.upload(source, "source.bin"),
                "upload curl": curl_upload(
                    gateway._url("sftp", connection_id, "upload", f"{folder}/curl.bin")
                ),
                "download chromium": lambda: browser.download("source.bin"),
                "download curl": curl_download(
                    gateway._url("sftp", connection_id, "download", remote_path)
                ),
            }
            if args.shapes:
                headers = {
                    "Content-Type": "application/octet-stream",
                    "X-File-Session-Id": session_id or "",
                }
                for shape in SHAPES:
                    transfers[f"upload shape {shape}"] = lambda shape=shape: browser.send(  # type: ignore[misc]
                        browser.page, shape, upload_url, headers, source
                    )
            if args.plain:
                plain = PlainServer(source, args.paced)
                plain_url = plain.url
                plain_tab = browser.plain_page(plain_url)

                def plain_transfers(label: str, query: str, page: str) -> dict[str, Transfer]:
                    """Both ways, Chromium and curl, against the plain server (``page``'s
                    download link, ``query`` the pace)."""
                    upload, download = f"{plain_url}/upload{query}", f"{plain_url}/download{query}"
                    return {
                        f"upload {label} chromium": lambda: browser.send(
                            plain_tab,
                            "xhr",
                            upload,
                            {"Content-Type": "application/octet-stream"},
                            source,
                        ),
                        f"upload {label} curl": curl_upload(upload),
                        f"download {label} chromium": lambda: browser.download(page, plain_tab),
                        f"download {label} curl": curl_download(download),
                    }

                transfers |= plain_transfers("plain", "", "")
                if args.paced:
                    transfers |= plain_transfers("paced", f"?pace={args.paced}", "paced")
            sshd_pid = server.process.pid if server.process else 0
            meters = Meters(gateway, sshd_pid, browser.pid, plain.pid if plain else None)
            names = list(transfers)
            uploads = [name for name in names if name.startswith("upload")]
            downloads = [name for name in names if name.startswith("download")]
            for round_number in range(args.rounds):
                # rotate each direction's order: every client goes first once in a while
                shift = round_number % len(uploads)
                order = uploads[shift:] + uploads[:shift]
                shift = round_number % len(downloads)
                order += downloads[shift:] + downloads[:shift]
                for name in order:
                    speed = meters.measure(figures.setdefault(name, Figures()), transfers[name])
                    got = figures[name]
                    print(
                        f"  {name}: {speed:.0f} MB/s, gateway {got.gateway[-1]:.2f} s/GiB,"
                        f" chromium {got.chromium[-1]:.2f} (renderer {got.renderer[-1]:.2f}),"
                        f" curl {got.curl[-1]:.2f},"
                        f" sshd {got.sshd[-1]:.2f}, load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
                    assert (remote / "source.bin").stat().st_size == size
            if args.strace:
                args.strace.mkdir(parents=True, exist_ok=True)
                for name in names:
                    direct = "plain" in name or "paced" in name
                    tracees = {} if direct else {"gateway": tree(gateway.pid)}
                    if "curl" not in name:
                        tracees["chromium"] = tree(browser.pid)
                    out = args.strace / name.replace(" ", "-")
                    for label, found in strace_summaries(tracees, transfers[name], out).items():
                        traced[f"{name}, {label}"] = found
            if plain:
                plain.close()
                plain = None
            browser.close()
    finally:
        if plain:
            plain.close()
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
        shutil.rmtree(remote, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(source.parent, ignore_errors=True)
    report(figures, size, args.rounds, traced)


def ratios(top: Figures, bottom: Figures) -> float:
    """The median of the per-round MB/s ratios."""
    return median(a / b for a, b in zip(top.speed, bottom.speed, strict=True))


def report(
    figures: dict[str, Figures], size: int, rounds: int, traced: dict[str, tuple[str, int]]
) -> None:
    """The medians of every transfer, the ratios, the strace counts."""
    mib = size // MIB
    print(
        f"\nfile {mib} MiB, {rounds} rounds (medians), Chromium {CHROMIUM},"
        f" load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'transfer':<26} {'MB/s':>7} {'gw s/GiB':>9} {'sshd':>6} {'chromium':>9} {'render':>6}"
        f" {'curl':>6} {'plain':>6} {'RSS+MiB':>8}"
    )
    for name, got in figures.items():
        print(
            f"{name:<26} {median(got.speed):>7.1f} {median(got.gateway):>9.2f}"
            f" {median(got.sshd):>6.2f} {median(got.chromium):>9.2f} {median(got.renderer):>6.2f}"
            f" {median(got.curl):>6.2f}"
            f" {median(got.plain) if got.plain else float('nan'):>6.2f} {got.rss:>8.1f}"
        )
    rows: list[Row] = []
    for direction in ("upload", "download"):
        browser, curl = figures[f"{direction} chromium"], figures[f"{direction} curl"]
        rows.append(
            Row(
                f"SFTP {direction} {mib} MiB, Chromium vs curl (median ratio"
                f" {ratios(browser, curl):.2f}x)",
                median(browser.speed),
                "MB/s",
                median(curl.speed),
                ">= 0.90x",
            )
        )
        rows.append(
            Row(
                f"gateway CPU per GiB {direction}, serving Chromium vs curl",
                median(browser.gateway),
                "s/GiB",
                median(curl.gateway),
            )
        )
        if f"{direction} plain chromium" in figures:
            plain_browser = figures[f"{direction} plain chromium"]
            plain_curl = figures[f"{direction} plain curl"]
            print(
                f"{direction}: through the gateway / against the plain server,"
                f" Chromium {ratios(browser, plain_browser):.2f}x, curl"
                f" {ratios(curl, plain_curl):.2f}x; against the plain server Chromium / curl"
                f" {ratios(plain_browser, plain_curl):.2f}x"
            )
        if f"{direction} paced chromium" in figures:
            paced_browser = figures[f"{direction} paced chromium"]
            print(
                f"{direction}: Chromium's CPU per GiB against the plain server"
                f" {median(figures[f'{direction} plain chromium'].chromium):.2f} s,"
                f" paced {median(paced_browser.chromium):.2f} s"
                f" ({median(paced_browser.speed):.0f} MB/s), through the gateway"
                f" {median(browser.chromium):.2f} s; paced Chromium / curl"
                f" {ratios(paced_browser, figures[f'{direction} paced curl']):.2f}x"
            )
    for shape in SHAPES:
        name = f"upload shape {shape}"
        if name in figures:
            print(
                f"{name}: / the app's upload"
                f" {ratios(figures[name], figures['upload chromium']):.2f}x"
                f" MB/s, gateway {median(figures[name].gateway):.2f} s/GiB,"
                f" chromium {median(figures[name].chromium):.2f} s/GiB"
            )
    print_table(rows)
    for name, (summary, moved) in traced.items():
        reads = calls_per_gib(summary, moved, ("recvfrom", "read", "recvmsg", "pread64"))
        writes = calls_per_gib(summary, moved, ("sendto", "write", "sendmsg", "writev", "pwrite64"))
        waits = calls_per_gib(summary, moved, ("epoll_wait", "epoll_pwait", "poll", "futex"))
        print(
            f"strace {name}: reads {reads}/GiB ({GIB // max(reads, 1)} B each on average),"
            f" writes {writes}/GiB ({GIB // max(writes, 1)} B), waits+futex {waits}/GiB"
        )


if __name__ == "__main__":
    main()
