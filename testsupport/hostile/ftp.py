"""A hostile FTP server: pyftpdlib whose directory listings lie.

``python -m testsupport.hostile.ftp --port N --root DIR`` serves ``DIR`` to user
``alice`` (password ``Ftp-test-pw1``); the fixture ``hostile_ftp`` runs it in a
subprocess. MLSD and LIST answer by the directory's name:

- ``/names``: entries named ``../escape``, ``a<NUL>b``, with ANSI colours, an OSC 52
  clipboard write and a window title change, beside a plain ``plain.txt``;
- ``/many``: ``MANY`` (100,000) files;
- ``/endless``: lines without end (until ``ENDLESS_BYTES``); the bytes handed to the
  data connection so far are written to ``DIR/../endless.sent``;
- ``/loop`` and every ``/loop/loop/...`` below it: ``keep.txt`` and a directory
  ``loop``: a tree without end (only ``/loop/keep.txt`` is real, to show nothing was
  deleted; CWD into the deeper levels is answered without a directory behind it);
- anything else: the real listing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testsupport.peers import free_port, launch_module, serving

USERNAME = "alice"
PASSWORD = "Ftp-test-pw1"
MANY = 100_000
ENDLESS_BYTES = 256 * 1024 * 1024
"""Where the "endless" listing stops: far past any bound the gateway may keep."""
HOSTILE_NAMES = [
    "../escape",
    "a\0b",
    "\x1b[31mred\x1b[0m",
    "\x1b]52;c;cHduZWQ=\x07clip",
    "\x1b]0;owned title\x07title",
    "plain.txt",
]
MODIFY = "20240101000000"


def _line(name: str, index: int = 0) -> bytes:
    return f"type=file;size={index};modify={MODIFY}; {name}\r\n".encode("utf-8", "surrogateescape")


def _names() -> Iterator[bytes]:
    for name in HOSTILE_NAMES:
        yield _line(name)


def _loop() -> Iterator[bytes]:
    yield f"type=dir;modify={MODIFY}; loop\r\n".encode()
    yield _line("keep.txt", 4)


def _many() -> Iterator[bytes]:
    for start in range(0, MANY, 1000):
        yield b"".join(
            _line(f"file-{index:06d}.txt", index) for index in range(start, start + 1000)
        )


class EndlessProducer:
    """A listing that goes on until ``ENDLESS_BYTES``, counting what it handed out."""

    CHUNK = 64 * 1024

    def __init__(self, tally: Path) -> None:
        self.tally = tally
        self.sent = 0
        self.block = b"".join(_line(f"e-{index:08d}") for index in range(1500))[: self.CHUNK]

    def more(self) -> bytes:
        """The next chunk (``b""`` ends the transfer)."""
        if self.sent >= ENDLESS_BYTES:
            return b""
        self.sent += len(self.block)
        self.tally.write_text(str(self.sent))
        return self.block


def main() -> None:
    """Run the server until killed."""
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler
    from pyftpdlib.handlers.ftp.producers import BufferedIteratorProducer
    from pyftpdlib.servers import FTPServer

    from testsupport.peers import server_arguments

    arguments = server_arguments("hostile FTP server", "--root").parse_args()
    root: Path = arguments.root
    for name in ("names", "many", "endless", "loop"):
        (root / name).mkdir(parents=True, exist_ok=True)
    (root / "loop" / "keep.txt").write_text("kept")
    loop = root / "loop"
    tally = root.parent / "endless.sent"

    class Handler(FTPHandler):
        def _hostile(self, path: str, command: str) -> bool:
            name = Path(path).name
            if Path(path).is_relative_to(loop):
                producer: object = BufferedIteratorProducer(_loop())
            elif name == "endless":
                producer = EndlessProducer(tally)
            elif name == "names":
                producer = BufferedIteratorProducer(_names())
            elif name == "many":
                producer = BufferedIteratorProducer(_many())
            else:
                return False
            self.push_dtp_data(producer, isproducer=True, cmd=command)
            return True

        def ftp_CWD(self, path: str) -> str | None:
            if Path(path).is_relative_to(loop):
                self.fs.cwd = self.fs.fs2ftp(path)
                self.respond(f'250 "{self.fs.cwd}" is the current directory.')
                return path
            return super().ftp_CWD(path)  # type: ignore[no-any-return]

        def ftp_MLSD(self, path: str) -> str | None:
            if self._hostile(path, "MLSD"):
                return path
            return super().ftp_MLSD(path)  # type: ignore[no-any-return]

        def ftp_LIST(self, path: str) -> str | None:
            if self._hostile(path, "LIST"):
                return path
            return super().ftp_LIST(path)  # type: ignore[no-any-return]

    authorizer = DummyAuthorizer()
    authorizer.add_user(USERNAME, PASSWORD, str(root), perm="elradfmwMT")
    Handler.authorizer = authorizer
    Handler.banner = "hostile test ftp"
    server = FTPServer(("127.0.0.1", arguments.port), Handler)
    server.serve_forever(handle_exit=True)


@dataclass(frozen=True)
class HostileFtp:
    """Where the hostile FTP server listens."""

    host: str
    port: int
    base: Path
    process: subprocess.Popen[bytes]
    username: str = USERNAME
    password: str = PASSWORD

    @property
    def root(self) -> Path:
        """The directory served."""
        return self.base / "root"

    def endless_sent(self) -> int:
        """Bytes of the endless listing handed to the data connection so far."""
        tally = self.base / "endless.sent"
        return int(tally.read_text()) if tally.exists() else 0


@pytest.fixture(scope="module")
def hostile_ftp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileFtp]:
    """A running hostile FTP server for a test module."""
    base = tmp_path_factory.mktemp("hostile-ftp")
    port = free_port()
    process = launch_module(
        "hostile-ftp", "testsupport.hostile.ftp", base, port, "--root", str(base / "root")
    )
    yield from serving(HostileFtp("127.0.0.1", port, base, process), base)


if __name__ == "__main__":
    main()
