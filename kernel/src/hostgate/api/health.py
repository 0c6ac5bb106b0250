"""``GET /health`` (also served at the root) and ``GET /version``."""

from __future__ import annotations

from typing import Any, Literal

from quart import Blueprint, current_app, request
from quart_schema import tag
from typing_extensions import TypedDict

from ..guards import optional_caller, public
from ..openapi import answers
from ..services.version import FORCE_BUCKET, FORCE_PER_USER
from ..timefmt import iso, utcnow

blueprint = Blueprint("health", __name__)


class Health(TypedDict):
    """The server runs."""

    status: Literal["ok"]
    timestamp: str


class Version(TypedDict):
    """Running and latest version."""

    current: str
    latest: str | None
    updateAvailable: bool
    releaseUrl: str | None
    fetchError: str | None


@blueprint.get("/health")
@public
@tag(["meta"])
@answers(Health)
async def health() -> Health:
    """Liveness: 200 while the server runs."""
    return {"status": "ok", "timestamp": iso(utcnow())}


@blueprint.get("/version")
@public
@tag(["meta"])
@answers(Version, errors=(429, 503))
async def version() -> dict[str, Any]:
    """Running and latest version, cached 15 minutes.

    ``force=true`` fetches anew for a signed-in caller (at most 5 a minute each); an
    anonymous caller always gets the cached answer, so nobody outside can make the
    gateway call out on demand.
    """
    kernel = current_app.extensions["hostgate"]
    caller = await optional_caller()
    force = request.args.get("force", "").lower() in {"1", "true", "yes"}
    if caller is None:
        force = False
    elif force:
        await kernel.limits.hit(
            FORCE_BUCKET,
            caller.user_id,
            FORCE_PER_USER,
            "Too many forced update checks; try again in a minute",
        )
    info = await kernel.version.info(force=force)
    if force:
        await kernel.audit.record(
            "system.version_check",
            actor=caller,
            details={k: info[k] for k in ("current", "latest", "updateAvailable", "fetchError")},
        )
    return info  # type: ignore[no-any-return]
