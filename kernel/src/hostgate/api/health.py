"""``GET /health`` (also served at the root) and ``GET /version``."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, current_app, request
from quart_schema import tag

from ..guards import optional_caller, public
from ..timefmt import iso, utcnow

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
@public
@tag(["meta"])
async def health() -> dict[str, Any]:
    """Liveness: 200 while the server runs."""
    return {"status": "ok", "timestamp": iso(utcnow())}


@blueprint.get("/version")
@public
@tag(["meta"])
async def version() -> dict[str, Any]:
    """Running and latest version; ``force=true`` bypasses the 15-minute cache."""
    kernel = current_app.extensions["hostgate"]
    force = request.args.get("force", "").lower() in {"1", "true", "yes"}
    info = await kernel.version.info(force=force)
    caller = await optional_caller()
    if force and caller is not None:
        await kernel.audit.record(
            "system.version_check",
            actor=caller,
            details={k: info[k] for k in ("current", "latest", "updateAvailable", "fetchError")},
        )
    return info  # type: ignore[no-any-return]
