"""A real OpenID Connect provider process for tests (oidc-provider-mock over HTTPS).

``oidc_provider`` (session scope) runs the provider in its own Python process on a free
port, serving TLS with a certificate from a throw-away CA (``ca_pem``), and yields an
``OidcProvider`` that can register clients, define users and play the browser at the
authorization endpoint. ``issuer_relay`` puts an HTTPS relay in front of it that decides,
per path, which issuer the provider believes it is (for issuer-mismatch tests).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from testsupport.peers import free_port, peer_unavailable, stop, wait_for_port
from testsupport.tlsca import make_server_cert

LAUNCHER = """
import sys, werkzeug.serving, oidc_provider_mock
port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
server = werkzeug.serving.make_server(
    "127.0.0.1", port, oidc_provider_mock.app(require_nonce=True), threaded=True,
    ssl_context=(cert, key),
)
server.serve_forever()
"""


@dataclass(frozen=True)
class RegisteredClient:
    """A client registered at the provider."""

    client_id: str
    client_secret: str
    redirect_uri: str


@dataclass(frozen=True)
class OidcProvider:
    """The running provider: its issuer URL and the CA that signed its certificate."""

    issuer: str
    ca_pem: str
    ca_path: Path
    cert_path: Path
    key_path: Path

    def http(self) -> httpx.Client:
        """An HTTP client that trusts the provider's certificate."""
        return httpx.Client(verify=str(self.ca_path), timeout=10)

    def register_client(self, redirect_uri: str) -> RegisteredClient:
        """Register a confidential client (client_secret_basic) for ``redirect_uri``."""
        with self.http() as http:
            answer = http.post(
                f"{self.issuer}/oauth2/clients",
                json={
                    "redirect_uris": [redirect_uri],
                    "token_endpoint_auth_method": "client_secret_basic",
                },
            )
        answer.raise_for_status()
        body = answer.json()
        return RegisteredClient(body["client_id"], body["client_secret"], redirect_uri)

    def set_user(self, sub: str, **claims: Any) -> None:
        """Create or replace a user and the claims the provider reports for it."""
        with self.http() as http:
            http.put(f"{self.issuer}/users/{sub}", json=claims).raise_for_status()

    def sign_in(self, authorization_url: str, sub: str) -> dict[str, str]:
        """Do what the browser does at the authorization endpoint: pick ``sub`` and consent.

        Returns the query parameters of the redirect back to the client (``code``,
        ``state`` or ``error``).
        """
        with self.http() as http:
            page = http.get(authorization_url)
            page.raise_for_status()
            answer = http.post(authorization_url, data={"sub": sub})
        if answer.status_code not in {302, 303}:
            raise AssertionError(f"provider answered {answer.status_code}: {answer.text[:500]}")
        location = answer.headers["Location"]
        return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OidcProvider]:
    """A running oidc-provider-mock (HTTPS, nonce required) in its own process."""
    try:
        import oidc_provider_mock  # noqa: F401
    except ImportError as exc:
        peer_unavailable("oidc-provider-mock", f"not installed: {exc}")
    state = Path(tempfile.mkdtemp(prefix="hostgate-oidc-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        cert = make_server_cert(state / "tls", "hostgate OIDC test CA")
        port = free_port()
        log = open(state / "provider.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(port), str(cert.cert_path), str(cert.key_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if not wait_for_port(port, timeout=30):
            stop(process)
            log.close()
            text = (state / "provider.log").read_text(errors="replace")[-2000:]
            peer_unavailable("oidc-provider-mock", text)
        yield OidcProvider(
            issuer=f"https://127.0.0.1:{port}",
            ca_pem=cert.ca_pem,
            ca_path=cert.ca_path,
            cert_path=cert.cert_path,
            key_path=cert.key_path,
        )
        stop(process)
        log.close()
    finally:
        stop(process)
        shutil.rmtree(state, ignore_errors=True)


# -- a relay that changes who the provider thinks it is ---------------------------------

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class IssuerRelay:
    """An HTTPS relay in front of the provider, with the provider's certificate.

    oidc-provider-mock names itself (discovery ``issuer``, ID token ``iss``) after the
    Host header of each request. The relay forwards every request, sending its own
    address as Host, except for paths starting with one of ``foreign_paths``: those get
    the provider's own address, so the provider answers them as a different issuer.
    """

    issuer: str
    foreign_paths: tuple[str, ...] = ()
    lock: threading.Lock = field(default_factory=threading.Lock)

    def host_for(self, path: str, own: str, provider: str) -> str:
        with self.lock:
            foreign = any(path.startswith(prefix) for prefix in self.foreign_paths)
        return provider if foreign else own


def _relay_handler(relay: IssuerRelay, provider: OidcProvider) -> type[BaseHTTPRequestHandler]:
    own_host = relay.issuer.split("://", 1)[1]
    provider_host = provider.issuer.split("://", 1)[1]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Host"] = relay.host_for(self.path, own_host, provider_host)
            with provider.http() as http:
                answer = http.request(
                    self.command, f"{provider.issuer}{self.path}", headers=headers, content=body
                )
            self.send_response(answer.status_code)
            for name, value in answer.headers.multi_items():
                if name.lower() not in HOP_BY_HOP and name.lower() != "content-encoding":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        do_GET = do_POST = _relay  # noqa: N815

    return Handler


@pytest.fixture
def issuer_relay(oidc_provider: OidcProvider) -> Iterator[IssuerRelay]:
    """An ``IssuerRelay`` on a free port in front of the running provider."""
    port = free_port()
    relay = IssuerRelay(issuer=f"https://127.0.0.1:{port}")
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), _relay_handler(relay, oidc_provider))
    except OSError as exc:
        peer_unavailable("oidc issuer relay", str(exc))
        raise
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(oidc_provider.cert_path), str(oidc_provider.key_path))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="oidc-relay", daemon=True)
    thread.start()
    try:
        yield relay
    finally:
        server.shutdown()
        server.server_close()
