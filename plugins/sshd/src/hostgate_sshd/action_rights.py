"""Per-action rights at the front door: SFTP requests and transfer commands refused.

``command_actions`` names what an ``exec`` transfer command does as a whole (``scp -t``
uploads, ``rsync --server --sender`` downloads, ``--delete`` deletes...): the kernel
refuses the command before opening anything when the user may not do one of them.

``SftpGate`` sits in the raw SFTP relay when the user may not upload, download or
delete on the connection. It frames the client's packets and holds each ``open``,
``remove`` and ``rmdir`` request whole (they are small) until it can read it: a request
for a denied action never reaches the server; the gate answers it with
``SSH_FX_PERMISSION_DENIED`` and the reason. Everything else passes as it came (an
upload's ``write`` packets are never held). The answer goes to the client between two of
the server's packets (the gate frames those too), never inside one.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable

from hostgate import action_reason

from .sftp_relay import FXF_READ, FXF_WRITING, OPEN, REMOVE, RMDIR, STATUS

FILE_ACTIONS = frozenset({"upload", "download", "delete"})
FX_PERMISSION_DENIED = 3
HOLD_MAX = 256 * 1024
"""A request held whole is at most this long (a path is at most a few KiB); a longer
one of a watched type is refused unread."""
LENGTH = 4


def command_actions(command: str) -> frozenset[str]:
    """The file actions a transfer command does (empty for any other command)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return frozenset()
    if not words:
        return frozenset()
    program = posixpath.basename(words[0])
    args = words[1:]
    if program == "scp":
        flags = {c for w in args if w.startswith("-") and w != "--" for c in w[1:]}
        return frozenset(
            {*(("upload",) if "t" in flags else ()), *(("download",) if "f" in flags else ())}
        )
    if program == "rsync" and "--server" in args:
        actions = {"download" if "--sender" in args else "upload"}
        if any(w.startswith("--delete") or w == "--remove-source-files" for w in args):
            actions.add("delete")
        return frozenset(actions)
    if program == "git" and args:
        program, args = f"git-{args[0]}", args[1:]
    if program in ("git-upload-pack", "git-upload-archive"):
        return frozenset({"download"})
    if program == "git-receive-pack":
        return frozenset({"upload"})
    return frozenset()


def _string(packet: bytes, at: int) -> tuple[bytes, int]:
    size = int.from_bytes(packet[at : at + 4], "big")
    end = at + 4 + size
    if end > len(packet):
        raise IndexError("string past the packet")
    return packet[at + 4 : end], end


def denial(request_id: bytes, message: str) -> bytes:
    """An ``SSH_FXP_STATUS`` packet: permission denied, with the reason."""
    text = message.encode()
    body = (
        bytes([STATUS])
        + request_id
        + FX_PERMISSION_DENIED.to_bytes(4, "big")
        + len(text).to_bytes(4, "big")
        + text
        + (0).to_bytes(4, "big")  # language tag: empty
    )
    return len(body).to_bytes(4, "big") + body


class SftpGate:
    """Refuses the SFTP requests of denied actions (one per relayed ``sftp`` channel)."""

    def __init__(
        self,
        denied: frozenset[str],
        *,
        refuse: Callable[[str, str], None],
        to_client: Callable[[bytes], None],
    ) -> None:
        self.denied = denied & FILE_ACTIONS
        self._refuse = refuse
        self._to_client = to_client
        self._watched = {
            *((OPEN,) if self.denied & {"upload", "download"} else ()),
            *((REMOVE, RMDIR) if "delete" in self.denied else ()),
        }
        # the client's stream: a header being read, bytes to pass, a request being held
        self._head = bytearray()
        self._passing = 0
        self._held: bytearray | None = None
        self._holding = 0
        self._skipping = 0
        self._broken = False
        # the server's stream: where its packets end, the answers waiting for an end
        self._server_head = bytearray()
        self._server_left = 0
        self._answers: list[bytes] = []

    # -- client to server ---------------------------------------------------------

    def from_client(self, data: bytes) -> bytes:
        """The client's bytes less the refused requests."""
        if self._broken:
            return data
        out: list[bytes | memoryview] = []
        view = memoryview(data)
        i, n = 0, len(data)
        while i < n:
            if self._passing:
                take = min(self._passing, n - i)
                out.append(view[i : i + take])
                self._passing -= take
                i += take
            elif self._skipping:
                take = min(self._skipping, n - i)
                self._skipping -= take
                i += take
            elif self._held is not None:
                take = min(self._holding, n - i)
                self._held += view[i : i + take]
                self._holding -= take
                i += take
                if not self._holding:
                    packet, self._held = bytes(self._held), None
                    if self._allowed(packet):
                        out.append(packet)
            else:
                take = min(LENGTH + 1 + 4 - len(self._head), n - i)
                self._head += view[i : i + take]
                i += take
                if len(self._head) < LENGTH + 1 + 4:
                    break
                out.extend(self._start(bytes(self._head)))
                self._head.clear()
        if len(out) == 1 and isinstance(out[0], memoryview) and len(out[0]) == n:
            return data
        return b"".join(out)

    def _start(self, head: bytes) -> list[bytes]:
        """A packet's length, type and id are read: pass it, hold it or skip it."""
        length = int.from_bytes(head[:LENGTH], "big")
        kind = head[LENGTH]
        rest = length - 5  # type and id are read
        if rest < 0:  # not SFTP as we know it: relay it all unread (the server answers)
            self._broken = True
            return [head]
        if kind not in self._watched:
            self._passing = rest
            return [head]
        if length > HOLD_MAX:
            self._skipping = rest
            self._deny(head[LENGTH + 1 :], self._oversized(kind), "(a request too long to read)")
            return []
        self._held = bytearray(head)
        self._holding = rest
        if rest == 0:
            packet, self._held = bytes(self._held), None
            return [packet] if self._allowed(packet) else []
        return []

    def _oversized(self, kind: int) -> str:
        if kind == OPEN:
            return "upload" if "upload" in self.denied else "download"
        return "delete"

    def _allowed(self, packet: bytes) -> bool:
        """Whether a held request may go on; if not, answer and audit it."""
        request_id = packet[LENGTH + 1 : LENGTH + 5]
        kind = packet[LENGTH]
        try:
            path, at = _string(packet, LENGTH + 5)
            if kind == OPEN:
                flags = int.from_bytes(packet[at : at + 4], "big")
                wanted = []
                if flags & FXF_WRITING:
                    wanted.append("upload")
                if flags & FXF_READ:
                    wanted.append("download")
            else:
                wanted = ["delete"]
        except IndexError:
            return True  # the server refuses what it cannot read either
        for action in wanted:
            if action in self.denied:
                self._deny(request_id, action, path.decode(errors="replace"))
                return False
        return True

    def _deny(self, request_id: bytes, action: str, path: str) -> None:
        self._refuse(action, f"sftp {path}")
        answer = denial(request_id, action_reason(action))
        if self._server_head or self._server_left:
            self._answers.append(answer)  # after the server's packet under way
        else:
            self._to_client(answer)

    # -- server to client ---------------------------------------------------------

    def from_server(self, data: bytes) -> bytes:
        """The server's bytes, with waiting answers put in where a packet ends."""
        out: list[bytes] = []
        start, i, n = 0, 0, len(data)
        while i < n:
            if self._server_left:
                take = min(self._server_left, n - i)
                self._server_left -= take
                i += take
            else:
                take = min(LENGTH - len(self._server_head), n - i)
                self._server_head += data[i : i + take]
                i += take
                if len(self._server_head) == LENGTH:
                    self._server_left = int.from_bytes(self._server_head, "big")
                    self._server_head.clear()
            if self._answers and not self._server_left and not self._server_head:
                out.append(data[start:i])
                out.extend(self._answers)
                self._answers.clear()
                start = i
        if not out:
            return data
        out.append(data[start:])
        return b"".join(out)
