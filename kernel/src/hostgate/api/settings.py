"""``/settings`` and ``/settings/public``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from quart import Blueprint, current_app, request
from quart_schema import tag
from typing_extensions import TypedDict

from ..descriptors import SettingSpec
from ..errors import InvalidInput
from ..guards import current_caller, public, requires
from ..openapi import Success, answers

blueprint = Blueprint("settings", __name__)


class SettingValues(TypedDict):
    """Setting keys and their values (see the settings reference)."""

    settings: dict[str, Any]


class SettingInfo(TypedDict):
    """One setting as the settings screen shows it: its type, bounds and help."""

    key: str
    group: str
    pack: str
    type: Literal["boolean", "integer", "number", "string"]
    default: Any
    description: str
    nullable: bool
    secret: bool
    public: bool
    readonly: bool
    minimum: float | None
    maximum: float | None
    choices: list[Any] | None
    maxLength: int | None
    checked: bool


class SettingSchema(TypedDict):
    """Every setting of the registry (packs' included), by key."""

    settings: list[SettingInfo]


if TYPE_CHECKING:
    from ..kernel import Kernel


def changes_schema(kernel: Kernel) -> dict[str, Any]:
    """The body ``PUT /settings`` takes, from the settings registry."""
    schema: dict[str, Any] = kernel.settings.change_schema()
    return schema


def setting_json(spec: SettingSpec, group: str, pack: str) -> dict[str, Any]:
    """One entry of ``GET /settings/schema``: what the settings screen needs to show it."""
    return {
        "key": spec.key,
        "group": group,
        "pack": pack,
        "type": {bool: "boolean", int: "integer", float: "number", str: "string"}[spec.type],
        "default": spec.default,
        "description": spec.description,
        "nullable": spec.nullable,
        "secret": spec.secret,
        "public": spec.public,
        "readonly": spec.readonly,
        "minimum": spec.minimum,
        "maximum": spec.maximum,
        "choices": list(spec.choices) if spec.choices is not None else None,
        "maxLength": spec.max_length if spec.type is str else None,
        "checked": spec.validate is not None,
    }


@blueprint.get("/settings/public")
@public
@tag(["settings"])
@answers(SettingValues)
async def public_settings() -> dict[str, Any]:
    """The public subset of settings, readable without authentication."""
    return {"settings": current_app.extensions["hostgate"].settings.public()}


@blueprint.get("/settings")
@requires("settings.manage")
@tag(["settings"])
@answers(SettingValues)
async def all_settings() -> dict[str, Any]:
    """Every setting; secret values masked."""
    return {"settings": current_app.extensions["hostgate"].settings.admin_view()}


@blueprint.get("/settings/schema")
@requires("settings.manage")
@tag(["settings"])
@answers(SettingSchema)
async def settings_schema() -> dict[str, Any]:
    """Every setting's type, default, bounds, choices and help, grouped for a settings screen.

    ``group`` is the key's first segment, or ``<a>.<word>`` for a family of at least four
    keys named ``<a>.<word>_...`` (``auth.ldap``), unless the pack names one; ``pack`` is
    the pack that registered it (``kernel`` for the kernel's own); ``checked`` says the
    server checks the value further than its type and bounds (an LDAP filter, a URL...).
    """
    kernel = current_app.extensions["hostgate"]
    described = kernel.settings.described(kernel.setting_owners)
    return {"settings": [setting_json(spec, group, pack) for spec, group, pack in described]}


@blueprint.put("/settings")
@requires("settings.manage")
@tag(["settings"])
@answers(Success, request=changes_schema, errors=(409,))
async def update_settings() -> Success:
    """Change one or more settings; the whole set is validated before anything is stored."""
    body = await request.get_json(force=True)
    if not isinstance(body, dict):
        raise InvalidInput("send a JSON object of setting keys to values")
    kernel = current_app.extensions["hostgate"]
    # the change and its settings.updated entry commit together
    await kernel.settings.update(body, actor=current_caller())
    return {"success": True}
