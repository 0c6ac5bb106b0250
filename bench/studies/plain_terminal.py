"""A plain terminal WebSocket server for studies/web_terminal.py's ceiling: no gateway, no sshd.

It speaks the part of ``/ws/ssh`` the bench's pages use (docs/terminals.md): a status
frame, then the typed ``data`` frames echoed back as a shell's line editor would, and on
Enter the line run: ``clear`` clears the screen, ``cat ...; echo END-$((N))`` replays the
frames a real ``cat`` through the gateway brought (``record_cat``: the same bytes in the
same frame sizes) and then prints ``END-N``. ``page`` is a page with xterm.js alone (from
the web app's node_modules) fed by such a socket, frame by frame.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

import websockets
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

PROMPT = b"$ "
END = re.compile(r"END-\$\(\((\d+)\)\)")
CLEARED = re.compile(r"CLEARED-\$\(\((\d+)\+(\d+)\)\)")
XTERM = Path(__file__).resolve().parents[2] / "plugins/web/ui/node_modules/@xterm/xterm"
FILES = {
    "/xterm.js": (XTERM / "lib/xterm.js", "text/javascript"),
    "/xterm.css": (XTERM / "css/xterm.css", "text/css"),
}


async def record_cat(socket: Any, path: Path, marker: int) -> list[bytes]:
    """The binary frames of ``cat path; echo END-marker`` at the prompt of ``socket``."""
    expected = f"END-{marker}".encode()
    await socket.send(json.dumps({"type": "data", "data": f"cat {path}; echo END-$(({marker}))\r"}))
    frames: list[bytes] = []
    seen = b""
    while expected not in seen:
        frame = await socket.recv()
        if isinstance(frame, bytes):
            frames.append(frame)
            seen = seen[-16:] + frame
    return frames


class PlainServer:
    """The server, on its own event loop in a thread; ``url`` is its socket's address."""

    def __init__(self, frames: list[bytes], deflate: bool = True) -> None:
        self.frames = frames
        self.deflate = deflate
        self.html = ""  # the page served at any other path than the socket's (``page``)
        self.loop = asyncio.new_event_loop()
        self.port = 0
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        if not started.wait(30):
            raise RuntimeError("the plain terminal server did not start")

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/ssh"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.stopping = asyncio.Event()

        async def main() -> None:
            async with serve(
                self.shell,
                "127.0.0.1",
                0,
                max_size=2**24,
                process_request=self.files,
                compression="deflate" if self.deflate else None,
            ) as server:
                self.port = server.sockets[0].getsockname()[1]
                started.set()
                await self.stopping.wait()

        self.loop.run_until_complete(main())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(10)

    def files(self, connection: ServerConnection, request: Request) -> Response | None:
        """The ceiling page and xterm.js's files (served from loopback, as the socket is:
        Chromium refuses a page from elsewhere a socket to a local address)."""
        if request.path.startswith("/ws/"):
            return None
        path = request.path.split("?")[0]
        file, kind = FILES.get(path, (None, "text/html; charset=utf-8"))
        body = file.read_bytes() if file else self.html.encode()
        headers = Headers([("Content-Type", kind), ("Content-Length", str(len(body)))])
        return Response(200, "OK", headers, body)

    async def shell(self, socket: ServerConnection) -> None:
        """One terminal: echo what is typed, run a line on Enter."""
        await socket.send(json.dumps({"type": "status", "message": "Connected"}))
        await socket.send(PROMPT)
        line = ""
        try:
            async for message in socket:
                frame = json.loads(message)
                if frame.get("type") != "data":
                    continue
                for char in frame["data"]:
                    if char == "\r":
                        await self.run(socket, line)
                        line = ""
                    elif char == "\x15":  # Ctrl+U: the line erased
                        line = ""
                        await socket.send(b"\r\x1b[K" + PROMPT)
                    elif char in "\x7f\b":
                        line = line[:-1]
                        await socket.send(b"\b \b")
                    else:
                        line += char
                        await socket.send(char.encode())
        except websockets.ConnectionClosed:
            pass

    async def run(self, socket: ServerConnection, line: str) -> None:
        await socket.send(b"\r\n")
        if line.startswith("clear"):
            await socket.send(b"\x1b[H\x1b[2J")
        if cleared := CLEARED.search(line):
            await socket.send(f"CLEARED-{int(cleared[1]) + int(cleared[2])}\r\n".encode())
        if line.startswith("cat ") and not line.startswith("cat /dev/null"):
            for frame in self.frames:
                await socket.send(frame)
        if end := END.search(line):
            await socket.send(f"END-{end[1]}\r\n".encode())
        await socket.send(PROMPT)


def page(options: dict[str, Any], url: str, patches: list[str], interval: int = 0) -> str:
    """xterm.js alone with the app terminal's ``options`` (cols and rows among them), each
    socket frame written as it comes, or (``interval`` ms) joined as the app's feed does
    during a flood; ``patches``: bench-only changes (PATCHES)."""
    script = "\n".join(PATCHES[name] for name in patches)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>xterm.js ceiling</title>
<link rel="stylesheet" href="/xterm.css"><script src="/xterm.js"></script></head>
<body style="margin:0;background:#1e1e1e">
<section aria-label="Terminal bench"><p role="status" id="state">Connecting</p>
<div role="region" aria-label="Terminal output of bench" id="screen"></div></section>
<script>
const term = new Terminal({json.dumps(options)});
term.open(document.getElementById("screen"));
window.hgTerminal = term;
{script}
const socket = new WebSocket({json.dumps(url)});
socket.binaryType = "arraybuffer";
// interval > 0: frames joined, one write per `interval` ms at most (the app's feed.ts, bare)
const interval = {interval};
let waiting = [], busy = false, lastAt = -1e9, lastSize = 0, timer = null;
const pump = () => {{
  if (busy || timer !== null || waiting.length === 0) return;
  // the wait only after a big write (16 KiB, feed.ts's FLOOD_BYTES): an echo goes at once
  const wait = lastSize >= 16384 ? lastAt + interval - performance.now() : 0;
  if (wait > 0) {{
    timer = setTimeout(() => {{ timer = null; pump(); }}, wait);
    return;
  }}
  let size = 0;
  for (const piece of waiting) size += piece.length;
  const batch = new Uint8Array(size);
  let offset = 0;
  for (const piece of waiting) {{ batch.set(piece, offset); offset += piece.length; }}
  waiting = [];
  busy = true;
  lastAt = performance.now();
  lastSize = size;
  term.write(batch, () => {{ busy = false; pump(); }});
}};
const output = (data) => {{
  if (interval === 0) return term.write(data);
  waiting.push(data);
  pump();
}};
socket.onmessage = (event) => {{
  if (event.data instanceof ArrayBuffer) output(new Uint8Array(event.data));
  else if (JSON.parse(event.data).type === "status")
    document.getElementById("state").textContent = "Connected";
}};
term.onData((data) => socket.send(JSON.stringify({{ type: "data", data }})));
</script></body></html>"""


# Bench-only changes to the ceiling's xterm.js, through its private fields: what a cost
# inside xterm.js is worth (not something the app can do through xterm.js's API).
PATCHES = {
    # xterm.js 6 syncs its VS Code scrollbar (Viewport._sync) on every scrolled line
    "nosync": "term._core._viewport._sync = () => {};",
}
