"""The command log against real shells behind OpenSSH sshd, typed one key per frame.

A browser terminal sends every key in its own socket frame and the shell echoes
it back; the log must hold what the user typed and the shell showed, whatever
prompt characters the command contains and however the line was edited.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from plugins.ssh.tests.test_terminal import commands_of, ssh_connection, ssh_path
from tests.services.sessions.helpers import Screen
from testsupport.wire import STEP

ENTER = "\r"
BACKSPACE = "\x7f"
LEFT, RIGHT, UP = "\x1b[D", "\x1b[C", "\x1b[A"
TAB = "\t"
CTRL_A, CTRL_C, CTRL_U, CTRL_W = "\x01", "\x03", "\x15", "\x17"
COLUMNS = 60
SECRET = "Typed-Secret-77"
TRAILING_CONTROL = re.compile(rb"(?:\x1b\[[0-9;?]*[A-Za-z])+$")
CONTINUED = "\n> "
"""A step's marker: the shell shows its continuation prompt (PS2), the next line is typed then."""


def typed(text: str, *then: str) -> list[str]:
    """The keys of ``text``, one each, then ``then`` (Enter unless given)."""
    return [*text, *(then or (ENTER,))]


@dataclass
class Case:
    """Keys typed at a prompt (in steps, each waiting for its marker) and the entries logged."""

    name: str
    keys: list[str]
    logged: list[str]
    steps: list[tuple[list[str], str]] = field(default_factory=list)


LONG = "echo " + "x" * 40 + "y" * 40
COMMON = [
    Case("setup", typed('cd "$(mktemp -d)" && touch unique-file.txt alpha1 alpha2'), []),
    Case("dollar at the cursor", typed("echo dollar-$((1+1))"), ["echo dollar-$((1+1))"]),
    Case("dollar then paren", typed("echo hi-$((40+2))"), ["echo hi-$((40+2))"]),
    Case("each prompt char then a space", typed("echo 'a$ b# c% d> e'"), []),
    Case("hash inside a word", typed("echo hash-#x"), ["echo hash-#x"]),
    Case("percent", typed("echo 100% done"), ["echo 100% done"]),
    Case("redirection", typed("echo gt > /dev/null"), ["echo gt > /dev/null"]),
    Case("ends in a dollar", typed("echo end-$"), ["echo end-$"]),
    Case("backspace", [*"echo abcX", BACKSPACE, *"d", ENTER], ["echo abcd"]),
    Case("ctrl-u kills the line", [*"rm -rf nothing", CTRL_U, *typed("echo kept")], ["echo kept"]),
    Case("ctrl-w kills a word", [*"echo one two", CTRL_W, *typed("three")], ["echo one three"]),
    Case(
        "trailing backslash",
        [],
        ["echo one \\", "two"],
        steps=[(typed("echo one \\"), CONTINUED), (typed("two"), "")],
    ),
    Case(
        "open quote",
        [],
        ["echo 'a", "b'"],
        steps=[(typed("echo 'a"), CONTINUED), (typed("b'"), "")],
    ),
    Case(
        "here-doc",
        [],
        ["cat <<EOF", "x$y > z # w", "EOF"],
        steps=[
            (typed("cat <<EOF"), CONTINUED),
            (typed("x$y > z # w"), CONTINUED),
            (typed("EOF"), ""),
        ],
    ),
    Case(
        "a full-screen program",
        [],
        ["printf '\\033[?1049h'; read x; printf '\\033[?1049l'"],
        steps=[
            (typed("printf '\\033[?1049h'; read x; printf '\\033[?1049l'"), "\x1b[?1049h"),
            (typed("echo typed-inside"), ""),
        ],
    ),
    Case(
        "keys typed before the prompt, Enter after it",
        [],
        ["sleep 0.5; echo slept", "echo ahead-$((3))"],
        steps=[
            (typed("sleep 0.5; echo slept"), ""),
            ([*"echo ah"], "slept"),
            (typed("ead-$((3))"), "ahead-3"),
        ],
    ),
    Case(
        "typed while the last command prints",
        [],
        ["for i in 1 2 3; do echo tick-$i; sleep 0.4; done", "echo next-$((1+1))"],
        steps=[
            (typed("for i in 1 2 3; do echo tick-$i; sleep 0.4; done"), "tick-1"),
            (typed("echo next-$((1+1))"), "next-2"),
        ],
    ),
]
for case in COMMON:
    if not case.logged and case.keys and case.keys[-1] == ENTER:
        case.logged = ["".join(case.keys[:-1])]

BASH = [
    Case("left arrow and insertion", [*"echo ac", LEFT, *typed("b")], ["echo abc"]),
    Case("right arrow", [*"echo ab", LEFT, LEFT, RIGHT, *typed("X")], ["echo aXb"]),
    Case("ctrl-a", [*"cho start", CTRL_A, *typed("e")], ["echo start"]),
    Case("ctrl-l redraws the line", [*"echo cl", "\x0c", *typed("ear")], ["echo clear"]),
    Case("history recall", [UP, ENTER], ["echo clear"]),
    Case("history recall edited", [UP, *[BACKSPACE] * 5, *typed("end")], ["echo end"]),
    Case("home and end keys", [*"cho x", "\x1b[H", "e", "\x1b[F", *typed("y")], ["echo xy"]),
    Case("tab completion", [*"cat uni", TAB, ENTER], ["cat unique-file.txt"]),
    Case("tab completion list", [*"ls al", TAB, TAB, TAB, *typed("1")], ["ls alpha1"]),
    Case(
        "a wrapped line edited in the middle",
        [*LONG, *[LEFT] * 50, *typed("Z")],
        [LONG[:-50] + "Z" + LONG[-50:]],
    ),
    Case(
        "password prompt",
        [],
        ["read -s -p 'Pass''word: ' pw; echo got-${#pw}", "[password]"],
        steps=[
            (typed("read -s -p 'Pass''word: ' pw; echo got-${#pw}"), "Password: "),
            (typed(SECRET), f"got-{len(SECRET)}"),
        ],
    ),
]

DASH = [
    # bash may hold a Ctrl+C at its prompt until the next key arrives; dash's line is the
    # terminal's own, which drops it at once
    Case("ctrl-c abandons the line", [*"echo never", CTRL_C], []),
    Case(
        "password prompt",
        [],
        ["printf 'Pass''word: '; stty -echo; read pw; stty echo; echo got-${#pw}", "[password]"],
        steps=[
            (
                typed("printf 'Pass''word: '; stty -echo; read pw; stty echo; echo got-${#pw}"),
                "Password: ",
            ),
            (typed(SECRET), f"got-{len(SECRET)}"),
        ],
    ),
]

CLEANUP = Case("cleanup", typed('cd / && rm -r "$OLDPWD"'), ['cd / && rm -r "$OLDPWD"'])


@dataclass
class Shell:
    """A shell to drive: how to start it from the login shell, its prompt, its cases."""

    name: str
    start: list[Case]
    prompt: bytes
    cases: list[Case]


SHELLS = [
    Shell("bash", [], b"$ ", [*COMMON, *BASH, CLEANUP]),
    Shell(
        "dash",
        [Case("start dash", typed("exec env PS1='% ' dash"), ["exec env PS1='% ' dash"])],
        b"% ",
        [*COMMON, *DASH, CLEANUP],
    ),
]


async def press(screen: Screen, keys: list[str]) -> None:
    """Send each key in its own frame, waiting for its echo (or a moment) before the next."""
    loop = asyncio.get_running_loop()
    for key in keys:
        seen = len(screen.output)
        await screen.send(key)
        deadline = loop.time() + 0.5
        while len(screen.output) == seen and loop.time() < deadline:
            await screen.pump(deadline - loop.time())


async def until_after(screen: Screen, start: int, marker: bytes, end: bool = False) -> None:
    """Receive until the output after ``start`` contains ``marker`` (or ends in it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STEP

    def seen() -> bool:
        if not end:
            return marker in screen.output[start:]
        shown = TRAILING_CONTROL.sub(b"", bytes(screen.output[start:]))
        return shown.endswith(marker) and len(shown) > len(marker)

    while not seen():
        left = deadline - loop.time()
        if left <= 0 or not await screen.pump(left):
            shown = bytes(screen.output[-400:])
            raise AssertionError(f"{marker!r} not seen (closed: {screen.closed}); got {shown!r}")


async def run_case(screen: Screen, case: Case, prompt: bytes) -> None:
    start = len(screen.output)
    for keys, marker in case.steps or [(case.keys, "")]:
        step = len(screen.output)
        await press(screen, keys)
        if marker == CONTINUED:
            await until_after(screen, step, b"> ", end=True)
        elif marker:
            await until_after(screen, step, marker.encode())
    await until_after(screen, start, prompt, end=True)


@pytest.mark.parametrize("shell", SHELLS, ids=[shell.name for shell in SHELLS])
async def test_commands_typed_key_by_key_are_logged_as_entered(
    client: Any, kernel: Any, make_user: Any, make_connection: Any, sshd: Any, shell: Shell
) -> None:
    user = await make_user("alice")
    connection = await ssh_connection(make_connection, user, sshd, password=sshd.password)
    path = ssh_path(kernel, user, connection.id, cols=COLUMNS, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.prompt()
        for case in shell.start:
            await run_case(screen, case, shell.prompt)
        for case in shell.cases:
            await run_case(screen, case, shell.prompt)
        await press(screen, typed("exit"))
        assert await screen.until_closed() == 1000

    _, entries = await commands_of(client, user)
    logged = [entry["command"] for entry in entries]
    expected = [c for case in [*shell.start, *shell.cases] for c in case.logged] + ["exit"]
    assert logged == expected
    assert SECRET not in json.dumps(entries)
    previews = {entry["command"]: entry["output_preview"] for entry in entries}
    assert previews["echo dollar-$((1+1))"] == "dollar-2"
    assert previews["echo 100% done"] == "100% done"
