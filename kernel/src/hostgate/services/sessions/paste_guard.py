"""Refusing pasted text in a terminal whose user may not paste (``clipboard.paste``).

A terminal cannot tell a paste from typing in general: both are bytes. It can when
the remote program asked for *bracketed paste* (``ESC[?2004h``, which bash, zsh, fish
and vim do by default): the terminal emulator (xterm.js in the browser, the user's own
terminal at the SSH front door) then wraps every paste in ``ESC[200~`` ... ``ESC[201~``.
``PasteGuard`` drops everything from a start marker to its end marker (across
messages) and reports each paste it dropped. What it cannot catch, and the docs say
so: a paste into a program that did not ask for bracketed paste (it arrives as plain
keystrokes), and text typed or sent by a script key by key.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from ...rights import reason

START = b"\x1b[200~"
END = b"\x1b[201~"


def refused_frame(action: str) -> str:
    """The ``{"type": "refused"}`` text frame a terminal socket shows the user."""
    return json.dumps({"type": "refused", "action": action, "message": reason(action)})


class PasteGuard:
    """Drops bracketed pastes from a terminal's input; tells and audits each one."""

    def __init__(
        self, tell: Callable[[str], None], audit: Callable[[str, str], Awaitable[None]]
    ) -> None:
        self._tell = tell
        self._audit = audit
        self._pasting = False
        self._tail = b""
        self._dropped = 0

    def strip(self, data: bytes) -> tuple[bytes, int]:
        """The input less pasted text, and how many pastes started in it."""
        if not self._pasting and START not in data:
            return data, 0
        kept: list[bytes] = []
        started = 0
        pos = 0
        while pos < len(data):
            if not self._pasting:
                found = data.find(START, pos)
                if found < 0:
                    kept.append(data[pos:])
                    break
                kept.append(data[pos:found])
                pos = found + len(START)
                self._pasting, self._tail = True, b""
                started += 1
                continue
            window = self._tail + data[pos:]
            found = window.find(END)
            if found < 0:  # the paste goes on in the next message
                self._dropped += len(data) - pos
                self._tail = window[-(len(END) - 1) :]
                break
            end = pos + found + len(END) - len(self._tail)
            self._dropped += end - pos
            pos, self._pasting, self._tail = end, False, b""
        return b"".join(kept), started

    async def screen(self, data: bytes) -> bytes:
        """What of ``data`` may reach the remote side."""
        kept, started = self.strip(data)
        if started:
            self._tell(refused_frame("paste"))
            await self._audit("paste", "terminal: a bracketed paste")
        return kept
