"""A blocking SMB2/3 client for one share, on smbprotocol's low-level API.

Everything here blocks; ``files.py`` runs it in the adapter's own threads.
The low-level API is used on purpose: no global connection pool, no DFS
referrals that could send the gateway to another server than the approved
address, and pipelined reads and writes for throughput.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from hostgate import (
    ConnectionTarget,
    InvalidInput,
    RemoteEntry,
    RemoteError,
    RemoteTimeout,
    Unprocessable,
)
from smbprotocol import MAX_PAYLOAD_SIZE
from smbprotocol.connection import Connection, Request
from smbprotocol.exceptions import NoMoreFiles, NoSuchFile
from smbprotocol.file_info import (
    FileAttributes,
    FileDispositionInformation,
    FileInformationClass,
    FileRenameInformation,
)
from smbprotocol.header import Commands
from smbprotocol.open import (
    CreateDisposition,
    CreateOptions,
    FilePipePrinterAccessMask,
    ImpersonationLevel,
    Open,
    ShareAccess,
    SMB2SetInfoRequest,
    SMB2SetInfoResponse,
)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from . import srvsvc
from .errors import mapped

CONNECT_TIMEOUT = 15
OPERATION_TIMEOUT = 120
CHUNK = 1024 * 1024
WRITE_CHUNK = 4 * 1024 * 1024
"""Upload writes once the credit window holds PIPELINE_DEPTH of them: each write costs the
gateway the same Python (header, thread hop, the response's parsing) whatever its size."""
PIPELINE_DEPTH = 8
CREDIT_RESERVE = 8
CREDIT_POLL = 0.005
MAX_ENTRIES = 100_000
"""The most entries one listing may hold, and one recursive delete may visit (502 / 422 past it)."""
MAX_TREE_DEPTH = 128
"""The deepest a directory tree a recursive delete walks (docs/files.md, "Limits")."""
GUEST_USER = "Guest"
SHARE_ALL = (
    ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE
)
_SEPARATORS = re.compile(r"[\\/]+")


def share_path(path: str) -> str:
    """A path inside the share as SMB wants it: backslashes, no leading slash.

    ``.`` parts vanish and ``..`` never climbs above the share root.
    """
    if "\x00" in path:
        raise InvalidInput("Path must not contain NUL characters")
    parts: list[str] = []
    for part in _SEPARATORS.split(path):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "\\".join(parts)


def parent_and_name(path: str) -> tuple[str, str]:
    """Split a share path at its last backslash: (parent, name)."""
    parent, _, name = path.rpartition("\\")
    return parent, name


Buffer = bytes | memoryview
"""A piece of an upload: the bytes as they came, or a view of a part of them."""

Pending = tuple[Request, Callable[[Request], Any]]
"""A pipelined request and the function of smbprotocol's ``Open`` that collects its answer."""


def credit_charge(connection: Connection, message: Any) -> int:
    """The credits a request costs, as MS-SMB2 3.2.4.1.5 defines them.

    ``(max(sent payload, expected response payload) - 1) // 64 KiB + 1`` for the
    commands that carry data (READ, WRITE, IOCTL, QUERY_DIRECTORY), 1 for the others,
    0 for a CANCEL or a dialect without multi-credit requests: the charge
    smbprotocol puts in the request's header, read from its public fields.
    """
    command = message.COMMAND
    if not connection.supports_multi_credit or command == Commands.SMB2_CANCEL:
        return 0
    if command == Commands.SMB2_READ:
        payload = message["length"].get_value() + message["read_channel_info_length"].get_value()
    elif command == Commands.SMB2_WRITE:
        payload = message["length"].get_value() + message["write_channel_info_length"].get_value()
    elif command == Commands.SMB2_IOCTL:
        payload = max(len(message["buffer"]), message["max_output_response"].get_value())
    elif command == Commands.SMB2_QUERY_DIRECTORY:
        payload = max(len(message["buffer"]), message["output_buffer_length"].get_value())
    else:
        payload = 1
    return (max(0, int(payload) - 1) // int(MAX_PAYLOAD_SIZE)) + 1


def write_charge(connection: Connection, length: int) -> int:
    """The credit charge of a WRITE of ``length`` bytes (``credit_charge``'s rule)."""
    if not connection.supports_multi_credit:
        return 0
    return (max(0, length - 1) // int(MAX_PAYLOAD_SIZE)) + 1


class CreditWaitingConnection(Connection):  # type: ignore[misc]  # smbprotocol is untyped
    """smbprotocol's ``Connection`` whose sends wait for their credits instead of failing.

    smbprotocol refuses a request the credit window cannot cover at once ("requires
    1 credits but only 0 credits are available"): a listing or an open made while
    pipelined transfers hold the window would fail. ``send`` and ``send_compound``
    (smbprotocol's public entry points, which every ``Open``, ``Session`` and
    ``TreeConnect`` call goes through) first wait under ``credit_wait`` until the
    server's responses have given the credits back; signing, encryption and the
    socket stay smbprotocol's.
    """

    def __init__(
        self,
        guid: uuid.UUID,
        server_name: str,
        port: int,
        *,
        require_signing: bool,
        credit_wait: threading.Condition,
    ) -> None:
        super().__init__(guid, server_name, port=port, require_signing=require_signing)
        self.credit_wait = credit_wait
        """Held while a request is checked against the window and sent; notified as
        responses come back (``SmbShare.receive_bulk``)."""

    def _when_covered(self, charge: int, send: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + OPERATION_TIMEOUT
        with self.credit_wait:
            while True:
                window = self.sequence_window
                # a dead link answers at once: smbprotocol's send raises what happened
                dead = self.transport is None or not self.transport.connected
                if dead or window["high"] - window["low"] >= charge:
                    return send()
                if time.monotonic() > deadline:
                    raise RemoteTimeout("the SMB server granted no credits in time")
                self.credit_wait.wait(timeout=CREDIT_POLL)

    def send(self, message: Any, *args: Any, **kwargs: Any) -> Any:
        """Send as smbprotocol does, once the credit window covers ``message``."""
        if message.COMMAND == Commands.SMB2_ECHO:
            # smbprotocol's receiver thread pings an idle server itself: never make it wait
            return super().send(message, *args, **kwargs)
        return self._when_covered(
            credit_charge(self, message),
            lambda: super(CreditWaitingConnection, self).send(message, *args, **kwargs),
        )

    def send_compound(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        """``send_compound`` as smbprotocol does, once the window covers every message."""
        charge = sum(credit_charge(self, message) for message in messages)
        return self._when_covered(
            charge,
            lambda: super(CreditWaitingConnection, self).send_compound(messages, *args, **kwargs),
        )


_Row = tuple[str, int, int, datetime | None]
"""One directory entry as scanned: name, attributes, size, modification time."""


def _walks_into(attributes: int) -> bool:
    """A directory a recursive delete descends into (a link to one is not)."""
    return bool(attributes & FileAttributes.FILE_ATTRIBUTE_DIRECTORY) and not bool(
        attributes & FileAttributes.FILE_ATTRIBUTE_REPARSE_POINT
    )


def _entry(name: str, attributes: int, size: int, mtime: datetime | None) -> RemoteEntry:
    is_dir = bool(attributes & FileAttributes.FILE_ATTRIBUTE_DIRECTORY)
    return RemoteEntry(name=name, is_dir=is_dir, size=0 if is_dir else int(size), mtime=mtime)


class SmbShare:
    """One authenticated session and tree connect; reconnects when the link dropped."""

    def __init__(self, target: ConnectionTarget, share: str) -> None:
        self.target = target
        self.share = share
        self._lock = threading.Lock()
        self._credits = threading.Condition()
        self._connection: Connection | None = None
        self._tree: TreeConnect | None = None

    # -- connection ---------------------------------------------------------

    def _credentials(self) -> tuple[str, str, bool]:
        """(user, password, require signing); guest when the connection has neither."""
        username = self.target.username or ""
        password = self.target.password or ""
        if not username and not password:
            return GUEST_USER, "", False
        domain = str(self.target.extra.get("domain") or "").strip()
        if domain and "\\" not in username and "@" not in username:
            username = f"{domain}\\{username}"
        return username, password, True

    def connect(self) -> None:
        """Open the TCP connection, authenticate and connect to the share."""
        with self._lock:
            self._connect_locked()

    def _connect_locked(self) -> None:
        self._disconnect_locked()
        username, password, signing = self._credentials()
        what = f"SMB server {self.target.host}:{self.target.port}"
        connection = CreditWaitingConnection(
            uuid.uuid4(),
            self.target.address,
            self.target.port,
            require_signing=signing,
            credit_wait=self._credits,
        )
        try:
            with mapped(what, connecting=True):
                connection.connect(timeout=CONNECT_TIMEOUT)
                session = Session(connection, username, password, require_encryption=False)
                session.connect()
            with mapped(f"share '{self.share}'", connecting=True):
                tree = TreeConnect(session, rf"\\{self.target.host}\{self.share}")
                # A guest session has no signing key to verify SMB 3.0 negotiation with.
                tree.connect(require_secure_negotiate=signing)
        except BaseException:
            quietly(connection.disconnect, False)
            raise
        self._connection = connection
        self._tree = tree

    def ensure(self) -> TreeConnect:
        """The live tree connect, reconnecting first when the transport died."""
        with self._lock:
            connection = self._connection
            alive = (
                connection is not None
                and connection.transport is not None
                # smbprotocol closes the transport when its receiver thread fails
                and connection.transport.connected
            )
            if not alive or self._tree is None:
                self._connect_locked()
            assert self._tree is not None
            return self._tree

    def close(self) -> None:
        """Log off and close the TCP connection."""
        with self._lock:
            self._disconnect_locked()

    def _disconnect_locked(self) -> None:
        connection, self._connection, self._tree = self._connection, None, None
        if connection is not None and connection.transport is not None:
            quietly(connection.disconnect, True, 5)

    # -- handles ------------------------------------------------------------

    def open(
        self,
        path: str,
        access: int,
        *,
        disposition: int = CreateDisposition.FILE_OPEN,
        options: int = 0,
        attributes: int = 0,
    ) -> Open:
        """A handle on ``path`` (share-relative, backslashes)."""
        handle = Open(self.ensure(), path)
        handle.create(
            ImpersonationLevel.Impersonation,
            access,
            attributes,
            SHARE_ALL,
            disposition,
            options,
        )
        return handle

    @contextmanager
    def opened(self, path: str, access: int, **kwargs: Any) -> Iterator[Open]:
        """``open`` as a context manager that always closes the handle."""
        handle = self.open(path, access, **kwargs)
        try:
            yield handle
        finally:
            quietly(handle.close)

    def set_info(self, handle: Open, info: Any) -> None:
        """Send one SET_INFO (rename, delete disposition) on an open handle."""
        request = SMB2SetInfoRequest()
        request["info_type"] = info.INFO_TYPE
        request["file_info_class"] = info.INFO_CLASS
        request["file_id"] = handle.file_id
        request["buffer"] = info
        tree = handle.tree_connect
        sent = handle.connection.send(
            request, sid=tree.session.session_id, tid=tree.tree_connect_id
        )
        response = handle.connection.receive(sent, timeout=OPERATION_TIMEOUT)
        SMB2SetInfoResponse().unpack(response["data"].get_value())

    def mark_deleted(self, handle: Open) -> None:
        """Delete the file behind the handle once it is closed."""
        disposition = FileDispositionInformation()
        disposition["delete_pending"] = True
        self.set_info(handle, disposition)

    def rename_handle(self, handle: Open, new_path: str, *, replace: bool) -> None:
        """Rename or move the open file or directory to ``new_path`` in the same share."""
        info = FileRenameInformation()
        info["replace_if_exists"] = replace
        info["file_name"] = new_path.encode("utf-16-le")
        self.set_info(handle, info)

    # -- bulk transfers: pipelined, credit-aware -----------------------------

    def _credit_request(
        self, connection: Connection, charge: int, inflight: int, unit: int = 0
    ) -> int | None:
        """Wait (holding ``_credits``) until the window covers ``charge``; the credits to ask for.

        With requests of the caller's own in flight the caller gets None instead of
        waiting (it should collect a response first); with none it waits. The window
        grows while it could not hold PIPELINE_DEPTH requests of this size (or of
        ``unit`` credits, the size the requests will grow to).
        """
        deadline = time.monotonic() + OPERATION_TIMEOUT
        while True:
            window = connection.sequence_window
            available = window["high"] - window["low"]
            if available >= charge + (CREDIT_RESERVE if inflight else 0):
                break
            if inflight:
                return None
            if time.monotonic() > deadline:
                raise RemoteTimeout("the SMB server granted no credits in time")
            self._credits.wait(timeout=CREDIT_POLL)
        grow = available < (PIPELINE_DEPTH + 1) * max(charge, unit) + CREDIT_RESERVE
        return charge * 2 if grow else charge

    def send_bulk(
        self, handle: Open, prepared: Pending, inflight: int, unit: int = 0
    ) -> Pending | None:
        """Send a READ or WRITE made by ``Open.read``/``Open.write`` with ``send=False``.

        ``prepared`` is what they return: the message and the function that collects
        its answer. Sent when the credit window allows, growing the window; None when
        the caller's own requests hold the window (``_credit_request``). Credits come
        back as the connection's receiver thread sees responses.
        """
        message, collect = prepared
        connection = handle.connection
        charge = credit_charge(connection, message)
        tree = handle.tree_connect
        with self._credits:
            credit_request = self._credit_request(connection, charge, inflight, unit)
            if credit_request is None:
                return None
            request = connection.send(
                message,
                sid=tree.session.session_id,
                tid=tree.tree_connect_id,
                credit_request=credit_request,
            )
        return request, collect

    def send_write(
        self, handle: Open, pieces: Sequence[Buffer], offset: int, inflight: int
    ) -> Pending | None:
        """A pipelined WRITE of ``pieces`` at ``offset``, as ``send_bulk`` sends requests.

        smbprotocol packs, signs (or encrypts) and sends the request. Its ``Request``
        keeps the packed message (to resend a CREATE that met a symbolic link); a WRITE
        is never resent, so the copy of the upload's bytes is dropped once it is sent,
        and the writes in flight hold no upload data.
        """
        data = pieces[0] if len(pieces) == 1 and isinstance(pieces[0], bytes) else b"".join(pieces)
        unit = write_charge(handle.connection, self._write_limit(handle.connection, WRITE_CHUNK))
        pending = self.send_bulk(handle, handle.write(data, offset, send=False), inflight, unit)
        if pending is not None:
            pending[0].message["data"] = b""
        return pending

    def receive_bulk(self, pending: Pending) -> Any:
        """Wait for a pipelined response; returns the read bytes or the write count."""
        request, collect = pending
        try:
            return collect(request)
        finally:
            with self._credits:
                self._credits.notify_all()

    def chunk_size(self, handle: Open, kind: str) -> int:
        """The transfer size: 1 MiB, or less if the server negotiated less."""
        connection = handle.connection
        limit = connection.max_read_size if kind == "read" else connection.max_write_size
        return int(min(CHUNK, limit or CHUNK))

    @staticmethod
    def _write_limit(connection: Connection, size: int) -> int:
        return int(min(size, connection.max_write_size or CHUNK))

    def write_size(self, handle: Open) -> int:
        """The next write's size: WRITE_CHUNK once the free window covers one, else CHUNK.

        A write the window cannot cover while nothing is in flight would wait for credits
        that never come; smaller writes grow the window towards WRITE_CHUNK's first.
        """
        connection = handle.connection
        big = self._write_limit(connection, WRITE_CHUNK)
        window = connection.sequence_window
        if window["high"] - window["low"] >= write_charge(connection, big) + CREDIT_RESERVE:
            return big
        return self._write_limit(connection, CHUNK)

    # -- operations ---------------------------------------------------------

    def list(self, path: str) -> list[RemoteEntry]:
        """Entries of a directory, without ``.`` and ``..``."""
        with mapped(path or "/"):
            return [
                _entry(name, attributes, size, mtime)
                for name, attributes, size, mtime in self._scan(share_path(path))
            ]

    def _scan(self, smb: str) -> Sequence[_Row]:
        """``(name, attributes, size, mtime)`` of a directory's entries, at most ``MAX_ENTRIES``."""
        found: list[_Row] = []
        with self.opened(
            smb,
            FilePipePrinterAccessMask.FILE_READ_DATA
            | FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
            options=CreateOptions.FILE_DIRECTORY_FILE,
        ) as handle:
            flags = 0x01  # SMB2_RESTART_SCANS on the first query only
            while True:
                try:
                    batch = handle.query_directory(
                        "*", FileInformationClass.FILE_DIRECTORY_INFORMATION, flags=flags
                    )
                except (NoMoreFiles, NoSuchFile):
                    break
                flags = 0
                for info in batch:
                    name = info["file_name"].get_value().decode("utf-16-le")
                    if name in (".", ".."):
                        continue
                    if len(found) >= MAX_ENTRIES:
                        raise RemoteError(
                            f"The SMB directory {smb or '/'} has more than {MAX_ENTRIES:,} "
                            "entries; hostgate lists at most that many"
                        )
                    found.append(
                        (
                            name,
                            int(info["file_attributes"].get_value()),
                            int(info["end_of_file"].get_value()),
                            _timestamp(info["last_write_time"].get_value()),
                        )
                    )
        return found

    def stat(self, path: str) -> RemoteEntry:
        """Size, type and modification time of one path."""
        smb = share_path(path)
        with (
            mapped(path or "/"),
            self.opened(
                smb,
                FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
            ) as handle,
        ):
            name = parent_and_name(smb)[1]
            return _entry(
                name,
                int(handle.file_attributes or 0),
                int(handle.end_of_file or 0),
                _timestamp(handle.last_write_time),
            )

    def mkdir(self, path: str) -> None:
        """Create one directory (its parent must exist)."""
        smb = share_path(path)
        if not smb:
            raise InvalidInput("The share root already exists")
        with (
            mapped(path),
            self.opened(
                smb,
                FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
                disposition=CreateDisposition.FILE_CREATE,
                options=CreateOptions.FILE_DIRECTORY_FILE,
                attributes=FileAttributes.FILE_ATTRIBUTE_DIRECTORY,
            ),
        ):
            pass

    def remove(self, path: str) -> None:
        """Delete a file, or a directory with everything in it."""
        smb = share_path(path)
        if not smb:
            raise InvalidInput(
                "The share root cannot be deleted; delete what is in it one by one",
                code="root_not_deletable",
            )
        with mapped(path):
            self._remove(smb)

    def _remove(self, smb: str) -> None:
        """Delete ``smb`` and what is under it, deepest first; refuse a tree past the bounds.

        The whole tree is walked before anything is deleted (iteratively, never by
        recursion), so a tree deeper than ``MAX_TREE_DEPTH`` or larger than
        ``MAX_ENTRIES`` is refused with nothing changed. Links are deleted, never followed.
        """
        doomed = [smb]
        with self.opened(
            smb,
            FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
            options=CreateOptions.FILE_OPEN_REPARSE_POINT,
        ) as handle:
            attributes = int(handle.file_attributes or 0)
        pending = [(smb, 1)] if _walks_into(attributes) else []
        while pending:
            directory, depth = pending.pop()
            for name, entry_attributes, _, _ in self._scan(directory):
                child = f"{directory}\\{name}"
                doomed.append(child)
                if len(doomed) > MAX_ENTRIES:
                    raise Unprocessable(
                        f"{smb} holds more than {MAX_ENTRIES:,} entries; hostgate deletes "
                        "at most that many at once (delete its parts one by one)",
                        code="tree_too_large",
                    )
                if _walks_into(entry_attributes):
                    if depth >= MAX_TREE_DEPTH:
                        raise Unprocessable(
                            f"{smb} is more than {MAX_TREE_DEPTH} directories deep; hostgate "
                            "deletes at most that deep (delete its deepest parts first)",
                            code="tree_too_deep",
                        )
                    pending.append((child, depth + 1))
        # every child was found after its parent: the reverse deletes the deepest first
        for path in reversed(doomed):
            with self.opened(
                path,
                FilePipePrinterAccessMask.DELETE | FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
                options=CreateOptions.FILE_OPEN_REPARSE_POINT,
            ) as handle:
                self.mark_deleted(handle)

    def rename(self, old_path: str, new_path: str) -> None:
        """Rename or move inside the share; an existing target is refused."""
        old, new = share_path(old_path), share_path(new_path)
        if not old or not new:
            raise InvalidInput("The share root cannot be renamed or replaced")
        with (
            mapped(old_path, target=new_path),
            self.opened(
                old,
                FilePipePrinterAccessMask.DELETE | FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
                options=CreateOptions.FILE_OPEN_REPARSE_POINT,
            ) as handle,
        ):
            self.rename_handle(handle, new, replace=False)


_PIPE_ACCESS = (
    FilePipePrinterAccessMask.FILE_READ_DATA
    | FilePipePrinterAccessMask.FILE_WRITE_DATA
    | FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES
    | FilePipePrinterAccessMask.READ_CONTROL
    | FilePipePrinterAccessMask.SYNCHRONIZE
)


def list_shares(target: ConnectionTarget) -> list[srvsvc.Share]:
    """The shares the server offers (``NetrShareEnum`` on ``IPC$``), in its order."""
    ipc = SmbShare(target, "IPC$")
    ipc.connect()
    try:
        pipe_options = CreateOptions.FILE_NON_DIRECTORY_FILE
        with (
            mapped("the server's share list"),
            ipc.opened("srvsvc", _PIPE_ACCESS, options=pipe_options) as pipe,
        ):
            pipe.write(srvsvc.bind_request(), 0)
            srvsvc.check_bind_ack(pipe.read(0, srvsvc.FRAGMENT))
            pipe.write(srvsvc.share_enum_request(), 0)
            fragments = [pipe.read(0, srvsvc.FRAGMENT)]
            while not srvsvc.is_last(fragments[-1]) and len(fragments) < 1000:
                fragments.append(pipe.read(0, srvsvc.FRAGMENT))
        return srvsvc.parse_share_enum(srvsvc.response_stub(fragments))
    finally:
        ipc.close()


def _timestamp(value: Any) -> datetime | None:
    return value if isinstance(value, datetime) and value != datetime.max else None


def quietly(function: Any, *args: Any) -> None:
    """Best-effort cleanup: a failure to close must not hide the real error."""
    try:
        function(*args)
    except Exception:  # noqa: BLE001 - cleanup of an already failing or closing session
        return
