"""The OpenAPI document and a self-contained reference page (no CDN needed)."""

from __future__ import annotations

import html
from typing import Any

from quart import Blueprint, Response, current_app
from quart_schema import hide

from ..guards import public

blueprint = Blueprint("meta", __name__)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the running app (plugins' routes included)."""
    schema: dict[str, Any] = current_app.extensions["QUART_SCHEMA"].openapi_provider.schema()
    return schema


@blueprint.get("/openapi.json")
@public
@hide
async def openapi() -> dict[str, Any]:
    """The OpenAPI document."""
    return openapi_document()


@blueprint.get("/docs")
@public
@hide
async def docs() -> Response:
    """A plain HTML API reference generated from the OpenAPI document."""
    schema = openapi_document()
    rows = []
    for path, operations in sorted(schema.get("paths", {}).items()):
        for method, operation in operations.items():
            summary = html.escape(operation.get("summary") or operation.get("description") or "")
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td>"
                f"<td><code>{html.escape(path)}</code></td><td>{summary}</td></tr>"
            )
    title = html.escape(schema.get("info", {}).get("title", "hostgate"))
    body = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title} API</title>"
        "<style>body{font-family:sans-serif;margin:2em}td{padding:.2em .8em}</style></head>"
        f"<body><h1>{title} API</h1><p>Machine-readable: <a href='openapi.json'>openapi.json</a>"
        f"</p><table>{''.join(rows)}</table></body></html>"
    )
    return Response(body, content_type="text/html; charset=utf-8")
