"""The connection menu: ``ssh -p 2222 alice@gateway`` with no target and a terminal.

Lists the connections the user owns or that are shared with them and that offer a
shell; typing filters (by name, case-insensitive), the arrow keys (or Ctrl-P/Ctrl-N)
move, Enter opens the chosen one, Esc, Ctrl-C or Ctrl-D leave. Only names and
protocols are shown: nothing a shared connection's details would hide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncssh
from hostgate import Caller, DoorTarget, KernelAPI

READ_SIZE = 4096
HEADER_LINES = 4
MAX_FILTER = 100
UP = ("\x1b[A", "\x1bOA", "\x10")
DOWN = ("\x1b[B", "\x1bOB", "\x0e")
ENTER = ("\r", "\n")
ERASE = ("\x7f", "\x08")
QUIT = ("\x03", "\x04", "\x1b")
CLEAR_LINE = "\x15"


@dataclass
class Menu:
    """What the menu shows: every target, the filter typed so far, the selected row."""

    targets: list[DoorTarget]
    typed: str = ""
    selected: int = 0
    chosen: DoorTarget | None = None
    done: bool = False
    shown: list[DoorTarget] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.refilter()

    def refilter(self) -> None:
        """The targets whose name holds the filter (or whose id starts with it)."""
        needle = self.typed.casefold()
        self.shown = [
            t for t in self.targets if needle in t.name.casefold() or t.id.startswith(self.typed)
        ]
        self.selected = min(self.selected, max(len(self.shown) - 1, 0))

    def key(self, key: str) -> None:
        """Apply one key (a character or an escape sequence)."""
        if key in UP:
            self.selected = max(self.selected - 1, 0)
        elif key in DOWN:
            self.selected = min(self.selected + 1, max(len(self.shown) - 1, 0))
        elif key in ENTER:
            if self.shown:
                self.chosen = self.shown[self.selected]
                self.done = True
        elif key in QUIT:
            self.done = True
        elif key in ERASE:
            self.typed = self.typed[:-1]
            self.refilter()
        elif key == CLEAR_LINE:
            self.typed = ""
            self.refilter()
        elif key.isprintable() and len(self.typed) < MAX_FILTER:
            self.typed += key
            self.selected = 0
            self.refilter()

    def render(self, cols: int, rows: int) -> str:
        """The whole screen, drawn from the top left."""
        cols, rows = max(cols, 20), max(rows, HEADER_LINES + 1)
        lines = [
            "hostgate: choose a connection",
            "type to filter, \u2191/\u2193 to move, Enter to open, Esc to leave",
            f"> {self.typed}",
            "",
        ]
        room = rows - HEADER_LINES
        first = max(0, self.selected - room + 1)
        for index, target in enumerate(self.shown[first : first + room], start=first):
            mark = "" if target.owned else "  (shared)"
            text = f"  {target.name}  [{target.protocol}]{mark}"[: cols - 1]
            lines.append(f"\x1b[7m{text}\x1b[0m" if index == self.selected else text)
        if not self.shown:
            lines.append("  (no connection matches)")
        cursor = f"\x1b[3;{min(len(self.typed) + 3, cols)}H"
        return "\x1b[H\x1b[2J" + "\r\n".join(line[: cols + 8] for line in lines) + cursor


def split_keys(data: str) -> list[str]:
    """Characters and escape sequences (arrows arrive as ``ESC [ A``), in order."""
    keys: list[str] = []
    index = 0
    while index < len(data):
        if data[index] == "\x1b" and index + 2 < len(data) and data[index + 1] in "[O":
            end = index + 2
            while end < len(data) - 1 and not (data[end].isalpha() or data[end] == "~"):
                end += 1
            keys.append(data[index : end + 1])
            index = end + 1
        else:
            keys.append(data[index])
            index += 1
    return keys


@dataclass(frozen=True)
class Choice:
    """The connection picked, and what was typed after Enter (for its shell)."""

    target: DoorTarget
    typeahead: bytes


async def choose(
    kernel: KernelAPI, caller: Caller, process: asyncssh.SSHServerProcess[bytes]
) -> Choice | None:
    """Let the user pick a connection on their terminal; None when they leave."""
    targets = [t for t in await kernel.front_door.targets(caller) if t.shell]
    if not targets:
        process.stdout.write(b"hostgate: you have no connection that offers a shell\r\n")
        await process.stdout.drain()
        return None
    menu = Menu(targets)
    cols, rows, _, _ = process.get_terminal_size()
    typeahead = b""
    while not menu.done:
        process.stdout.write(menu.render(cols or 80, rows or 24).encode())
        await process.stdout.drain()
        try:
            data = await process.stdin.read(READ_SIZE)
        except asyncssh.TerminalSizeChanged as change:
            cols, rows = change.width, change.height
            continue
        if not data:
            return None
        keys = split_keys(data.decode(errors="replace"))
        for index, key in enumerate(keys):
            menu.key(key)
            if menu.done:
                typeahead = "".join(keys[index + 1 :]).encode()
                break
    process.stdout.write(b"\x1b[H\x1b[2J")
    if menu.chosen is not None:
        process.stdout.write(f"hostgate: opening {menu.chosen.name}\r\n".encode())
    await process.stdout.drain()
    return None if menu.chosen is None else Choice(menu.chosen, typeahead)
