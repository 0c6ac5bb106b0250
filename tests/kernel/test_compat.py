"""The compat package: every third-party private name lives in ``hostgate._compat``,
each patch runs only within the versions it was written for (else the stock path,
with one warning), and ``HOSTGATE_COMPAT_PATCHES=off`` turns them all off."""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import hostgate._compat as compat
import pytest
from hostgate._compat import VersionRange

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "kernel" / "src" / "hostgate" / "_compat"


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-process warnings anew."""
    monkeypatch.setattr(compat, "_warned", set())


def pretend_installed(monkeypatch: pytest.MonkeyPatch, distribution: str, version: str) -> None:
    """``distribution`` reads as ``version`` to the guards; the others as installed."""
    real = compat.installed_version

    def lookup(name: str) -> str | None:
        return version if name == distribution else real(name)

    monkeypatch.setattr(compat, "installed_version", lookup)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "hostgate.compat" and record.levelno == logging.WARNING
    ]


# -- the guard itself ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "admitted"),
    [
        ("0.18.0", True),
        ("0.18.7", True),
        ("0.18.1.post1", True),
        ("0.17.9", False),
        ("0.19.0", False),
        ("0.19.0rc1", False),
        ("1.0", False),
        (None, False),
    ],
)
def test_a_range_admits_its_versions_up_to_the_next_minor(version, admitted):
    assert VersionRange("hypercorn", "0.18.0", "0.19").admits(version) is admitted


def test_the_switch_turns_every_patch_off(monkeypatch, fresh_warnings, caplog):
    monkeypatch.delenv(compat.SWITCH, raising=False)
    assert compat.applies("sample", VersionRange("python", "3", "99"))
    for word in ("off", "OFF", "0", "false", "no"):
        monkeypatch.setenv(compat.SWITCH, word)
        assert not compat.patches_enabled()
        assert not compat.applies("sample", VersionRange("python", "3", "99"))
    monkeypatch.setenv(compat.SWITCH, "on")
    assert compat.applies("sample", VersionRange("python", "3", "99"))
    assert warnings_of(caplog) == []  # switched off is no surprise: nothing to warn about


def test_the_switch_can_name_the_modules_to_turn_off(monkeypatch, fresh_warnings, caplog):
    anything = VersionRange("python", "3", "99")
    monkeypatch.setenv(compat.SWITCH, "off:hypercorn, wsproto")
    assert compat.patches_enabled()
    assert not compat.applies("hypercorn.socketreads", anything)
    assert not compat.applies("wsproto.FastDeflate", anything)
    assert compat.applies("aiosqlite.worker_thread", anything)
    monkeypatch.setenv(compat.SWITCH, "on:hypercorn")  # only "off" takes a list
    assert compat.applies("hypercorn.socketreads", anything)
    assert warnings_of(caplog) == []


def test_an_out_of_range_library_is_refused_and_warned_about_once(
    monkeypatch, fresh_warnings, caplog
):
    monkeypatch.delenv(compat.SWITCH, raising=False)
    pretend_installed(monkeypatch, "wsproto", "9.0.0")
    wanted = VersionRange("wsproto", "1.3.2", "1.4")
    assert not compat.applies("sample", wanted)
    assert not compat.applies("sample", wanted)
    (message,) = warnings_of(caplog)
    assert "sample" in message and "wsproto >=1.3.2,<1.4" in message and "9.0.0" in message


# -- each module: refused out of range (stock behaviour, one warning) -------------------

Installer = Callable[[], bool]


def _wsproto() -> tuple[str, Installer, Callable[[], bool]]:
    import hypercorn.protocol.ws_stream as ws_stream
    from hostgate._compat import wsproto

    return "wsproto", wsproto.install, lambda: ws_stream.PerMessageDeflate is wsproto._STOCK


def _hypercorn() -> tuple[str, Installer, Callable[[], bool]]:
    import hypercorn.asyncio.tcp_server as tcp_server
    from hostgate._compat import hypercorn

    def stock() -> bool:
        return (
            tcp_server.TCPServer.__init__ is hypercorn._original_init
            and hypercorn._original_max_recv == tcp_server.MAX_RECV  # type: ignore[attr-defined]
        )

    return "hypercorn", hypercorn.install, stock


def _asyncio_streams() -> tuple[str, Installer, Callable[[], bool]]:
    from hostgate._compat.asyncio_streams import ChunkReader

    return "python", ChunkReader.supported, lambda: not ChunkReader.supported()


def _aiosqlite() -> tuple[str, Installer, Callable[[], bool]]:
    import threading

    from hostgate._compat import aiosqlite

    class Connection:  # the two attributes aiosqlite's Connection has
        _thread = threading.current_thread()
        _running = True

    return (
        "aiosqlite",
        lambda: aiosqlite.worker_thread(Connection()) is not None,
        lambda: not aiosqlite.still_working(Connection()),
    )


def _asyncssh() -> tuple[str, Installer, Callable[[], bool]]:
    from hostgate._compat import asyncssh

    class Channel:  # the two request handlers asyncssh's SSHServerChannel has
        def _process_auth_agent_req_at_openssh_dot_com_request(self, packet: object) -> None:
            return None

        def _process_x11_req_request(self, packet: object) -> bool:
            return False

    channel = Channel()
    reported: list[str] = []

    def stock() -> bool:
        channel._process_x11_req_request(None)
        channel._process_auth_agent_req_at_openssh_dot_com_request(None)
        seen = list(reported)
        reported.clear()
        return seen == []

    return (
        "asyncssh",
        lambda: asyncssh.watch_forwarding_requests(channel, reported.append),
        stock,
    )


def _quart() -> tuple[str, Installer, Callable[[], bool]]:
    from hostgate.requestbody import FastConnection, FlowControlledConnection, connection_class

    return (
        "quart",
        lambda: connection_class() is FastConnection,
        lambda: connection_class() is FlowControlledConnection,
    )


def _ssl() -> tuple[str, Installer, Callable[[], bool]]:
    from hostgate._compat import ssl

    class Inner:  # what an SSLObject's _sslobj offers below Python 3.13
        def get_unverified_chain(self) -> list[bytes]:
            return [b"leaf", b"intermediate"]

    class Connection:  # an SSLObject of Python 3.11/3.12: no public chain
        _sslobj = Inner()

        def getpeercert(self, binary_form: bool = False) -> bytes:
            return b"leaf"

    return (
        "python",
        lambda: len(ssl.peer_certificate_chain(Connection())) == 2,
        lambda: ssl.peer_certificate_chain(Connection()) == [b"leaf"],
    )


MODULES: dict[str, Callable[[], tuple[str, Installer, Callable[[], bool]]]] = {
    "wsproto": _wsproto,
    "hypercorn": _hypercorn,
    "asyncio_streams": _asyncio_streams,
    "aiosqlite": _aiosqlite,
    "asyncssh": _asyncssh,
    "quart": _quart,
    "ssl": _ssl,
}
"""Compat module -> (a library it is guarded on, its ``install``, "the stock path runs")."""


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_patch_runs_the_stock_path_outside_its_range(
    name, monkeypatch, fresh_warnings, caplog
):
    monkeypatch.delenv(compat.SWITCH, raising=False)
    distribution, install, stock = MODULES[name]()
    try:
        pretend_installed(monkeypatch, distribution, "999.0")
        assert install() is False
        assert stock()
        assert install() is False
        assert len(warnings_of(caplog)) == 1
        monkeypatch.setattr(compat, "installed_version", compat.installed_version)
    finally:
        monkeypatch.undo()
        # in range again: the patch is back (unless this run has the patches off)
        assert install() is compat.patches_enabled()
    assert stock() is not compat.patches_enabled()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_patch_is_off_with_the_switch(name, monkeypatch, fresh_warnings, caplog):
    _, install, stock = MODULES[name]()
    monkeypatch.setenv(compat.SWITCH, "off")
    try:
        assert install() is False
        assert stock()
    finally:
        monkeypatch.undo()
        install()
    assert warnings_of(caplog) == []


def test_every_compat_module_is_tested_here():
    modules = {path.stem for path in COMPAT.glob("*.py")} - {"__init__"}
    assert modules == set(MODULES)


# -- asyncssh: the client's certificate ----------------------------------------------------


class _Certificate:  # what asyncssh's SSHOpenSSHCertificate holds
    key = "own key"
    signing_key = "ca key"
    principals = ["alice"]
    _serial, _key_id = 17, "laptop"


class _Connection:  # the certificate check of asyncssh's SSHServerConnection
    async def _validate_openssh_certificate(self, username: str, cert: object) -> str | None:
        return None if username == "mallory" else "own key"


async def test_watched_certificates_are_shown_to_the_check_which_may_refuse_them(
    monkeypatch, fresh_warnings
):
    from hostgate import ClientCertificate, watch_certificates

    monkeypatch.delenv(compat.SWITCH, raising=False)
    seen: list[ClientCertificate] = []
    answer = True

    async def check(certificate: ClientCertificate) -> bool:
        seen.append(certificate)
        return answer

    connection = _Connection()
    assert watch_certificates(connection, check)
    assert await connection._validate_openssh_certificate("alice", _Certificate()) == "own key"
    assert seen == [ClientCertificate("own key", "ca key", 17, "laptop", ("alice",))]
    answer = False
    assert await connection._validate_openssh_certificate("alice", _Certificate()) is None
    # a certificate asyncssh refused itself is never shown
    assert await connection._validate_openssh_certificate("mallory", _Certificate()) is None
    assert len(seen) == 2


async def test_outside_its_range_no_certificate_is_watched(monkeypatch, fresh_warnings, caplog):
    from hostgate import watch_certificates

    monkeypatch.delenv(compat.SWITCH, raising=False)
    pretend_installed(monkeypatch, "asyncssh", "999.0")
    connection = _Connection()
    stock = connection._validate_openssh_certificate

    async def check(certificate: object) -> bool:
        raise AssertionError("never asked")

    assert watch_certificates(connection, check) is False
    assert watch_certificates(connection, check) is False
    assert connection._validate_openssh_certificate == stock
    assert await connection._validate_openssh_certificate("alice", _Certificate()) == "own key"
    assert len(warnings_of(caplog)) == 1


# -- ssl: a real TLS peer's chain -------------------------------------------------------


async def test_a_tls_peers_chain_is_whole_within_the_range_and_the_leaf_outside(tmp_path):
    """A server on 127.0.0.1 sends its certificate and its CA's: within ``RANGES`` (the
    patches on) both come back, leaf first; with the patches off the leaf alone."""
    import asyncio
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding
    from hostgate import peer_certificate_chain

    from testsupport.tlsca import make_server_cert

    issued = make_server_cert(tmp_path)
    sent = tmp_path / "chain.pem"
    sent.write_text(issued.cert_path.read_text() + issued.ca_pem)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(sent, issued.key_path)
    server = await asyncio.start_server(
        lambda reader, writer: writer.close(), "127.0.0.1", 0, ssl=server_side
    )
    port = server.sockets[0].getsockname()[1]
    client_side = ssl.create_default_context(cafile=str(issued.ca_path))
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_side)
        chain = peer_certificate_chain(writer.get_extra_info("ssl_object"))
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    leaf = x509.load_pem_x509_certificate(issued.cert_path.read_bytes()).public_bytes(Encoding.DER)
    ca = x509.load_pem_x509_certificate(issued.ca_pem.encode()).public_bytes(Encoding.DER)
    assert chain == ([leaf, ca] if compat.patches_enabled() else [leaf])


# -- no third-party private name outside the compat package -----------------------------

SOURCES = [ROOT / "kernel" / "src", *sorted((ROOT / "plugins").glob("*/src"))]
OWN_PACKAGES = ("hostgate",)
"""Top-level packages that are ours (``hostgate``, ``hostgate_*``): their privates are ours."""
PUBLIC_UNDERSCORED = {
    "_mapping": "SQLAlchemy documents Row._mapping as public",
    "_replace": "namedtuple's public API",
    "_asdict": "namedtuple's public API",
    "_fields": "namedtuple's public API",
    "_exit": "os._exit is public",
    "_get_current_object": "werkzeug documents LocalProxy._get_current_object",
}
KNOWN_FOREIGN = frozenset(
    {
        # private names of hypercorn, h11, asyncio, werkzeug, Quart, wsproto, aiosqlite and
        # smbprotocol that the gateway once used: flagged even where we define a like name
        "_buffer", "_paused", "_stream_reader", "_stream_reader_wr", "_receive_buffer",
        "_receive_buffer_closed", "_remaining", "_reader", "_limit", "_eof",
        "_compile_builder", "_trace", "_matcher", "_list", "_compressor",
        "_compressible_opcode", "_wakeup_waiter", "_wait_for_data", "_waiter",
        "_maybe_resume_transport", "_handle_exception", "_split_blueprint_path",
        "_send_response", "_full_items", "_cv_app", "_cv_request", "_connection",
        "_running", "_thread", "_calculate_credit_charge", "_sock", "_sock_lock",
        "_check_worker_running", "_read_response", "_write_response",
    }
)  # fmt: skip


OWN_USES = {
    # our own objects' privates under a name some library also uses
    "kernel/src/hostgate/services/sessions/terminal_watch_relay.py": {"_reader"},  # a LiveWatch's
    "kernel/src/hostgate/logging_setup.py": {"_hostgate"},  # our marker on the handlers we install
}
"""Per file: private names that belong to our own objects there."""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _ours(module: str | None, level: int) -> bool:
    return level > 0 or (module or "").split(".")[0].startswith(OWN_PACKAGES)


def own_private_names(trees: list[ast.AST]) -> set[str]:
    """Private names our own code defines: functions, classes, attributes it assigns,
    parameters, class-level and module-level names."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}:
                    names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[-1])
    return {name for name in names if _private(name)}


def _foreign_based_self_uses(tree: ast.AST, classes: set[str]) -> Iterator[tuple[int, str]]:
    """``self._x`` with a known library name, in classes that subclass a library's class."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(base).split(".")[-1].split("[")[0] for base in node.bases}
        if not bases - classes - {"object", "Protocol", "Generic"}:
            continue
        for inner in ast.walk(node):
            if (
                isinstance(inner, ast.Attribute)
                and inner.attr in KNOWN_FOREIGN
                and isinstance(inner.value, ast.Name)
                and inner.value.id in {"self", "cls"}
            ):
                yield inner.lineno, inner.attr


def _foreign_attribute(name: str, base: ast.expr, own: set[str]) -> bool:
    """Whether ``base.<name>`` reaches a library's private name."""
    if name in PUBLIC_UNDERSCORED:
        return False
    on_self = isinstance(base, ast.Name) and base.id in {"self", "cls"}
    return name not in own or (name in KNOWN_FOREIGN and not on_self)


def own_classes(trees: list[ast.AST]) -> set[str]:
    """The names of the classes our own code defines."""
    return {
        node.name for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    }


def foreign_privates(
    tree: ast.AST,
    own: set[str],
    classes: set[str] = frozenset(),  # type: ignore[assignment]
) -> Iterator[tuple[int, str]]:
    """(line, name) of each third-party private name ``tree`` uses."""
    yield from _foreign_based_self_uses(tree, set(classes))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not _ours(node.module, node.level):
            parts = (node.module or "").split(".")
            for part in parts:
                if _private(part):
                    yield node.lineno, f"{node.module}"
            for alias in node.names:
                if _private(alias.name):
                    yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _ours(alias.name, 0) and any(map(_private, alias.name.split("."))):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if _foreign_attribute(node.attr, node.value, own):
                yield node.lineno, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):  # the same reach, spelled as a string
            if _foreign_attribute(node.args[1].value, node.args[0], own):
                yield node.lineno, node.args[1].value
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (
            KNOWN_FOREIGN
        ):
            yield node.lineno, node.name  # an override of a library's private method


def scan() -> dict[str, set[str]]:
    """Third-party private names by file (relative to the repository), ``_compat`` left out."""
    files = [
        path
        for source in SOURCES
        for path in sorted(source.rglob("*.py"))
        if COMPAT not in path.parents
    ]
    trees = {path: ast.parse(path.read_text(), str(path)) for path in files}
    own = own_private_names(list(trees.values()))
    classes = own_classes(list(trees.values()))
    found: dict[str, set[str]] = {}
    for path, tree in trees.items():
        relative = str(path.relative_to(ROOT))
        names = {name for _, name in foreign_privates(tree, own, classes)} - OWN_USES.get(
            relative, set()
        )
        if names:
            found[relative] = names
    return found


PENDING: dict[str, set[str]] = {}
"""Uses not yet moved into ``_compat`` (each with its follow-up); empty is the goal."""


def test_no_third_party_private_name_outside_the_compat_package():
    assert scan() == PENDING


SAMPLE = """
import h11._readers
from h11._headers import Headers
from quart.asgi import ASGIHTTPConnection, _handle_exception
from .own import _helper
import os


class Reader(Base):
    def __init__(self):
        self._mine = 1
        self._buffer = b""

    def _send_response(self):
        return self._mine + _helper()


def work(reader, row, parts):
    reader._buffer.clear()
    reader._mine += 1
    reader._something_new()
    os._exit(row._mapping, parts._replace())
    return getattr(reader, "_sslobj", None), getattr(reader, "_mine")
"""


def test_the_scan_finds_each_kind_of_private_use():
    tree = ast.parse(SAMPLE)
    found = sorted(foreign_privates(tree, own_private_names([tree]), own_classes([tree])))
    assert found == [
        (2, "h11._readers"),
        (3, "h11._headers"),
        (4, "quart.asgi._handle_exception"),
        (12, "_buffer"),  # Base is a library's class: its _buffer
        (14, "_send_response"),
        (19, "_buffer"),
        (21, "_something_new"),
        (23, "_sslobj"),
    ]
