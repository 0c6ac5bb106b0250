"""X11 clients on a test display (an ``Xvnc`` of :mod:`testsupport.xvnc`), server side.

What a person at the remote desktop would see and do, checked without the VNC or
RDP protocol in the way:

- :class:`KeyWindow`: a window filling the screen that takes the keyboard focus,
  draws a pattern (so the desktop is not one flat colour), shows the text typed
  into it and records every key press (``typed``, ``keysyms``).
- :class:`Clipboard`: the X ``CLIPBOARD`` selection: ``get()`` asks its owner for
  the text, ``set(text)`` owns it and answers requests, as an editor would.
- :class:`Painter`: fills a window with one colour on demand (benchmarks time how
  long the change takes to reach a browser's canvas).

Each opens its own connection (python-xlib, thread-safe mode) and runs its event
loop in a daemon thread; ``close()`` ends both. Requests are sent with ``sync()``,
never ``flush()``: in thread-safe mode a flush returns at once, sending nothing, while
another thread is sending, and what it queued then waits for the next request (an
answer to Xvnc's clipboard request sat unsent until Xvnc gave up, now and then).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import Xlib.threaded  # noqa: F401 - makes the display connections safe across threads
from Xlib import XK, X, Xatom
from Xlib.display import Display

PATTERN_COLOURS = (0x1F5FBF, 0xE8A33D, 0x2E9E5B, 0xB42318)


def _keysym_names() -> dict[int, str]:
    XK.load_keysym_group("xkb")
    names: dict[int, str] = {}
    for attribute in dir(XK):
        if attribute.startswith("XK_"):
            names.setdefault(getattr(XK, attribute), attribute[3:])
    return names


KEYSYM_NAMES = _keysym_names()


def keysym_name(keysym: int) -> str:
    """``a``, ``Return``, ``Control_L``... (X's names; hex for unknown ones)."""
    return KEYSYM_NAMES.get(keysym) or f"0x{keysym:x}"


class _Client:
    """One display connection and its event thread."""

    def __init__(self, display: str) -> None:
        self.display = Display(display)
        self.screen = self.display.screen()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._closed.is_set():
            try:
                event = self.display.next_event()
            except Exception:  # noqa: BLE001 - closed (python-xlib raises several kinds)
                return
            try:
                self.handle(event)
            except Exception:  # noqa: BLE001 - a test helper keeps serving
                if self._closed.is_set():
                    return

    def handle(self, event: Any) -> None:
        """One X event (in the event thread)."""

    def close(self) -> None:
        """Close the connection; the event thread ends with it."""
        self._closed.set()
        with contextlib.suppress(Exception):  # already gone
            self.display.close()


class KeyWindow(_Client):
    """A focused full-screen window that records and shows what is typed into it."""

    def __init__(self, display: str, width: int, height: int) -> None:
        super().__init__(display)
        self.width, self.height = width, height
        root = self.screen.root
        self.window = root.create_window(
            0,
            0,
            width,
            height,
            0,
            self.screen.root_depth,
            X.InputOutput,
            X.CopyFromParent,
            background_pixel=0xF5F7FA,
            override_redirect=True,
            event_mask=X.ExposureMask | X.KeyPressMask | X.ButtonPressMask,
        )
        self.window.set_wm_name("hostgate key window")
        self.gcs = [self.window.create_gc(foreground=colour) for colour in PATTERN_COLOURS]
        self.text_gc = self.window.create_gc(foreground=0x17202B, background=0xF5F7FA)
        font = self.display.open_font("fixed")
        if font is not None:
            self.text_gc.change(font=font)
        self.keysyms: list[str] = []
        self.typed = ""
        self.clicks = 0
        self._lock = threading.Lock()
        self.window.map()
        self.display.sync()
        self.focus()
        self.draw()
        self._start()

    def focus(self) -> None:
        """Give the window the keyboard focus (there is no window manager to do it)."""
        self.window.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.display.sync()

    def draw(self) -> None:
        """The pattern, a caption and the text typed so far."""
        self.window.clear_area(0, 0, self.width, self.height)
        stripe = self.width // len(self.gcs)
        for index, gc in enumerate(self.gcs):
            self.window.fill_rectangle(gc, index * stripe, 0, stripe, self.height // 5)
        self.window.fill_rectangle(self.gcs[0], 40, self.height // 3, self.width // 3, 80)
        self.window.fill_arc(self.gcs[2], self.width // 2, self.height // 3, 120, 120, 0, 360 * 64)
        with self._lock:
            typed = self.typed
        self.window.image_text(self.text_gc, 40, self.height - 80, "hostgate test desktop")
        self.window.image_text(self.text_gc, 40, self.height - 50, f"typed: {typed[-60:]}")
        self.display.sync()

    def handle(self, event: Any) -> None:
        if event.type == X.Expose and event.count == 0:
            self.draw()
        elif event.type == X.ButtonPress:
            with self._lock:
                self.clicks += 1
        elif event.type == X.KeyPress:
            shifted = 1 if event.state & X.ShiftMask else 0
            keysym = self.display.keycode_to_keysym(event.detail, shifted)
            if keysym == 0:
                keysym = self.display.keycode_to_keysym(event.detail, 0)
            name = keysym_name(keysym)
            # Latin-1 keysyms are their character; Unicode ones are 0x1000000 + code point
            text = chr(keysym) if 0x20 <= keysym <= 0xFF else ""
            if keysym >= 0x1000000:
                text = chr(keysym - 0x1000000)
            with self._lock:
                self.keysyms.append(name)
                if text and text.isprintable():
                    self.typed += text
            self.draw()

    def wait_typed(self, text: str, timeout: float = 15.0) -> str:
        """Wait until ``text`` has been typed into the window; everything typed so far."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if text in self.typed:
                    return self.typed
            time.sleep(0.05)
        with self._lock:
            return self.typed


class Clipboard(_Client):
    """The display's ``CLIPBOARD`` selection, read and owned like an X application does."""

    def __init__(self, display: str) -> None:
        super().__init__(display)
        self.window = self.screen.root.create_window(
            0, 0, 1, 1, 0, self.screen.root_depth, event_mask=X.PropertyChangeMask
        )
        self.clipboard = self.display.intern_atom("CLIPBOARD")
        self.utf8 = self.display.intern_atom("UTF8_STRING")
        self.targets = self.display.intern_atom("TARGETS")
        self.property = self.display.intern_atom("HOSTGATE_CLIPBOARD")
        self._text: str | None = None
        self._answer: str | None = None
        self._answered = threading.Event()
        self._start()

    def set(self, text: str) -> None:
        """Own the clipboard with ``text`` (as after Ctrl+C in an editor)."""
        self._text = text
        self.window.set_selection_owner(self.clipboard, X.CurrentTime)
        self.display.sync()

    def get(self, timeout: float = 5.0) -> str | None:
        """The clipboard's text now, asked of its owner; None when nobody owns it."""
        self._answered.clear()
        self._answer = None
        self.window.convert_selection(self.clipboard, self.utf8, self.property, X.CurrentTime)
        self.display.sync()
        self._answered.wait(timeout)
        return self._answer

    def wait_for(self, text: str, timeout: float = 15.0) -> str | None:
        """Ask again until the clipboard holds ``text``; the last answer."""
        deadline = time.monotonic() + timeout
        answer = None
        while time.monotonic() < deadline:
            answer = self.get()
            if answer == text:
                return answer
            time.sleep(0.2)
        return answer

    def handle(self, event: Any) -> None:
        if event.type == X.SelectionNotify:
            if event.property != X.NONE:
                reply = self.window.get_full_property(self.property, X.AnyPropertyType)
                value = reply.value if reply is not None else b""
                self._answer = (
                    value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                )
            self._answered.set()
        elif event.type == X.SelectionRequest:
            self._serve(event)
        elif event.type == X.SelectionClear:
            self._text = None

    def _serve(self, request: Any) -> None:
        from Xlib.protocol import event as xevent

        target_property = request.property or request.target
        if self._text is None:
            target_property = X.NONE
        elif request.target == self.targets:
            request.requestor.change_property(
                target_property, Xatom.ATOM, 32, [self.targets, self.utf8, Xatom.STRING]
            )
        elif request.target in (self.utf8, Xatom.STRING):
            data = self._text.encode(
                "utf-8" if request.target == self.utf8 else "latin-1", "replace"
            )
            request.requestor.change_property(target_property, request.target, 8, data)
        else:
            target_property = X.NONE
        notify = xevent.SelectionNotify(
            time=request.time,
            requestor=request.requestor,
            selection=request.selection,
            target=request.target,
            property=target_property,
        )
        request.requestor.send_event(notify)
        self.display.sync()


class Painter:
    """A window whose colour a benchmark changes on demand (no event thread)."""

    def __init__(self, display: str, width: int, height: int) -> None:
        self.display = Display(display)
        screen = self.display.screen()
        self.window = screen.root.create_window(
            0,
            0,
            width,
            height,
            0,
            screen.root_depth,
            background_pixel=0x000000,
            override_redirect=True,
        )
        self.width, self.height = width, height
        self.window.map()
        self.display.sync()

    def fill(self, colour: int) -> None:
        """Paint the whole window ``0xRRGGBB`` and wait until the server has done it."""
        self.window.change_attributes(background_pixel=colour)
        self.window.clear_area(0, 0, self.width, self.height)
        self.display.sync()

    def close(self) -> None:
        """Close the connection."""
        self.display.close()
