"""``GET /metrics``: the Prometheus text exposition, for callers holding ``system.metrics``."""

from __future__ import annotations

from quart import Blueprint, Response
from quart_schema import tag

from ..guards import app_kernel, requires
from ..metrics import CONTENT_TYPE
from ..openapi import answers

blueprint = Blueprint("metrics", __name__)


@blueprint.get("/metrics")
@requires("system.metrics")
@tag(["meta"])
@answers(None, media_type=CONTENT_TYPE.split(";")[0])
async def metrics() -> Response:
    """Request, session, relay-byte, recording and notification-delivery figures."""
    return Response(app_kernel().metrics.render(), content_type=CONTENT_TYPE)
