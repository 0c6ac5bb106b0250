"""``GET /system/plugins``: the packs this instance runs (``hostgate plugins`` over HTTP)."""

from __future__ import annotations

from typing import Any, Literal

from quart import Blueprint
from quart_schema import tag
from typing_extensions import TypedDict

from ..guards import app_kernel, requires
from ..openapi import answers

blueprint = Blueprint("system", __name__)


class PackInfo(TypedDict):
    """One installed pack: where it comes from, its state and what it adds."""

    name: str
    distribution: str
    version: str
    state: Literal["loaded", "disabled", "failed"]
    reason: str
    provides: list[str]
    settings: list[str]
    permissions: list[str]


class PackList(TypedDict):
    """Every installed pack by name, as ``hostgate plugins --json`` lists them."""

    plugins: list[PackInfo]


@blueprint.get("/system/plugins")
@requires("settings.manage")
@tag(["meta"])
@answers(PackList)
async def installed_plugins() -> dict[str, Any]:
    """The packs this instance found at start-up: loaded, disabled or failed (with why)."""
    host = app_kernel().plugins
    return {"plugins": [pack.to_json() for pack in sorted(host.packs, key=lambda p: p.name)]}
