r"""A scripted hostgate terminal client: log in, get a ticket, open /ws/ssh, run commands.

Uses only ``httpx`` and ``websockets`` and the documented protocol (docs/terminals.md):

1. ``POST /api/v1/auth/login`` ``{username, password}`` -> ``{token}`` (or pass ``--token``)
2. ``POST /api/v1/auth/ws-ticket`` with ``Authorization: Bearer <token>`` -> ``{ticket}``
3. open ``/ws/<protocol>?ticket=...&connectionId=...``; send ``{"type":"resize"}`` first
4. wait for ``{"type":"status","message":"Connected"}``; binary frames are terminal output
5. send keystrokes as ``{"type":"data","data":"..."}``; ``exit`` ends the shell and the
   server closes the socket (1000 ``Shell closed``; 4xxx codes carry the reason)

Example::

    python examples/terminal_client.py --url http://127.0.0.1:7443 \
        --username alice --password secret --connection-id <id> \
        --resize 120x40 --command "stty size" --command "uname -a"

The terminal output is written to stdout; the close code and reason to stderr.
The exit status is 0 when the shell ended normally.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx
import websockets


async def session_token(http: httpx.AsyncClient, username: str, password: str) -> str:
    """Log in with a local password (MFA accounts need a token from elsewhere)."""
    response = await http.post(
        "/api/v1/auth/login", json={"username": username, "password": password}
    )
    response.raise_for_status()
    body = response.json()
    if body.get("mfaRequired"):
        raise SystemExit("this account needs MFA: log in in the browser and pass --token")
    return str(body["token"])


async def ws_ticket(http: httpx.AsyncClient, token: str) -> str:
    """A single-use ticket (valid 30 seconds) for one WebSocket."""
    response = await http.post(
        "/api/v1/auth/ws-ticket", headers={"Authorization": f"Bearer {token}"}
    )
    response.raise_for_status()
    return str(response.json()["ticket"])


def socket_url(base: str, protocol: str, ticket: str, connection_id: str) -> str:
    """``ws(s)://host/ws/<protocol>?ticket=..&connectionId=..`` from the HTTP base URL."""
    parts = urlsplit(base)
    scheme = "wss" if parts.scheme == "https" else "ws"
    query = urlencode({"ticket": ticket, "connectionId": connection_id})
    return urlunsplit((scheme, parts.netloc, f"/ws/{protocol}", query, ""))


def size_of(text: str) -> tuple[int, int]:
    """``"120x40"`` -> ``(120, 40)``."""
    cols, _, rows = text.lower().partition("x")
    return int(cols), int(rows)


async def run(args: argparse.Namespace) -> int:
    """Open the terminal, type the commands, print everything until the server closes."""
    async with httpx.AsyncClient(base_url=args.url, verify=not args.insecure) as http:
        token = args.token or await session_token(http, args.username, args.password)
        ticket = await ws_ticket(http, token)
    url = socket_url(args.url, args.protocol, ticket, args.connection_id)
    ssl = None
    if url.startswith("wss:") and args.insecure:
        import ssl as ssl_module

        ssl = ssl_module.create_default_context()
        ssl.check_hostname = False
        ssl.verify_mode = ssl_module.CERT_NONE
    cols, rows = size_of(args.size)
    out = sys.stdout.buffer
    async with websockets.connect(url, ssl=ssl, max_size=2**22) as socket:
        await socket.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))
        try:
            while True:
                frame = await asyncio.wait_for(socket.recv(), args.timeout)
                if isinstance(frame, bytes):
                    out.write(frame)
                    continue
                message = json.loads(frame)
                if message.get("type") == "status":
                    break
                print(f"error: {message.get('message')}", file=sys.stderr)
        except websockets.ConnectionClosed as closed:
            return report(closed)
        if args.resize:
            cols, rows = size_of(args.resize)
            await socket.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))
        for command in [*args.command, "exit"]:
            await socket.send(json.dumps({"type": "data", "data": command + "\r"}))
        try:
            while True:
                frame = await asyncio.wait_for(socket.recv(), args.timeout)
                if isinstance(frame, bytes):
                    out.write(frame)
                    out.flush()
                else:
                    print(f"server: {frame}", file=sys.stderr)
        except websockets.ConnectionClosed as closed:
            out.flush()
            return report(closed)


def report(closed: websockets.ConnectionClosed) -> int:
    """Print why the socket closed; 0 for a normal end."""
    code = closed.rcvd.code if closed.rcvd else 1006
    reason = closed.rcvd.reason if closed.rcvd else "no close frame"
    print(f"\nclosed: {code} {reason}", file=sys.stderr)
    return 0 if code == 1000 else 1


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--url", required=True, help="gateway base URL, e.g. https://gw:7443")
    parser.add_argument("--username")
    parser.add_argument("--password")
    parser.add_argument("--token", help="an existing session token instead of a login")
    parser.add_argument("--connection-id", required=True)
    parser.add_argument("--protocol", default="ssh", help="ssh (default) or telnet")
    parser.add_argument("--size", default="80x24", help="initial COLSxROWS")
    parser.add_argument("--resize", help="COLSxROWS to switch to once connected")
    parser.add_argument("--command", action="append", default=[], help="a command (repeatable)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for output")
    parser.add_argument("--insecure", action="store_true", help="accept a self-signed certificate")
    args = parser.parse_args()
    if not args.token and not (args.username and args.password):
        parser.error("give --token, or --username and --password")
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
