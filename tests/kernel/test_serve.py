"""`hostgate serve` as a real process: defaults, TLS, graceful SIGTERM."""

import os
import signal
import subprocess
import sys

import httpx
import pytest

from testsupport.peers import free_port, wait_for_port


def start(tmp_path, *extra, env=None):
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGATE_")}
    environment.update(env or {})
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hostgate",
            "--data-dir",
            str(tmp_path / "data"),
            "serve",
            "--port",
            str(port),
            *extra,
        ],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    if not wait_for_port(port, 60):
        process.kill()
        output = process.communicate()[0].decode(errors="replace")
        pytest.fail(f"hostgate serve did not start:\n{output}")
    return process, port


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


def test_bad_configuration_is_reported(tmp_path, run_cli):
    code, _, err = run_cli("serve", env={"HOSTGATE_PORT": "not-a-port"})
    assert code == 2 and "HOSTGATE_PORT" in err
