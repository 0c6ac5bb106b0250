"""The one error family: every failure a caller can cause maps to one JSON shape.

Services raise these (they carry a status, never build a response); ``install``
wires the handlers that render ``{"error": message, "code": code}``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from quart import Quart, Response, jsonify, request
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

    def __init__(
        self,
        message: str,
        *,
        retry_after: int,
        code: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            message,
            code=code,
            headers={"Retry-After": str(max(1, int(retry_after)))},
            extra=extra,
        )
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


class SharedStateUnavailable(ApiError):
    """The state the gateway nodes share (Redis) cannot be reached (503, ``Retry-After``).

    Raised by what needs it (WebSocket tickets, rate limits) instead of hanging or
    letting the request through unchecked; the next request tries again.
    """

    status = 503
    code = "shared_state_unavailable"

    def __init__(self, message: str = "") -> None:
        super().__init__(
            message or "The gateway's shared state (Redis) is unavailable; try again in a moment",
            headers={"Retry-After": "5"},
        )


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


_PLAIN = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be text",
    "string_unicode": "must be text",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "none_required": "must be null",
    "string_pattern_mismatch": "is not in the expected format",
    "url_parsing": "must be a valid URL",
    "url_scheme": "must be a URL with an allowed scheme",
}
_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "greater_than": ("gt", "must be greater than {}"),
    "less_than": ("lt", "must be less than {}"),
    "string_too_short": ("min_length", "must be at least {} characters long"),
    "string_too_long": ("max_length", "must be at most {} characters long"),
    "too_short": ("min_length", "must have at least {} items"),
    "too_long": ("max_length", "must have at most {} items"),
    "literal_error": ("expected", "must be {}"),
    "enum": ("expected", "must be {}"),
}
_NUMBER_TYPES = {"int_type", "int_parsing", "float_type", "float_parsing", "int_from_float"}


def _step(value: Any, part: Any) -> tuple[bool, Any]:
    """(True, the value at ``part``) when the input has that key or index there."""
    if isinstance(value, dict) and part in value:
        return True, value[part]
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return True, value[part]
    return False, None


def _field_path(loc: tuple[Any, ...], data: Any, last_is_field: bool) -> str:
    """The field a pydantic ``loc`` names, without the union-member tags it inserts.

    ``fontSize: int | float`` reports ``("fontSize", "int")`` and ``("fontSize",
    "float")``: a part is kept when the input has it there (or it names the
    missing or unknown field itself), so both become ``fontSize``.
    """
    parts: list[str] = []
    value = data
    for index, part in enumerate(loc):
        present, value = _step(value, part)
        final = index == len(loc) - 1
        if present or (final and last_is_field) or data is None:
            parts.append(str(part))
    return ".".join(parts)


_PATTERNS: dict[str, str] = {}


def describe_pattern(pattern: str, text: str) -> str:
    """Say ``text`` ("must be an e-mail address") when a value does not match ``pattern``.

    Returns ``pattern``, so a field type can declare both in one expression.
    """
    _PATTERNS[pattern] = text
    return pattern


def _plain(item: Mapping[str, Any], where: str) -> str:
    """One error as a sentence about the field ``where``."""
    kind = str(item.get("type", ""))
    context = item.get("ctx") or {}
    if kind == "string_pattern_mismatch" and context.get("pattern") in _PATTERNS:
        return f"{where} {_PATTERNS[context['pattern']]}."
    if kind in _PLAIN:
        return f"{where} {_PLAIN[kind]}."
    if kind in _BOUNDS and _BOUNDS[kind][0] in context:
        key, text = _BOUNDS[kind]
        return f"{where} {text.format(context[key])}."
    message = str(item.get("msg", "is not valid")).rstrip(".")
    if message.startswith(("Value error, ", "Assertion failed, ")):
        return f"{where}: {message.split(', ', 1)[1]}."  # the validator's own sentence
    for subject in ("Input ", "Value ", "String ", "List ", "Dictionary ", "Object "):
        if message.startswith(subject):
            return f"{where} {message[len(subject) :]}."
    return f"{where} is not valid: {message}."


def validation_message(errors: Iterable[Mapping[str, Any]], data: Any, *, limit: int = 5) -> str:
    """Pydantic's errors as one plain sentence per field (``fontSize must be a number.``).

    ``errors`` is ``ValidationError.errors(...)``; ``data`` the input it judged
    (used to tell the fields from pydantic's union-member tags). The one place
    such errors are worded: request bodies and pack configurations alike.
    """
    by_field: dict[str, list[Mapping[str, Any]]] = {}
    for item in errors:
        loc = tuple(item.get("loc", ()))
        last_is_field = item.get("type") in ("missing", "extra_forbidden")
        where = _field_path(loc, data, last_is_field) or "The body"
        by_field.setdefault(where, []).append(item)
    sentences = []
    for where, items in list(by_field.items())[:limit]:
        numbers = len(items) > 1 and {str(i.get("type")) for i in items} <= _NUMBER_TYPES
        sentences.append(f"{where} must be a number." if numbers else _plain(items[0], where))
    return " ".join(sentences) or "Invalid request body."


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
            data = await request.get_json(silent=True) if request.is_json else None
            if data is None:
                data = request.args.to_dict()
            message = validation_message(errors(include_url=False, include_input=False), data)
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


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret value replaced by ``[redacted]``."""
    for value in secrets:
        text = text.replace(value, "[redacted]")
    return text
