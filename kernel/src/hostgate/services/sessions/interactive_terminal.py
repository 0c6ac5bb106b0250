"""An interactive terminal: the output pump, recording, command log and re-attach.

A terminal opened with a client ``sessionId`` survives its socket for a grace
period and can be re-attached; the last 512 KiB of output are replayed to it.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...adapters import Terminal, TerminalSize
from ...closereasons import CloseReason
from .asciicast import CastRecorder
from .commandlog import CommandTracker
from .moderation import waiting_frame
from .output_text import OutputChunk, OutputChunker
from .paste_guard import PasteGuard
from .recording_format import STORAGE_FAILED
from .remote_session import Admission, LiveRemoteSession
from .replay_buffer import RECENT_BYTES, REPLAY_BYTES, ReplayBuffer

if TYPE_CHECKING:
    from .command_gate import CommandGate
    from .session_service import TerminalSessions

REATTACH_GRACE = {"telnet": 30.0}
DEFAULT_REATTACH_GRACE = 120.0


class TerminalSession(LiveRemoteSession):
    """An interactive terminal with recording, command log and optional re-attach."""

    kind = "terminal"
    recording_format = "cast"

    def __init__(
        self,
        service: TerminalSessions,
        admission: Admission,
        session_id: str,
        size: TerminalSize,
    ) -> None:
        super().__init__(service, admission, session_id)
        self.size = size
        self.terminal: Terminal | None = None
        self.recorder: CastRecorder | None = None
        self.tracker: CommandTracker | None = None
        self.log_commands = True
        """The tracker's entries go to the command log (False: it runs for command rules only)."""
        self.gate: CommandGate | None = None
        """Command rules: each Enter waits for their decision (None: no rules)."""
        self.output_index: OutputChunker | None = None
        """Output text for the ``session_text`` hook (recorded sessions, when a pack wants it)."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._input_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._recent = ReplayBuffer()
        self.viewers: list[Callable[[bytes], None]] = []
        """Live viewers (services/sessions/terminal_watch.py), handed every output chunk."""
        self.notice: str | None = None
        """A text frame for every socket that attaches (who is watching), or None."""
        self.shared_input = False
        """Someone besides the owner may type (a participant joined): keys are attributed."""
        self.held = admission.target.moderated
        """Input is held (a moderated session without a moderator): keys are dropped."""
        self.moderation: str | None = waiting_frame() if self.held else None
        """The moderation state as a text frame for every socket that attaches, or None."""
        self._typist = ""
        target = admission.target
        self.paste_guard = (
            None if target.allows("paste") else PasteGuard(self._notify, target.refuse)
        )
        """Drops bracketed pastes when the user may not paste here (``clipboard.paste``)."""

    @property
    def reattach_grace(self) -> float:
        """Grace for a client that gave a ``sessionId``; none otherwise."""
        if not self.client_session_id:
            return 0.0
        return REATTACH_GRACE.get(self.protocol, DEFAULT_REATTACH_GRACE)

    def start(self, terminal: Terminal) -> None:
        """Begin pumping the backend's output."""
        self.terminal = terminal
        self._reader = asyncio.create_task(self._read_loop(), name=f"terminal-{self.id}")

    async def _read_loop(self) -> None:
        assert self.terminal is not None
        await self._pump(self.terminal.read, "Shell closed", CloseReason.SHELL_CLOSED)

    def _received(self, data: bytes) -> None:
        super()._received(data)
        if self.recorder is not None:
            self.recorder.output(data, time.monotonic())
        if self.tracker is not None or self.output_index is not None:
            text = self._decoder.decode(data)
            if self.tracker is not None:
                self.tracker.output(text)
            if self.output_index is not None:
                self.output_index.feed(text, self.elapsed_ms())
        self._recent.add(data, REPLAY_BYTES if self.reattach_grace > 0 else RECENT_BYTES)
        for viewer in self.viewers:
            viewer(data)

    def replay(self) -> bytes:
        """The recent output: a re-attaching socket is shown it first, live viewers its screen."""
        return self._recent.contents()

    async def write(self, data: bytes, by: str = "") -> None:
        """Keystrokes: the owner's, or those of ``by``, a participant who joined."""
        if self.terminal is None or self.ended or not data or self.held:
            return
        if self.paste_guard is not None:
            data = await self.paste_guard.screen(data)
            if not data:
                return
        if self.shared_input:  # one flag per message: a session nobody joined pays nothing more
            self.typed_by(by or self.caller.username)
        self.last_input = time.monotonic()
        self.bytes_in += len(data)
        if self.gate is not None:
            await self.gate.keys(data)
            return
        await self.send(data)

    async def send(self, data: bytes) -> None:
        """Keys on their way to the server: the command log sees them, then the backend."""
        if self.terminal is None or self.ended:
            return
        if self.tracker is not None:
            self.tracker.input(self._input_decoder.decode(data))
        await self._forward(self.terminal.write, data)

    def _notify(self, frame: str) -> None:
        if self.attachment is not None:
            self.attachment.notify(frame)

    def typed_by(self, username: str) -> None:
        """Whose keys come next: the command log keeps it, the recording marks each change."""
        if self.tracker is not None:
            self.tracker.typist(username)
        if username != self._typist:
            self._typist = username
            if self.recorder is not None:
                self.recorder.marker(f"keys: {username}", time.monotonic())

    async def resize(self, size: TerminalSize) -> None:
        """A window size change from the socket."""
        if self.terminal is None or self.ended or size == self.size:
            return
        self.size = size
        if self.recorder is not None:
            self.recorder.resize(size.cols, size.rows, time.monotonic())
        if self.tracker is not None:
            self.tracker.resize(size.cols)
        await self._forward(self.terminal.resize, size)

    async def tick(self, now: float) -> None:
        """Flush the recording, collect command-log entries, then the common checks."""
        if self.recorder is not None:
            if not await self.service.recordings.disk_ok(force=False):
                self.recorder.stop("disk_low")
            self.recorder.writer.flush()
        if self.tracker is not None:
            self.tracker.tick()
            self._log_commands()
        if self.output_index is not None:
            self._queue_output(self.output_index.drain(self.elapsed_ms()))
        await super().tick(now)

    def _queue_output(self, chunks: list[OutputChunk]) -> None:
        """Hand output chunks to the ledger, with any password typed in the session scrubbed."""
        if self.tracker is not None:
            scrub = self.tracker.scrub
            chunks = [OutputChunk(c.offset_ms, scrub(c.text), c.marks) for c in chunks]
        self.service.ledger.queue_output(self, chunks)

    def _log_commands(self) -> None:
        assert self.tracker is not None
        entries = self.tracker.drain()
        if self.log_commands:
            self.service.ledger.queue_commands(self, entries)

    async def _close_backend(self) -> None:
        if self.gate is not None:
            await self.gate.close()
        if self.terminal is not None:
            await self.terminal.close()

    async def _finish_recording(self) -> tuple[str | None, int, str]:
        if self.output_index is not None:
            self._queue_output(self.output_index.finish())
        if self.tracker is not None:
            self.tracker.finish()
            self._log_commands()
        recorder = self.recorder
        if recorder is None:
            return None, 0, ""
        recorder.finish(time.monotonic())
        await asyncio.to_thread(recorder.writer.close)
        if recorder.writer.failure:
            return "stopped", recorder.writer.kept_size(), STORAGE_FAILED
        if recorder.stopped:
            return "stopped", recorder.size, recorder.stopped
        return "complete", recorder.size, ""
