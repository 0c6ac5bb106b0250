"""`hostgate serve` as a real process: defaults, TLS, bind and database settings, SIGTERM."""

import asyncio
import errno
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from hostgate.commands.serve import listening_socket
from hostgate.db.engine import Database
from hostgate.db.models.identity import User
from hypercorn.config import Config as HypercornConfig
from sqlmodel import select

from testsupport.peers import free_port, reserve_port, wait_for_port
from testsupport.tlsca import make_server_cert


def launch(
    arguments: list[str], *, port: int, host: str = "127.0.0.1", env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``python -m hostgate ARGUMENTS`` without inherited HOSTGATE_* variables, once it listens
    on ``host:port``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGATE_")}
    environment.update(env or {})
    process = subprocess.Popen(
        [sys.executable, "-m", "hostgate", *arguments],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    if not wait_for_port(port, 60, host=host) or process.poll() is not None:
        process.kill()
        output = process.communicate()[0].decode(errors="replace")
        pytest.fail(f"hostgate serve did not start on {host}:{port}:\n{output}")
    return process


def start(tmp_path, *extra, env=None):
    with reserve_port() as reservation:  # held until serve listens on it
        port = reservation.getsockname()[1]
        arguments = ["--data-dir", str(tmp_path / "data"), "serve", "--port", str(port), *extra]
        return launch(arguments, port=port, env=env), port


def test_a_reserved_port_is_kept_from_others_but_bound_by_serve_alone_or_with_workers():
    """testsupport's ``reserve_port``, which test gateways use: no other socket takes
    the port before serve binds it, and serve's own binds (hypercorn's, and each
    worker's SO_REUSEPORT one) succeed beside it without sharing its connections."""
    with reserve_port() as reservation:
        port = reservation.getsockname()[1]
        with socket.socket() as other:
            with pytest.raises(OSError) as taken:
                other.bind(("127.0.0.1", port))
            assert taken.value.errno == errno.EADDRINUSE
        with pytest.raises(ConnectionRefusedError):  # it holds the port, never listens
            socket.create_connection(("127.0.0.1", port), timeout=10).close()
        hyper = HypercornConfig()
        hyper.bind = [f"127.0.0.1:{port}"]
        (alone,) = hyper.create_sockets().insecure_sockets
        alone.setblocking(True)
        alone.listen()
        with alone, socket.create_connection(("127.0.0.1", port), timeout=10):
            alone.accept()[0].close()
        workers = [listening_socket("127.0.0.1", port) for _ in range(2)]
        try:
            clients = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
            for worker in workers:
                worker.setblocking(False)
            accepted = 0
            deadline = time.monotonic() + 30
            while accepted < len(clients) and time.monotonic() < deadline:
                for worker in workers:
                    try:
                        worker.accept()[0].close()
                        accepted += 1
                    except BlockingIOError:
                        pass
            assert accepted == len(clients)  # every one reached a worker, none the reservation
            for client in clients:
                client.close()
        finally:
            for worker in workers:
                worker.close()


def stop_gracefully(process):
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("hostgate serve did not stop on SIGTERM")
    return code


def test_serve_on_embedded_defaults(tmp_path):
    process, port = start(tmp_path, "--log-format", "json")
    try:
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/health").json()["status"] == "ok"
        public = httpx.get(f"{base}/api/v1/settings/public").json()["settings"]
        assert public["system.insecure_key"] is True
        assert (tmp_path / "data" / "hostgate.db").exists()
        assert (tmp_path / "data" / "encryption.key").exists()
        spec = httpx.get(f"{base}/api/v1/openapi.json").json()
        assert spec["openapi"].startswith("3.") and "/api/v1/settings" in spec["paths"]
        assert "<table>" in httpx.get(f"{base}/api/v1/docs").text
    finally:
        code = stop_gracefully(process)
    output = process.stdout.read().decode()
    assert code == 0, output
    assert '"level": "INFO"' in output  # json log lines


@pytest.mark.parametrize(
    ("arguments", "env", "loop"),
    [
        ([], {}, "uvloop"),  # the default where uvloop is installed (it is a dependency)
        (["--loop", "asyncio"], {}, "asyncio"),
        ([], {"HOSTGATE_EVENT_LOOP": "asyncio"}, "asyncio"),
    ],
)
def test_serve_runs_on_the_chosen_event_loop(tmp_path, arguments, env, loop):
    """uvloop by default, the standard loop as the fallback; both serve the API."""
    process, port = start(tmp_path, *arguments, env=env)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/health").json()["status"] == "ok"
    finally:
        code = stop_gracefully(process)
    output = process.stdout.read().decode()
    assert code == 0, output
    assert f"({loop} event loop)" in output


def test_serve_refuses_an_unknown_event_loop(tmp_path):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGATE_")}
    result = subprocess.run(
        [sys.executable, "-m", "hostgate", "--data-dir", str(tmp_path), "serve"],
        env={**environment, "HOSTGATE_EVENT_LOOP": "trio"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "HOSTGATE_EVENT_LOOP must be one of auto, uvloop, asyncio, not 'trio'" in result.stderr


def test_serve_with_self_signed_tls(tmp_path):
    process, port = start(tmp_path, "--tls-self-signed", env={"HOSTGATE_ENCRYPTION_KEY": "ab" * 32})
    try:
        response = httpx.get(f"https://127.0.0.1:{port}/api/v1/health", verify=False)
        assert response.status_code == 200
        public = httpx.get(f"https://127.0.0.1:{port}/api/v1/settings/public", verify=False)
        assert public.json()["settings"]["system.insecure_key"] is False
        assert (tmp_path / "data" / "certs" / "server.crt").exists()
    finally:
        assert stop_gracefully(process) == 0


def test_global_options_are_accepted_after_the_command(tmp_path, run_cli):
    port = free_port()
    data = tmp_path / "after"
    process = launch(["serve", "--data-dir", str(data), "--port", str(port)], port=port)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/health").json()["status"] == "ok"
        assert (data / "hostgate.db").exists()
    finally:
        assert stop_gracefully(process) == 0
    assert not (tmp_path / "data").exists()
    code, out, err = run_cli("user", "list", "--json", "--data-dir", str(data))
    assert code == 0, err
    assert json.loads(out) == {"users": []}
    # before and after: the one after the command wins
    code, _, err = run_cli(
        "--data-dir", str(tmp_path / "x"), "user", "list", "--data-dir", str(data)
    )
    assert code == 0, err
    assert not (tmp_path / "x").exists()


def test_bad_configuration_is_reported(tmp_path, run_cli):
    code, _, err = run_cli("serve", env={"HOSTGATE_PORT": "not-a-port"})
    assert code == 2 and "HOSTGATE_PORT" in err


def served_certificate(port: int, ca_path: Path) -> bytes:
    """The DER certificate 127.0.0.1:port presents; the handshake verifies it against the CA."""
    context = ssl.create_default_context(cafile=str(ca_path))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


@pytest.mark.parametrize("given_by", ["flags", "environment"])
def test_serve_with_the_users_certificate(tmp_path: Path, given_by: str) -> None:
    """``--tls-cert/--tls-key`` or HOSTGATE_TLS_CERT/KEY: HTTPS with exactly that certificate.

    The handshake verifies against the test CA (so the chain and the key match),
    the presented certificate is byte for byte the user's file, and the gateway
    generated no self-signed certificate of its own.
    """
    issued = make_server_cert(tmp_path / "pki")
    paths = {"cert": str(issued.cert_path), "key": str(issued.key_path)}
    if given_by == "flags":
        extra = ["--tls-cert", paths["cert"], "--tls-key", paths["key"]]
        env = {}
    else:
        extra = []
        env = {"HOSTGATE_TLS_CERT": paths["cert"], "HOSTGATE_TLS_KEY": paths["key"]}
    process, port = start(tmp_path, *extra, env={"HOSTGATE_ENCRYPTION_KEY": "ab" * 32, **env})
    try:
        expected = x509.load_pem_x509_certificate(issued.cert_path.read_bytes())
        served = served_certificate(port, issued.ca_path)
        assert served == expected.public_bytes(serialization.Encoding.DER)
        verified = ssl.create_default_context(cafile=str(issued.ca_path))
        response = httpx.get(f"https://127.0.0.1:{port}/api/v1/health", verify=verified)
        assert response.status_code == 200 and response.json()["status"] == "ok"
        assert not (tmp_path / "data" / "certs").exists()
    finally:
        assert stop_gracefully(process) == 0


def accepts(host: str, port: int) -> bool:
    """True when something accepts TCP connections on host:port right now."""
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError:
        return False


def test_serve_host_from_config_file_environment_and_flag(tmp_path: Path) -> None:
    """``--config FILE`` sets host and port; HOSTGATE_HOST beats the file; ``--host`` beats both.

    Each run must listen on exactly the address its winning source names (three
    loopback addresses, so a run bound to the wrong one is refused) and on the
    file's port, which no flag gives.
    """
    port = free_port()
    toml = tmp_path / "hostgate.toml"
    toml.write_text(
        f'host = "127.0.0.2"\nport = {port}\nencryption_key = "{"cd" * 32}"\n'
        f'data_dir = "{tmp_path / "data"}"\n'
    )
    runs = [
        ([], {}, "127.0.0.2"),
        ([], {"HOSTGATE_HOST": "127.0.0.3"}, "127.0.0.3"),
        (["--host", "127.0.0.4"], {"HOSTGATE_HOST": "127.0.0.3"}, "127.0.0.4"),
    ]
    for flags, env, host in runs:
        process = launch(["--config", str(toml), "serve", *flags], port=port, host=host, env=env)
        try:
            response = httpx.get(f"http://{host}:{port}/api/v1/health")
            assert response.status_code == 200
            others = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"} - {host}
            assert [other for other in sorted(others) if accepts(other, port)] == []
        finally:
            assert stop_gracefully(process) == 0
    assert (tmp_path / "data" / "hostgate.db").exists()  # the file's data_dir


def test_serve_on_database_url_from_environment(tmp_path: Path, postgres_url: str) -> None:
    """HOSTGATE_DATABASE_URL: the server migrates and stores in that PostgreSQL database.

    The admin created over HTTP is a row in PostgreSQL, and no SQLite file
    appears in the data dir.
    """
    env = {"HOSTGATE_ENCRYPTION_KEY": "ef" * 32, "HOSTGATE_DATABASE_URL": postgres_url}
    process, port = start(tmp_path, env=env)
    try:
        setup = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/auth/setup",
            json={"username": "pgadmin", "password": "postgres admin pw 1", "displayName": "PG"},
            timeout=60,
        )
        assert setup.status_code == 200, setup.text
    finally:
        assert stop_gracefully(process) == 0
    assert not (tmp_path / "data" / "hostgate.db").exists()

    async def usernames() -> list[str]:
        db = Database(postgres_url)
        try:
            async with db.session() as session:
                return list((await session.exec(select(User.username))).all())
        finally:
            await db.close()

    assert asyncio.run(usernames()) == ["pgadmin"]
