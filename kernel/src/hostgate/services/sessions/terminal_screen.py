"""A terminal's current screen, redrawn from its recent output (for live viewers).

The gateway keeps no screen per session (that would cost every session CPU for
the rare one that is watched); it keeps the last output bytes
(``TerminalSession.replay``). :func:`repaint` plays them on a virtual terminal
(pyte) of the session's size and writes what the screen shows as a sequence
that draws it on a fresh terminal: clear, each row with its colours and
attributes, the cursor where it is. Output older than the kept bytes is not
known: a screen last cleared before then shows what the kept part draws.
pyte is imported at the first repaint (in the worker thread that runs it), not
at start: few gateways ever open a live view.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyte.screens import Char

CLEAR = "\x1bc\x1b[0m\x1b[H\x1b[2J"

Palette = tuple[dict[str, int], dict[str, int]]
"""SGR codes of pyte's colour names: foreground, background."""


@cache
def _palette() -> Palette:
    from pyte import graphics

    return (
        {name: code for code, name in {**graphics.FG_ANSI, **graphics.FG_AIXTERM}.items()},
        {name: code for code, name in {**graphics.BG_ANSI, **graphics.BG_AIXTERM}.items()},
    )


def _colour(value: str, names: dict[str, int], truecolor: int) -> list[str]:
    if value == "default":
        return []
    if value in names:
        return [str(names[value])]
    if len(value) == 6:
        try:
            red, green, blue = (int(value[i : i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            return []
        return [str(truecolor), "2", str(red), str(green), str(blue)]
    return []


def _sgr(char: Char, palette: Palette) -> str:
    codes = ["0"]
    for flag, code in (
        (char.bold, "1"),
        (char.italics, "3"),
        (char.underscore, "4"),
        (char.blink, "5"),
        (char.reverse, "7"),
        (char.strikethrough, "9"),
    ):
        if flag:
            codes.append(code)
    codes += _colour(char.fg, palette[0], 38)
    codes += _colour(char.bg, palette[1], 48)
    return "\x1b[" + ";".join(codes) + "m"


def _row(line: dict[int, Char], columns: int, default: Char, palette: Palette) -> str:
    cells = [line[x] for x in range(columns)]
    while cells and cells[-1] == default:
        cells.pop()  # trailing blanks in the default style: nothing to draw
    out: list[str] = []
    style = _sgr(default, palette)
    for cell in cells:
        if cell.data == "":
            continue  # the right half of a wide character
        wanted = _sgr(cell, palette)
        if wanted != style:
            out.append(wanted)
            style = wanted
        out.append(cell.data)
    return "".join(out)


def repaint(recent: bytes, columns: int, rows: int) -> bytes:
    """Bytes that draw the screen ``recent`` output leaves on a ``columns``×``rows`` terminal."""
    import pyte

    palette = _palette()
    screen = pyte.Screen(columns, rows)
    stream = pyte.Stream(screen)
    stream.feed(recent.decode("utf-8", errors="replace"))
    default = screen.default_char
    parts = [CLEAR]
    for y in range(rows):
        text = _row(screen.buffer[y], columns, default, palette)
        if text:
            parts.append(f"\x1b[{y + 1};1H{text}\x1b[0m")
    cursor = screen.cursor
    parts.append(f"\x1b[{cursor.y + 1};{cursor.x + 1}H")
    if cursor.hidden:
        parts.append("\x1b[?25l")
    return "".join(parts).encode()
