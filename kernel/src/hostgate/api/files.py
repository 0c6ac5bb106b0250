"""``/<protocol>/<connectionId>/...``: file management, once for every file protocol (SPEC 4.1).

The protocol segment names a loaded ProtocolSpec with ``open_files`` (``sftp``,
``smb``, ``ftp``). Views do only HTTP (the body, query, Range and headers);
``kernel.file_transfers`` (services/sessions/file_transfers.py) checks the caller may use
the connection, leases a pooled remote session, runs the adapter operation,
records the file event and translates failures into the error shape.
"""

from __future__ import annotations

import logging
import stat as stat_module
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response, g, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict
from werkzeug.exceptions import HTTPException
from werkzeug.http import http_date

from ..adapters import STAT_FIELDS, RemoteEntry
from ..descriptors import ProtocolSpec
from ..errors import ApiError, InvalidInput, NotFound, error_response
from ..guards import app_kernel, authenticated, current_caller
from ..openapi import Success, answers
from ..requestbody import streamed_body
from ..services.netpolicy import conceal
from ..services.sessions.file_sessions import client_key_of, entries_detail, human_size
from ..services.sessions.file_transfers import Download, FileWork
from ..services.sessions.remote_file_pool import (
    RemotePath,
    check_not_root,
    check_path,
)
from ..timefmt import iso
from .fields import WHOLE
from .ranges import requested_range

if TYPE_CHECKING:
    pass

log = logging.getLogger("hostgate.api.files")

blueprint = Blueprint("files", __name__)


@blueprint.errorhandler(ApiError)
async def _remote_failure(error: ApiError) -> Response:
    """Errors in the one shape; a failing target reads the same to callers who may not probe."""
    return error_response(conceal(g.get("caller"), error))


BASE = "/<protocol>/<connection_id>"
SESSION_HEADER = "X-File-Session-Id"


REMOTE = (502, 504)
"""What a route that talks to the remote server adds: it failed, or did not answer."""


# Bodies take JSON types as they are: "0644" or true is never a mode.
STRICT = ConfigDict(strict=True)


class PathBody(BaseModel):
    """A remote path."""

    model_config = STRICT

    path: RemotePath


class ListBody(BaseModel):
    """A directory to list; empty means the session's starting directory."""

    model_config = STRICT

    path: RemotePath | Literal[""] = ""


class RenameBody(BaseModel):
    """Rename or move."""

    model_config = STRICT

    oldPath: RemotePath  # noqa: N815 - the spec's field name
    newPath: RemotePath  # noqa: N815


class ChmodBody(BaseModel):
    """New Unix permission bits (an integer such as 420 for 0644)."""

    model_config = STRICT

    path: RemotePath
    mode: Annotated[int, Field(ge=0, le=0o7777), WHOLE]


class CopyBody(BaseModel):
    """Server-side copy of a file or a directory tree."""

    model_config = STRICT

    srcPath: RemotePath  # noqa: N815
    destPath: RemotePath  # noqa: N815


class FileEntry(TypedDict):
    """A directory entry: name and the protocol's attributes."""

    filename: str
    fileAttributes: dict[str, Any]


class Listing(TypedDict):
    """A directory's entries."""

    files: list[FileEntry]


class PathQuery(BaseModel):
    """``?path=``: the remote path."""

    path: RemotePath


async def context(protocol: str, connection_id: str) -> FileWork:
    """Protocol, caller and connection access for the current request."""
    client_key = client_key_of(request.headers.get(SESSION_HEADER))
    return await app_kernel().file_transfers.open(
        protocol, connection_id, current_caller(), client_key
    )


def query_path(name: str = "path") -> str:
    """A required path from the query string."""
    value = request.args.get(name)
    if value is None:
        raise InvalidInput(f"query parameter {name} is required")
    return check_path(value, name)


def permissions_text(entry: RemoteEntry) -> str:
    """Symbolic permissions such as ``drwxr-xr-x``."""
    if entry.mode is not None:
        mode = entry.mode
        if stat_module.S_IFMT(mode) == 0:
            mode |= stat_module.S_IFDIR if entry.is_dir else stat_module.S_IFREG
        return stat_module.filemode(mode)
    return ("d" if entry.is_dir else "-") + "---------"


ATTRIBUTE_VALUES: dict[str, Callable[[RemoteEntry], Any]] = {
    "size": lambda e: e.size,
    "isDirectory": lambda e: e.is_dir,
    "permissions": permissions_text,
    "mode": lambda e: e.mode,
    "uid": lambda e: e.uid,
    "gid": lambda e: e.gid,
    "atime": lambda e: iso(e.atime),
    "mtime": lambda e: iso(e.mtime),
}
FULL_ATTRIBUTES = STAT_FIELDS
BASIC_ATTRIBUTES = ("size", "isDirectory")


def entry_json(entry: RemoteEntry, spec: ProtocolSpec) -> dict[str, Any]:
    """A file entry: ``{filename, fileAttributes}`` in the protocol's attribute set."""
    names = FULL_ATTRIBUTES if spec.file_attributes == "full" else BASIC_ATTRIBUTES
    return {
        "filename": entry.name,
        "fileAttributes": {name: ATTRIBUTE_VALUES[name](entry) for name in names},
    }


def stat_json(entry: RemoteEntry, spec: ProtocolSpec) -> dict[str, Any]:
    """A flat stat result with the protocol's fields."""
    return {name: ATTRIBUTE_VALUES[name](entry) for name in spec.stat_fields}


@blueprint.post(f"{BASE}/list")
@authenticated
@validate_request(ListBody)
@tag(["files"])
@answers(Listing, errors=REMOTE)
async def list_directory(protocol: str, connection_id: str, data: ListBody) -> dict[str, Any]:
    """The entries of a remote directory."""
    path = check_path(data.path, allow_empty=True) or "."
    ctx = await context(protocol, connection_id)
    entries: list[RemoteEntry] = await ctx.run("list", lambda a: a.list(path), retry=True)
    entries.sort(key=lambda e: (not e.is_dir, e.name.casefold(), e.name))
    await ctx.log("browse", path, entries_detail(len(entries)))
    return {"files": [entry_json(e, ctx.spec) for e in entries]}


@blueprint.post(f"{BASE}/stat")
@authenticated
@validate_request(PathBody)
@tag(["files"])
@answers(dict[str, Any], errors=REMOTE)
async def stat_path(protocol: str, connection_id: str, data: PathBody) -> dict[str, Any]:
    """Attributes of one remote path, flat."""
    path = check_path(data.path)
    spec = app_kernel().file_transfers.spec(protocol)
    if not spec.stat_fields:
        raise NotFound(f"{spec.name} does not support stat", code="unsupported_operation")
    ctx = await context(protocol, connection_id)
    entry: RemoteEntry = await ctx.run("stat", lambda a: a.stat(path), retry=True)
    return stat_json(entry, ctx.spec)


@blueprint.post(f"{BASE}/mkdir")
@authenticated
@validate_request(PathBody)
@tag(["files"])
@answers(Success, errors=REMOTE)
async def make_directory(protocol: str, connection_id: str, data: PathBody) -> Success:
    """Create a remote directory."""
    path = check_path(data.path)
    ctx = await context(protocol, connection_id)
    await ctx.run("mkdir", lambda a: a.mkdir(path))
    await ctx.log("mkdir", path)
    return {"success": True}


@blueprint.delete(f"{BASE}/file")
@authenticated
@tag(["files"])
@answers(Success, errors=REMOTE, query=PathQuery)
async def delete_path(protocol: str, connection_id: str) -> Success:
    """Delete a remote file, or a directory with everything in it (never the root)."""
    path = check_not_root(query_path())
    ctx = await context(protocol, connection_id)
    await ctx.allow("delete", path)
    await ctx.run("delete", lambda a: a.remove(path), timeout=None)
    await ctx.log("delete", path)
    return {"success": True}


@blueprint.post(f"{BASE}/rename")
@authenticated
@validate_request(RenameBody)
@tag(["files"])
@answers(Success, errors=REMOTE)
async def rename_path(protocol: str, connection_id: str, data: RenameBody) -> Success:
    """Rename or move a remote file or directory."""
    old = check_path(data.oldPath, "oldPath")
    new = check_path(data.newPath, "newPath")
    ctx = await context(protocol, connection_id)
    await ctx.run("rename", lambda a: a.rename(old, new))
    await ctx.log("rename", old, f"{old} → {new}")
    return {"success": True}


@blueprint.post(f"{BASE}/chmod")
@authenticated
@validate_request(ChmodBody)
@tag(["files"])
@answers(Success, errors=REMOTE)
async def change_mode(protocol: str, connection_id: str, data: ChmodBody) -> Success:
    """Change the Unix permission bits of a remote path."""
    path = check_path(data.path)
    ctx = await context(protocol, connection_id)
    await ctx.run("chmod", lambda a: a.chmod(path, data.mode), retry=True)
    await ctx.log("chmod", path, f"{data.mode:04o}")
    return {"success": True}


@blueprint.post(f"{BASE}/copy")
@authenticated
@validate_request(CopyBody)
@tag(["files"])
@answers(Success, errors=REMOTE)
async def copy_path(protocol: str, connection_id: str, data: CopyBody) -> Success:
    """Copy a remote file or directory tree on the server side."""
    src = check_path(data.srcPath, "srcPath")
    dest = check_path(data.destPath, "destPath")
    ctx = await context(protocol, connection_id)
    await ctx.run("copy", lambda a: a.copy(src, dest), timeout=None)
    await ctx.log("copy", src, f"{src} → {dest}")
    return {"success": True}


@blueprint.post(f"{BASE}/upload")
@authenticated
@tag(["files"])
@answers(Success, errors=REMOTE, query=PathQuery, request_media_type="application/octet-stream")
async def upload_file(protocol: str, connection_id: str) -> Success:
    """Stream the raw request body into a remote file (temporary name, renamed on success)."""
    path = query_path()
    ctx = await context(protocol, connection_id)
    await ctx.allow("upload", path)
    body = streamed_body()
    expected = request.content_length
    received = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal received
        stream = aiter(body)
        while True:
            try:
                chunk = await anext(stream)
            except StopAsyncIteration:
                break
            except HTTPException as exc:
                raise ApiError(
                    exc.description or exc.name, code="bad_body", status=exc.code or 400
                ) from None
            if chunk:
                received += len(chunk)
                yield chunk
        if expected is not None and received != expected:
            raise InvalidInput(
                f"upload incomplete: received {received} of {expected} bytes",
                code="upload_incomplete",
            )

    await ctx.upload(path, chunks(), lambda: received, size=expected)
    return {"success": True}


def content_disposition(path: str) -> str:
    """``attachment`` with an ASCII fallback name and the exact UTF-8 name (RFC 6266/5987)."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or "download"
    fallback = (
        "".join(c if 32 <= ord(c) < 127 and c not in '"\\%;' else "_" for c in name) or "download"
    )
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def validators(entry: RemoteEntry) -> tuple[str | None, str | None]:
    """(ETag, Last-Modified) from size and mtime, when the protocol reports an mtime."""
    if entry.mtime is None:
        return None, None
    stamp = int(entry.mtime.timestamp() * 1000)
    return f'"{entry.size:x}-{stamp:x}"', http_date(entry.mtime)


@blueprint.get(f"{BASE}/download")
@authenticated
@tag(["files"])
@answers(
    None, status=200, media_type="application/octet-stream", errors=(*REMOTE, 416), query=PathQuery
)
async def download_file(protocol: str, connection_id: str) -> Response:
    """Stream a remote file: Content-Length, attachment name, single byte ranges (206/416)."""
    path = query_path()
    ctx = await context(protocol, connection_id)
    await ctx.allow("download", path)
    download = await ctx.start_download(path)
    try:
        response, length = await _download_response(download, path)
    except BaseException as exc:
        await download.abandon(exc)  # the lease goes back whatever failed (a 416 too)
    response.content_length = length
    response.timeout = None
    return response


async def _download_response(download: Download, path: str) -> tuple[Response, int]:
    """The response to a started download (headers, range) and its length."""
    size = max(0, int(download.entry.size))
    etag, modified = validators(download.entry)
    chosen = requested_range(
        request.headers.get("Range"),
        size,
        if_range=request.headers.get("If-Range"),
        validators=(etag, modified),
    )
    start, stop = chosen if chosen is not None else (0, size)
    length = stop - start
    headers = {
        "Content-Type": "application/octet-stream",
        "Content-Disposition": content_disposition(path),
        "Accept-Ranges": "bytes",
        "Cache-Control": "no-store",
    }
    if etag is not None and modified is not None:
        headers["ETag"] = etag
        headers["Last-Modified"] = modified
    detail = human_size(length)
    if chosen is not None:
        headers["Content-Range"] = chosen.content_range(size)
        detail = f"{detail} (bytes {start}-{stop - 1} of {size})"
    status = 206 if chosen is not None else 200
    if request.method == "HEAD":
        await download.release()
        return Response(b"", status=status, headers=headers), length
    stream = await download.stream(start, length, detail)
    return Response(stream, status=status, headers=headers), length
