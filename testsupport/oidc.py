"""A real OpenID Connect provider process for tests (oidc-provider-mock over HTTPS).

``oidc_provider`` (session scope) runs the provider in its own Python process on a free
port, serving TLS with a certificate from a throw-away CA (``ca_pem``), and yields an
``OidcProvider`` that can register clients, define users and play the browser at the
authorization endpoint.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
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
            issuer=f"https://127.0.0.1:{port}", ca_pem=cert.ca_pem, ca_path=cert.ca_path
        )
        stop(process)
        log.close()
    finally:
        stop(process)
        shutil.rmtree(state, ignore_errors=True)
