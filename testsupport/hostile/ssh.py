"""A hostile SSH server (asyncssh) and a raw peer that never stops its pre-version banner.

``python -m testsupport.hostile.ssh --port N --base DIR`` listens with asyncssh; what
it does depends on the user name the client logs in with (password ``PASSWORD``):

- ``banners``: before any login, ``BANNERS`` authentication banners of 8,000 characters
  (about 32 MB), then a password prompt that never accepts;
- ``prompts``: keyboard-interactive challenges without end (each one an 8,000-character
  instruction and no prompt, the kind a client answers without asking anyone);
- ``flood``: logs in, and its shell writes output without end (as fast as the window
  lets it): the bytes written so far go to ``DIR/flood.sent``.

``python -m testsupport.hostile.ssh --port N --base DIR --raw-banner`` instead answers
every TCP connection with text lines (no ``SSH-`` version) without end.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testsupport.peers import free_port, launch_module, serving

PASSWORD = "Hostile-ssh-pw1"
BANNERS = 4000
TEXT = "B" * 8000
BLOCK = b"flood " * 10_000


async def _serve(port: int, base: Path) -> None:
    import asyncssh

    from testsupport.asyncssh_peer import serve_forever

    tally = base / "flood.sent"

    class Server(asyncssh.SSHServer):
        def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
            self.conn = conn

        def begin_auth(self, username: str) -> bool:
            self.username = username
            if username == "banners":
                for _ in range(BANNERS):
                    self.conn.send_auth_banner(TEXT)
            return True

        def password_auth_supported(self) -> bool:
            return self.username in ("banners", "flood")

        def validate_password(self, username: str, password: str) -> bool:
            return username == "flood" and password == PASSWORD

        def kbdint_auth_supported(self) -> bool:
            return self.username == "prompts"

        def get_kbdint_challenge(
            self, username: str, lang: str, submethods: str
        ) -> asyncssh.KbdIntChallenge:
            return ("", TEXT, "", [])

        def validate_kbdint_response(
            self, username: str, responses: asyncssh.KbdIntResponse
        ) -> asyncssh.KbdIntChallenge:
            return ("", TEXT, "", [])

    async def flood(process: asyncssh.SSHServerProcess[bytes]) -> None:
        sent = 0
        try:
            while True:
                process.stdout.write(BLOCK)
                await process.stdout.drain()
                sent += len(BLOCK)
                tally.write_text(str(sent))
        except (asyncssh.Error, OSError, BrokenPipeError):
            process.exit(0)

    await serve_forever(port, base / "host_key", Server, process_factory=flood, encoding=None)


async def _raw_banner(port: int) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = b"Welcome to a server that never says which SSH it speaks\r\n"
        try:
            while True:
                writer.write(line * 100)
                await writer.drain()
        except OSError:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    """Run the server until killed."""
    from testsupport.peers import server_arguments

    parser = server_arguments("hostile SSH server", "--base")
    parser.add_argument("--raw-banner", action="store_true")
    arguments = parser.parse_args()
    if arguments.raw_banner:
        asyncio.run(_raw_banner(arguments.port))
    else:
        asyncio.run(_serve(arguments.port, arguments.base))


@dataclass(frozen=True)
class HostileSsh:
    """Where the hostile SSH servers listen: asyncssh on ``port``, the raw one on ``raw_port``."""

    port: int
    raw_port: int
    base: Path
    process: subprocess.Popen[bytes]
    raw: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    password: str = PASSWORD

    def flood_sent(self) -> int:
        """Bytes the flooding shell has written so far."""
        tally = self.base / "flood.sent"
        return int(tally.read_text() or 0) if tally.exists() else 0


@pytest.fixture(scope="module")
def hostile_ssh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileSsh]:
    """Both hostile SSH servers, for a test module."""
    base = tmp_path_factory.mktemp("hostile-ssh")
    port, raw_port = free_port(), free_port()
    process = launch_module(
        "hostile-ssh", "testsupport.hostile.ssh", base, port, "--base", str(base)
    )
    try:
        raw = launch_module(
            "hostile-ssh-raw",
            "testsupport.hostile.ssh",
            base,
            raw_port,
            "--base",
            str(base),
            "--raw-banner",
            log="raw.log",
        )
    except BaseException:
        process.kill()
        raise
    server = HostileSsh(port, raw_port, base, process, raw)
    try:
        yield from serving(server, base)
    finally:
        raw.kill()
        raw.wait()


if __name__ == "__main__":
    main()
