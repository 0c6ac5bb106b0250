"""A shell that writes OSC 52 clipboard writes, title changes and other escapes.

The gateway never acts on them: the recording keeps them byte for byte (a player
shows them as a terminal would, and asciinema's player has no clipboard), while
the command log's output preview and the search snippets hold only the text
around them: no escape, no clipboard payload, no title.
"""

from __future__ import annotations

import json

import hostgate_recsearch.plugin as recsearch_plugin
import hostgate_ssh.plugin as ssh_plugin
import pytest

from plugins.ssh.tests.test_terminal import commands_of, ssh_connection, ssh_path
from tests.services.sessions.helpers import Screen

CLIPBOARD = "aG9zdGlsZS1jbGlw"  # base64 of "hostile-clip"
OSC52 = f"\x1b]52;c;{CLIPBOARD}\x07"
TITLE = "\x1b]0;owned-0title\x07"
# the shell writes the escapes from printf's octal spellings and makes the payload and
# the title itself: the typed line (echoed, logged, searchable) holds none of them
COMMAND = (
    r"printf '\033]52;c;%s\007\033]0;%s\007\033[1;31m%s\033[0m \033P+q544e\033\\"
    r"\033]8;;http://x.invalid\033\\link\033]8;;\033\\ %s\n' "
    '"$(printf hostile-clip | base64)" owned-$((0))title escaped done-$((2+3))'
)
FORBIDDEN = ("\x1b", "\x07", CLIPBOARD, "owned-0title")
"""What only the escapes carried: never in the command log's or the search's text."""


@pytest.fixture
def plugins() -> list[object]:
    """The ssh pack, and the recsearch pack whose index holds the output text."""
    return [ssh_plugin, recsearch_plugin]


async def test_escapes_from_the_server_are_recorded_as_data_and_never_reach_the_text(
    client, kernel, admin, make_user, make_connection, asyncssh_shell
):
    indexed = await client.put(
        "/api/v1/settings", json={"recordings.index_output": True}, headers=admin.headers
    )
    assert indexed.status_code == 200
    user = await make_user("alice")
    connection = await ssh_connection(
        make_connection, user, asyncssh_shell, password=asyncssh_shell.password
    )
    async with client.websocket(ssh_path(kernel, user, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.step(COMMAND, "done-5")
        # the terminal got the bytes as the server wrote them: the browser's xterm.js
        # has no clipboard addon and no title handler, so they change nothing there
        assert OSC52.encode() in screen.output and TITLE.encode() in screen.output
        await screen.send("exit\r")
        await screen.until_closed()
    await kernel.terminal_sessions.tick()

    session_id, commands = await commands_of(client, user)
    [printed] = [c for c in commands if c["command"].startswith("printf")]
    preview = printed["output_preview"]
    assert "escaped link done-5" in preview
    assert "x.invalid" not in preview and "52;c;" not in preview
    assert not any(mark in preview for mark in FORBIDDEN), preview

    response = await client.get("/api/v1/sessions/search?q=done+5", headers=user.headers)
    assert response.status_code == 200
    hits = [h for h in (await response.get_json())["hits"] if h["kind"] == "output"]
    assert hits
    for hit in hits:
        text = hit["snippet"] + "".join(part["text"] for part in hit["snippetParts"])
        assert not any(mark in text for mark in FORBIDDEN), text

    cast = await (
        await client.get(f"/api/v1/sessions/{session_id}/recording", headers=user.headers)
    ).get_data()
    output = "".join(
        event[2] for event in map(json.loads, cast.decode().splitlines()[1:]) if event[1] == "o"
    )
    assert OSC52 in output and TITLE in output  # kept as data, byte for byte
    assert "\x1b" not in cast.decode()  # JSON carries them escaped: a line is text
