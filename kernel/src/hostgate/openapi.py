"""The OpenAPI document: what every route answers, declared next to the route.

A view declares its success answer with ``@answers(Shape, status=..., errors=...)``
(``Shape`` a ``TypedDict`` or pydantic model, or ``None`` for a body that is not
JSON). :class:`Document` assembles the document in one place: the success
response, then the error responses in the one error shape (``ErrorBody``) with
the statuses the route can really answer. Those that follow from the route
itself are added here, so no view repeats them:

- 401 for a route behind a guard, 403 for one behind a permission (or a cookie
  that fails the CSRF check);
- 400 and 413 for a route that reads a body, or a query;
- 404 for a route with a path parameter;
- 503 (storage busy or full) for a route that writes.

Request bodies come from the same pydantic models the server validates with
(``validate_request``), and are marked required.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, NotRequired, TypeVar, cast

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from pydantic.json_schema import SkipJsonSchema
from quart import Quart, has_app_context
from quart_schema import OpenAPIProvider, QuartSchema
from quart_schema.validation import QUART_SCHEMA_REQUEST_ATTRIBUTE
from typing_extensions import TypedDict
from werkzeug.routing.rules import Rule

from .errors import InvalidInput
from .guards import HEARTBEAT, current_kernel, current_request, guard_of

ANSWERS_ATTR = "__hostgate_answers__"
REF = "#/components/schemas/{model}"
ERROR_SCHEMA = "ErrorBody"
WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})
JSON = "application/json"

View = TypeVar("View", bound=Callable[..., Awaitable[Any]])

ERROR_TEXT = {
    400: "Malformed or invalid input",
    401: "Not authenticated",
    403: "Not allowed",
    404: "Not found",
    409: "Conflicts with the current state",
    413: "Body too large",
    416: "Range not satisfiable",
    422: "Well-formed but refused",
    429: "Too many attempts; retry after the Retry-After header's seconds",
    502: "The remote server refused or failed",
    503: (
        "Storage busy or full, or the nodes' shared state (Redis) unreachable; "
        "retry after the Retry-After header's seconds"
    ),
    504: "The remote server did not answer in time",
}
RETRY_AFTER = frozenset({429, 503})


Unset = SkipJsonSchema[None]
"""``field: T | Unset = None``: the field may be left out, but the document (and the
server) refuse an explicit null."""


def listed_in(names: Callable[[Any], Iterable[str]]) -> Any:
    """A ``Field`` for a string the running kernel's registry must hold.

    The service refuses a name the registry lacks; the document lists the
    registry's names (of the app serving it) as the field's ``enum``.
    """

    def extra(schema: dict[str, Any]) -> None:
        if has_app_context():
            schema["enum"] = sorted(names(current_kernel()))

    return Field(json_schema_extra=extra)


class ErrorBody(TypedDict):
    """Every error: a human message and a stable snake_case code."""

    error: str
    code: str


class Success(TypedDict):
    """The change was made."""

    success: bool


class Ok(TypedDict):
    """The change was made."""

    ok: bool


class SessionUser(TypedDict):
    """Who logged in."""

    id: str
    username: str
    role: NotRequired[str]


class Session(TypedDict):
    """A session token (also set as the HttpOnly cookie)."""

    token: str
    user: SessionUser


class MfaChallenge(TypedDict):
    """The password was right; a second step follows with ``mfaToken``.

    ``mfaMethods``: the steps the account may answer with (``totp`` at
    ``/auth/login/mfa``, ``passkey`` at ``/auth/login/passkey/mfa``); ``mfaMethod`` is the first.
    """

    mfaRequired: bool
    mfaToken: str
    mfaMethod: str
    mfaMethods: list[str]


@dataclass(frozen=True)
class Answer:
    """What one view answers (see :func:`answers`)."""

    body: Any
    status: int
    errors: tuple[int, ...]
    media_types: tuple[str, ...]
    description: str
    headers: tuple[str, ...]
    request: Any
    query: Any
    request_media_type: str | None
    request_headers: tuple[str, ...]
    ranges: bool


def answers(
    body: Any,
    status: int = 200,
    *,
    errors: Iterable[int] = (),
    media_type: str | tuple[str, ...] = JSON,
    description: str = "",
    headers: Iterable[str] = (),
    request: Any = None,
    query: Any = None,
    request_media_type: str | None = None,
    request_headers: Iterable[str] = (),
    ranges: bool = False,
) -> Callable[[View], View]:
    """Declare a view's success answer and the error statuses its work can cause.

    ``body`` is the JSON shape (a ``TypedDict`` or pydantic model), or ``None``
    for a body of ``media_type`` that is not JSON (a download; ``""`` for no
    body at all, a redirect). ``errors`` lists the statuses beyond those the
    route's guard, body and path already imply (409, 422, 429, 502...).
    ``headers`` names response headers always sent.
    ``request`` documents a body the view reads itself (no ``validate_request``);
    the view must refuse, with 400, everything that schema refuses; it may
    also be a callable returning the JSON schema from the running kernel.
    ``query`` (a pydantic model) holds the query arguments the view reads: they
    are checked against it before the view runs (after the guard), and an
    unknown argument is refused. ``request_media_type`` documents a raw body (an upload),
    ``request_headers`` the request headers the view requires. ``ranges``: the
    view answers a ``Range`` request with 206 (and 416).
    """

    def decorate(view: View) -> View:
        answer = Answer(
            body=body,
            status=status,
            errors=tuple(errors),
            media_types=(media_type,) if isinstance(media_type, str) else media_type,
            description=description,
            headers=tuple(headers),
            request=request,
            query=query,
            request_media_type=request_media_type,
            request_headers=tuple(request_headers),
            ranges=ranges,
        )
        if query is not None:
            view = _checking_query(view, query)
        setattr(view, ANSWERS_ATTR, answer)
        return view

    return decorate


def _checking_query(view: View, model: type[BaseModel]) -> View:
    """``view``, refusing query arguments ``model`` does not take (400)."""
    names = {field.alias or name for name, field in model.model_fields.items()}
    names.add(HEARTBEAT)
    try:
        model.model_validate({})
        bare_ok = True  # no query string: nothing unknown, and the model takes none
    except ValidationError:
        bare_ok = False

    @functools.wraps(view)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        current = current_request()
        if bare_ok and not current.query_string:
            return await view(*args, **kwargs)
        unknown = sorted(set(current.args) - names)
        if unknown:
            raise InvalidInput(f"unknown query parameter(s): {', '.join(unknown)[:200]}")
        try:
            model.model_validate(current.args.to_dict())
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise InvalidInput(f"query parameter {where}: {problem['msg']}") from None
        return await view(*args, **kwargs)

    return cast(View, checked)


def answer_of(view: Callable[..., Any]) -> Answer | None:
    """The answer a view declared, or None."""
    return getattr(view, ANSWERS_ATTR, None)


def json_schema(shape: Any, mode: str = "serialization") -> tuple[dict[str, Any], dict[str, Any]]:
    """``(schema, definitions)`` of a TypedDict or pydantic model, refs into components."""
    schema = TypeAdapter(shape).json_schema(ref_template=REF, mode=mode)  # type: ignore[arg-type]
    definitions = schema.pop("$defs", {})
    return schema, definitions


class Document(OpenAPIProvider):
    """quart-schema's provider, with responses and required request bodies."""

    def __init__(self, app: Quart, extension: QuartSchema) -> None:
        super().__init__(app, extension)
        self.gateway_app = app  # quart-schema keeps it only under a private name

    def schema(self) -> dict[str, Any]:
        """The document, with the shared error component."""
        self._named: dict[str, Any] = {}
        document = super().schema()
        error, _ = json_schema(ErrorBody)
        document["components"]["schemas"][ERROR_SCHEMA] = error
        return document

    def build_paths(self, rule: Rule) -> tuple[dict[str, Any], dict[str, Any]]:
        """Each operation of ``rule`` with its responses (see the module docstring)."""
        paths, components = super().build_paths(rule)
        view = self.gateway_app.view_functions[rule.endpoint]
        answer = answer_of(view)
        if answer is None:
            return paths, components
        for operations in paths.values():
            for method, operation in list(operations.items()):
                operation = dict(operation)
                operation["parameters"] = list(operation["parameters"])
                self._document_request(operation, answer, components)
                guard = guard_of(view)
                if guard is not None and guard[0] == "public":
                    operation["security"] = []
                operation["responses"] = self._responses(
                    rule, method, view, operation, answer, components
                )
                operations[method] = operation
        return paths, components

    def _document_request(
        self, operation: dict[str, Any], answer: Answer, components: dict[str, Any]
    ) -> None:
        if answer.query is not None:
            schema, definitions = json_schema(answer.query, mode="validation")
            self._add_components(components, definitions)
            required = set(schema.get("required", ()))
            for name, field in schema["properties"].items():
                field = dict(field)
                field.pop("title", None)
                field.pop("default", None)
                parameter = {"name": name, "in": "query", "required": name in required}
                if "description" in field:
                    parameter["description"] = field.pop("description")
                operation["parameters"].append({**parameter, "schema": field})
        for name in answer.request_headers:
            operation["parameters"].append(
                {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
            )
        if answer.request_media_type is not None:
            binary = {"type": "string", "format": "binary"}
            operation["requestBody"] = {"content": {answer.request_media_type: {"schema": binary}}}
        elif inspect.isfunction(answer.request):
            schema = answer.request(current_kernel())
            operation["requestBody"] = {"content": {JSON: {"schema": schema}}}
        elif answer.request is not None:
            schema, definitions = json_schema(answer.request, mode="validation")
            self._add_components(components, definitions)
            operation["requestBody"] = {"content": {JSON: {"schema": schema}}}
        if "requestBody" in operation:
            operation["requestBody"] = {**operation["requestBody"], "required": True}

    def _add_components(self, components: dict[str, Any], new: dict[str, Any]) -> None:
        """Add schemas; two different shapes under one name are a programming error."""
        for name, schema in new.items():
            if self._named.setdefault(name, schema) != schema:
                raise ValueError(f"two different schemas are named {name!r} in the document")
            components[name] = schema

    def _responses(
        self,
        rule: Rule,
        method: str,
        view: Callable[..., Any],
        operation: dict[str, Any],
        answer: Answer,
        components: dict[str, Any],
    ) -> dict[str, Any]:
        success: dict[str, Any] = {"description": answer.description or _summary(view)}
        if answer.body is not None:
            schema, definitions = json_schema(answer.body)
            name = answer.body.__name__ if isinstance(answer.body, type) else None
            self._add_components(components, definitions)
            if name is not None and "$ref" not in schema:
                self._add_components(components, {name: schema})
                schema = {"$ref": REF.format(model=name)}
            success["content"] = {answer.media_types[0]: {"schema": schema}}
        elif answer.media_types != ("",):
            success["content"] = {kind: {"schema": {}} for kind in answer.media_types}
        if answer.headers:
            success["headers"] = {name: {"schema": {"type": "string"}} for name in answer.headers}
        statuses = set(answer.errors)
        guard = guard_of(view)
        if guard is not None and guard[0] in ("authenticated", "interactive", "permission"):
            statuses |= {401, 403}
        if "requestBody" in operation or any(p["in"] == "query" for p in operation["parameters"]):
            statuses |= {400}
        if "requestBody" in operation or getattr(view, QUART_SCHEMA_REQUEST_ATTRIBUTE, None):
            statuses |= {400, 413}
        if rule.arguments:
            statuses.add(404)
        if method in WRITE_METHODS:
            statuses.add(503)
        responses: dict[str, Any] = {str(answer.status): success}
        if answer.ranges:
            responses["206"] = {**success, "description": "The requested byte range"}
            statuses.add(416)
        for status in sorted(statuses):
            error: dict[str, Any] = {
                "description": ERROR_TEXT.get(status, "Error"),
                "content": {JSON: {"schema": {"$ref": REF.format(model=ERROR_SCHEMA)}}},
            }
            if status in RETRY_AFTER:
                error["headers"] = {"Retry-After": {"required": True, "schema": {"type": "string"}}}
            responses[str(status)] = error
        return responses


def _summary(view: Callable[..., Any]) -> str:
    doc = inspect.getdoc(view) or ""
    return doc.splitlines()[0] if doc else "Success"
