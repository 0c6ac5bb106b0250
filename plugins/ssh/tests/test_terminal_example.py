"""examples/terminal_client.py against a live hypercorn gateway and a real sshd."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from testsupport.fixtures import PASSWORD

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "terminal_client.py"


async def test_example_client_runs_commands_and_resizes(
    live_server, make_user, make_connection, sshd
):
    user = await make_user("alice")
    connection = await make_connection(
        user, "ssh", sshd.host, sshd.port, username=sshd.username, password=sshd.password
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE),
        "--url",
        live_server.url,
        "--username",
        "alice",
        "--password",
        PASSWORD,
        "--connection-id",
        connection.id,
        "--size",
        "90x20",
        "--resize",
        "120x40",
        "--command",
        "stty size",
        "--command",
        "echo example-$((2+3))",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, stderr.decode()
    assert b"40 120" in stdout
    assert b"example-5" in stdout
    assert b"closed: 1000 Shell closed" in stderr
