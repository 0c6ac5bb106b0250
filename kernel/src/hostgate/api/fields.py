"""Field types request bodies share, with the constraints the services enforce.

The OpenAPI document is generated from these, so a client that follows the
document is never refused for a rule it could not see.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..errors import describe_pattern
from ..jsoninput import WHOLE
from ..openapi import listed_in
from ..security.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from ..services.connections.connection_input import SORT_LIMIT
from ..services.identity.accounts import (
    EMAIL_MAX,
    EMAIL_PATTERN,
    NAME_MAX,
    NOT_BLANK_PATTERN,
    USERNAME_PATTERN,
)

NOT_BLANK = describe_pattern(NOT_BLANK_PATTERN, "must not be blank")

Username = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=describe_pattern(USERNAME_PATTERN, "may not contain spaces or control characters"),
    ),
]
"""A local username: no spaces or control characters."""
NewPassword = Annotated[str, Field(min_length=MIN_PASSWORD_LENGTH, max_length=MAX_PASSWORD_LENGTH)]
"""A password being set."""
Password = Annotated[str, Field(max_length=MAX_PASSWORD_LENGTH)]
"""A password being checked."""
Email = Annotated[
    str,
    Field(
        max_length=EMAIL_MAX,
        pattern=describe_pattern(f"^({EMAIL_PATTERN[1:-1]})?$", "must be an e-mail address"),
    ),
]
"""An e-mail address, or ``""`` for none."""
DisplayName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NOT_BLANK)]
"""A display name: not blank, stored verbatim."""
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NOT_BLANK)]
"""The name of a role, connection, group or rule: not blank, stored verbatim."""


Integer = Annotated[int, WHOLE]
"""A whole number, also when written ``3.0``; never a string or a boolean (strict models)."""
SortOrder = Annotated[int, Field(ge=-SORT_LIMIT, le=SORT_LIMIT), WHOLE]
"""A position among siblings."""


Permission = Annotated[str, listed_in(lambda kernel: kernel.permission_names)]
"""A permission name, as ``GET /roles/permissions`` lists them."""
