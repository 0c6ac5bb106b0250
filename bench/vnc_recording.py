"""What a gateway-recorded VNC desktop costs on disk, and what a seek has to read.

.venv/bin/python bench/vnc_recording.py [--seconds 20]

A real ``hostgate serve`` and an Xvnc (800x560) on 127.0.0.1. A client plays noVNC
on ``/ws/vnc/<id>`` (its encoding list, which the recording relay narrows to
stateless ones; an incremental update request after what it receives). Two
sessions of ``--seconds`` each:

- **idle**: nothing changes on the desktop (only the relay's key frames come);
- **busy**: a window the size of the screen changes colour as fast as the X server
  takes it (testsupport.xdisplay's Painter), a worst case for a solid desktop.

Printed: recording bytes per minute, key frames, and the bytes a seek reads at
most (the largest gap between two key frames), i.e. a seek's cost in transfer.
No assertions: figures only.
"""

from __future__ import annotations

import argparse
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import Row, print_table  # noqa: E402

from testsupport.gateway import GatewayProcess  # noqa: E402
from testsupport.peers import stop  # noqa: E402
from testsupport.xdisplay import Painter  # noqa: E402
from testsupport.xvnc import TEST_PASSWORD, start_xvnc  # noqa: E402

WIDTH, HEIGHT = 800, 560
# noVNC 1.7's list (Tight, ZRLE, ... first): the relay keeps Hextile, RRE, CopyRect, Raw
NOVNC_ENCODINGS = [7, 16, 5, 2, 1, 0, -260, -239, -223, -224, -258, -308, -309, -312, -313]
PIXEL_FORMAT = struct.pack(">BBBBHHHBBBxxx", 32, 24, 0, 1, 255, 255, 255, 0, 8, 16)


def session(gateway: GatewayProcess, token: str, connection_id: str, seconds: float) -> None:
    """One recorded session of ``seconds``: noVNC's handshake, then update requests."""
    import websockets.sync.client

    ticket = gateway_post(gateway, token, "/auth/ws-ticket")["ticket"]
    url = f"{gateway.ws_url}/ws/vnc/{connection_id}?ticket={ticket}"
    with websockets.sync.client.connect(url, max_size=2**24) as socket:
        buffer = bytearray()

        def need(count: int) -> bytes:
            while len(buffer) < count:
                buffer.extend(socket.recv(timeout=10))
            data = bytes(buffer[:count])
            del buffer[:count]
            return data

        need(12)
        socket.send(b"RFB 003.008\n")
        need(2)
        socket.send(bytes([1]))
        need(4)
        socket.send(bytes([1]))
        head = need(24)
        need(struct.unpack(">I", head[20:24])[0])
        socket.send(bytes([0, 0, 0, 0]) + PIXEL_FORMAT)
        socket.send(
            struct.pack(f">BxH{len(NOVNC_ENCODINGS)}i", 2, len(NOVNC_ENCODINGS), *NOVNC_ENCODINGS)
        )
        socket.send(struct.pack(">BBHHHH", 3, 0, 0, 0, WIDTH, HEIGHT))
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                buffer.extend(socket.recv(timeout=0.5))
            except TimeoutError:
                continue
            # keep asking, as noVNC does after each update (the server holds it when idle)
            socket.send(struct.pack(">BBHHHH", 3, 1, 0, 0, WIDTH, HEIGHT))
            buffer.clear()


def gateway_post(gateway: GatewayProcess, token: str, path: str, **body: Any) -> Any:
    import httpx

    response = httpx.post(
        f"{gateway.url}/api/v1{path}", headers={"Authorization": f"Bearer {token}"}, json=body
    )
    response.raise_for_status()
    return response.json()


def gateway_get(gateway: GatewayProcess, token: str, path: str) -> Any:
    import httpx

    response = httpx.get(
        f"{gateway.url}/api/v1{path}", headers={"Authorization": f"Bearer {token}"}
    )
    response.raise_for_status()
    return response.json()


def figures(gateway: GatewayProcess, token: str, seconds: float) -> dict[str, float]:
    """Size per minute, key frames and the largest key frame gap of the newest session."""
    for _ in range(100):
        [newest] = gateway_get(gateway, token, "/sessions?limit=1")["sessions"]
        if newest["endedAt"]:
            break
        time.sleep(0.1)
    size = float(newest["fileSize"] or 0)
    frames = gateway_get(gateway, token, f"/sessions/{newest['id']}/recording/keyframes")[
        "keyFrames"
    ]
    offsets = [frame["offset"] for frame in frames] + [int(size)]
    gap = max((b - a for a, b in zip(offsets, offsets[1:], strict=False)), default=size)
    return {"perMinute": size * 60 / seconds, "frames": len(frames), "gap": float(gap)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="hg-bench-vncrec-") as tmp:
        root = Path(tmp)
        vnc = start_xvnc(
            root / "vnc", password=TEST_PASSWORD, width=WIDTH, height=HEIGHT, desktop="bench"
        )
        gateway = GatewayProcess(root / "data").start()
        painter = Painter(vnc.display, WIDTH, HEIGHT)
        try:
            token = gateway.setup_admin()
            connection_id = gateway_post(
                gateway,
                token,
                "/connections",
                name="bench-vnc",
                protocol="vnc",
                host=vnc.host,
                port=vnc.port,
                password=TEST_PASSWORD,
            )["id"]
            session(gateway, token, connection_id, args.seconds)
            results["idle"] = figures(gateway, token, args.seconds)

            done = threading.Event()

            def churn() -> None:
                colour = 0
                while not done.is_set():
                    painter.fill(colour)
                    colour = (colour + 0x010203) & 0xFFFFFF

            worker = threading.Thread(target=churn, daemon=True)
            worker.start()
            try:
                session(gateway, token, connection_id, args.seconds)
            finally:
                done.set()
                worker.join(5)
            results["busy"] = figures(gateway, token, args.seconds)
        finally:
            painter.close()
            gateway.stop()
            stop(vnc.process)
    rows: list[Row] = []
    for name, values in results.items():
        rows.append(Row(f"{name}: recording per minute", values["perMinute"] / 1024, "KiB"))
        rows.append(Row(f"{name}: key frames", values["frames"], ""))
        rows.append(Row(f"{name}: most a seek reads (key frame gap)", values["gap"] / 1024, "KiB"))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
