"""A recorded terminal session leaves a private recording: directory 0700, file 0600."""

from __future__ import annotations

from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.filemodes import assert_private, loose_umask  # noqa: F401


async def test_a_recording_is_written_0600(loose_umask, client, kernel, shell_connection):  # noqa: F811
    user, connection = shell_connection
    path = socket_path("localshell", ticket_for(kernel, user), connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.resize(100, 30)
        await screen.until("$ ")
        await screen.run("echo private-$((6*7))", "private-42")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000
    [entry] = (await (await client.get("/api/v1/sessions", headers=user.headers)).get_json())[
        "sessions"
    ]
    assert entry["hasRecording"] is True
    found = assert_private(kernel.config.data_dir / "recordings")
    assert len(found) >= 2  # the directory and the recording
