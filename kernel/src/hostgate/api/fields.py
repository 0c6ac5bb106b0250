"""Field types request bodies share, with the constraints the services enforce.

The OpenAPI document is generated from these, so a client that follows the
document is never refused for a rule it could not see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from quart import has_app_context

from ..guards import current_kernel
from ..security.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from ..services.accounts import (
    EMAIL_MAX,
    EMAIL_PATTERN,
    NAME_MAX,
    NOT_BLANK_PATTERN,
    USERNAME_PATTERN,
)
from ..services.connection_input import SORT_LIMIT

Username = Annotated[str, Field(min_length=1, max_length=200, pattern=USERNAME_PATTERN)]
"""A local username: no spaces or control characters."""
NewPassword = Annotated[str, Field(min_length=MIN_PASSWORD_LENGTH, max_length=MAX_PASSWORD_LENGTH)]
"""A password being set."""
Password = Annotated[str, Field(max_length=MAX_PASSWORD_LENGTH)]
"""A password being checked."""
Email = Annotated[str, Field(max_length=EMAIL_MAX, pattern=f"^({EMAIL_PATTERN[1:-1]})?$")]
"""An e-mail address, or ``""`` for none."""
DisplayName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NOT_BLANK_PATTERN)]
"""A display name: not blank, stored verbatim."""
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NOT_BLANK_PATTERN)]
"""The name of a role, connection, group or rule: not blank, stored verbatim."""


def _whole_number(value: Any) -> Any:
    """``3.0`` is the integer 3 (as JSON Schema says); ``3.5`` and ``"3"`` stay refused."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Integer = Annotated[int, BeforeValidator(_whole_number)]
"""A whole number, also when written ``3.0``; never a string or a boolean (strict models)."""
SortOrder = Annotated[Integer, Field(ge=-SORT_LIMIT, le=SORT_LIMIT)]
"""A position among siblings."""


def listed_in(names: Callable[[Any], Iterable[str]]) -> Any:
    """A ``Field`` for a string the running kernel's registry must hold.

    The service refuses a name the registry lacks; the document lists the
    registry's names (of the app serving it) as the field's ``enum``.
    """

    def extra(schema: dict[str, Any]) -> None:
        if has_app_context():
            schema["enum"] = sorted(names(current_kernel()))

    return Field(json_schema_extra=extra)


Permission = Annotated[str, listed_in(lambda kernel: kernel.permission_names)]
"""A permission name, as ``GET /roles/permissions`` lists them."""
