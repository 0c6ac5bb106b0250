"""The live viewer's first screen: redrawn from recent output, it shows what the terminal shows."""

from __future__ import annotations

import pyte
from hostgate.services.sessions.terminal_screen import repaint


def shown(data: bytes, cols: int, rows: int) -> pyte.Screen:
    screen = pyte.Screen(cols, rows)
    pyte.Stream(screen).feed(data.decode("utf-8", errors="replace"))
    return screen


def cells(screen: pyte.Screen) -> list[list[pyte.screens.Char]]:
    return [[screen.buffer[y][x] for x in range(screen.columns)] for y in range(screen.lines)]


OUTPUTS = [
    b"$ ls\r\nfile-one  file-two\r\n$ ",
    # colours (16, 256 and true colour), attributes, a cleared screen, wide characters
    b"junk\x1b[2J\x1b[H\x1b[1;31mred bold\x1b[0m \x1b[38;5;200;48;2;1;2;3mmixed\x1b[0m\r\n"
    b"\x1b[4;7munder reverse\x1b[0m \xe6\xbc\xa2\xe5\xad\x97 done\r\n\x1b[3;5Hmoved",
    # scrolling past the bottom, a hidden cursor
    b"".join(b"line %d\r\n" % n for n in range(40)) + b"\x1b[?25l$ ",
    # a partial escape sequence and a split UTF-8 character at the start
    b"\xa2[0mtail\x1b[32m green",
]


def test_the_repaint_draws_the_same_screen_on_a_fresh_terminal():
    for output in OUTPUTS:
        original = shown(output, 40, 10)
        redrawn = shown(repaint(output, 40, 10), 40, 10)
        assert [line.rstrip() for line in redrawn.display] == [
            line.rstrip() for line in original.display
        ], output
        assert cells(redrawn) == cells(original), output
        assert (redrawn.cursor.x, redrawn.cursor.y) == (original.cursor.x, original.cursor.y)
        assert redrawn.cursor.hidden == original.cursor.hidden


def test_an_empty_history_draws_an_empty_screen():
    screen = shown(repaint(b"", 80, 24), 80, 24)
    assert all(not line.strip() for line in screen.display)
    assert (screen.cursor.x, screen.cursor.y) == (0, 0)


class FakeSession:
    """What a Watch reads from a terminal session."""

    def __init__(self) -> None:
        from hostgate.adapters import TerminalSize

        self.size = TerminalSize(cols=20, rows=5)
        self.ended = False
        self.output = b""

    def replay(self) -> bytes:
        return self.output


async def test_a_viewer_that_falls_behind_gets_a_fresh_screen_not_the_backlog():
    from hostgate.services.sessions.terminal_watch import BEHIND_BYTES, Watch

    class Service:
        recent_bytes = 64 * 1024

    session = FakeSession()
    watch = Watch(Service(), None, session)  # type: ignore[arg-type]
    watch.feed(b"first ")
    watch.feed(b"second")
    [frame] = await watch.next()  # type: ignore[misc]
    assert frame.data == b"first second"

    session.output = b"x" * (BEHIND_BYTES + 10) + b"\r\n$ now"
    for _ in range(BEHIND_BYTES // 1000 + 2):
        watch.feed(b"x" * 1000)  # the backlog outgrows the bound: dropped
    [frame] = await watch.next()  # type: ignore[misc]
    assert isinstance(frame.data, bytes) and len(frame.data) < 2000
    assert shown(frame.data, 20, 5).display[-1].rstrip() == "$ now"

    session.size = type(session.size)(cols=30, rows=6)
    watch.feed(b"more")
    resize, more = await watch.next()  # type: ignore[misc]
    assert resize.data == '{"type": "resize", "cols": 30, "rows": 6}'
    assert more.data == b"more"

    session.ended = True
    assert await watch.next() is None
