"""The one error family: every failure a caller can cause maps to one JSON shape.

Services raise these (they carry a status, never build a response); ``install``
wires the handlers that render ``{"error": message, "code": code}``.
"""

from __future__ import annotations

import logging
from typing import Any

from quart import Quart, Response, jsonify
from werkzeug.exceptions import HTTPException

log = logging.getLogger("hostgate.errors")


class ApiError(Exception):
    """Base of every error that reaches a caller as ``{"error", "code"}``."""

    status = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.headers = headers or {}
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        """The JSON body of this error."""
        return {"error": self.message, "code": self.code, **self.extra}


class InvalidInput(ApiError):
    """The caller sent something malformed or out of range (400)."""

    status = 400
    code = "invalid_input"


class NotAuthenticated(ApiError):
    """No valid session (401) - clients log out on this, so use it for nothing else."""

    status = 401
    code = "not_authenticated"


class PermissionDenied(ApiError):
    """Authenticated, but not allowed (403)."""

    status = 403
    code = "forbidden"


class NotFound(ApiError):
    """The named thing does not exist or is not visible to the caller (404)."""

    status = 404
    code = "not_found"


class MethodNotAllowed(ApiError):
    """The route exists, the method does not (405)."""

    status = 405
    code = "method_not_allowed"


class Conflict(ApiError):
    """The request conflicts with the current state (409)."""

    status = 409
    code = "conflict"


class PayloadTooLarge(ApiError):
    """The body is larger than allowed (413)."""

    status = 413
    code = "payload_too_large"


class Unprocessable(ApiError):
    """Well-formed but semantically rejected, e.g. a wrong backup password (422)."""

    status = 422
    code = "unprocessable"


class RateLimited(ApiError):
    """Too many attempts (429) with ``Retry-After``."""

    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, code: str | None = None) -> None:
        super().__init__(message, code=code, headers={"Retry-After": str(max(1, int(retry_after)))})
        self.retry_after = max(1, int(retry_after))


class RemoteError(ApiError):
    """The remote server refused or failed (502)."""

    status = 502
    code = "remote_error"


class RemoteTimeout(ApiError):
    """The remote server did not answer in time (504)."""

    status = 504
    code = "remote_timeout"


class RemoteNotFound(NotFound):
    """The remote server says the path or object does not exist (404)."""

    code = "remote_not_found"


class RemotePermissionDenied(PermissionDenied):
    """The remote server refused the operation for these credentials (403)."""

    code = "remote_permission_denied"


class RemoteAuthFailed(RemoteError):
    """The stored credentials were rejected by the remote server (502)."""

    code = "remote_auth_failed"


class RemoteUnreachable(RemoteError):
    """The remote host could not be reached (502)."""

    code = "remote_unreachable"


class StorageUnavailable(ApiError):
    """The database or the disk cannot take a write right now (503, ``Retry-After``).

    ``storage_busy``: another writer held the database lock past the busy timeout
    (SQLite ``SQLITE_BUSY``/``SQLITE_LOCKED``, PostgreSQL lock timeout, deadlock or
    serialization failure). ``storage_full``: the disk (or the database's size
    limit) is full. The request's own transaction was rolled back.
    """

    status = 503
    code = "storage_busy"


_BUSY_SQLSTATES = {"55P03", "40001", "40P01"}
_FULL_SQLSTATES = {"53100"}


def storage_error(error: BaseException) -> StorageUnavailable | None:
    """The 503 for a database or disk failure a retry may cure; None for anything else."""
    import errno

    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return _full()
    original = getattr(error, "orig", None)
    if original is None:
        return None
    sqlite_name = str(getattr(original, "sqlite_errorname", "") or "")
    sqlstate = str(getattr(original, "sqlstate", "") or getattr(original, "pgcode", "") or "")
    if sqlite_name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or sqlstate in _BUSY_SQLSTATES:
        return StorageUnavailable(
            "The database is busy; try again in a moment",
            headers={"Retry-After": "1"},
        )
    if sqlite_name == "SQLITE_FULL" or sqlstate in _FULL_SQLSTATES:
        return _full()
    return None


def _full() -> StorageUnavailable:
    return StorageUnavailable(
        "The server's storage is full; nothing was changed",
        code="storage_full",
        headers={"Retry-After": "60"},
    )


def error_response(error: ApiError) -> Response:
    """Render an ApiError as the JSON error response."""
    response = jsonify(error.body())
    response.status_code = error.status
    for name, value in error.headers.items():
        response.headers[name] = value
    return response


_HTTP_CODES = {
    400: ("invalid_input", "Bad request"),
    404: ("not_found", "Not found"),
    405: ("method_not_allowed", "Method not allowed"),
    411: ("length_required", "Content-Length required"),
    413: ("payload_too_large", "Request body too large"),
    415: ("unsupported_media_type", "Unsupported media type"),
    416: ("range_not_satisfiable", "Range not satisfiable"),
}


def install(app: Quart) -> None:
    """Register the handlers that turn every failure into the one JSON shape."""
    from quart_schema import RequestSchemaValidationError

    @app.errorhandler(ApiError)
    async def _api_error(error: ApiError) -> Response:
        return error_response(error)

    @app.errorhandler(RequestSchemaValidationError)
    async def _schema_error(error: RequestSchemaValidationError) -> Response:
        detail = error.validation_error
        message = "Invalid request body"
        errors = getattr(detail, "errors", None)
        if callable(errors):
            parts = []
            for item in errors(include_url=False, include_context=False, include_input=False):
                where = ".".join(str(p) for p in item.get("loc", ())) or "body"
                parts.append(f"{where}: {item.get('msg')}")
            if parts:
                message = "; ".join(parts[:5])
        elif detail is not None:
            message = f"Invalid request body: {detail}"
        return error_response(InvalidInput(message))

    @app.errorhandler(HTTPException)
    async def _http_error(error: HTTPException) -> Response:
        status = error.code or 500
        code, default = _HTTP_CODES.get(status, ("http_error", error.name or "Error"))
        message = default
        if status == 400 and error.description and "JSON" in str(error.description):
            message = "Malformed JSON body"
        response = error_response(ApiError(message, code=code, status=status))
        if status == 405 and hasattr(error, "valid_methods") and error.valid_methods:
            response.headers["Allow"] = ", ".join(error.valid_methods)
        return response

    @app.errorhandler(UnicodeDecodeError)
    async def _not_utf8(error: UnicodeDecodeError) -> Response:
        return error_response(InvalidInput("Request body is not valid UTF-8"))

    @app.errorhandler(Exception)
    async def _unexpected(error: Exception) -> Response:
        storage = storage_error(error)
        if storage is not None:
            # the driver's own message only: SQLAlchemy's text carries the statement's parameters
            log.warning("request refused (%s): %s", storage.code, getattr(error, "orig", error))
            return error_response(storage)
        log.exception("unhandled error", exc_info=error)
        return error_response(ApiError("Internal server error", code="internal", status=500))
