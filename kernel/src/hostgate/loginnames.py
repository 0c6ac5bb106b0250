"""What every login method checks first: a typed username holds no control characters.

A public helper of the pack contract, used by the kernel's own login too.
"""

from __future__ import annotations

import re

from .errors import InvalidInput

LOGIN_NAME_PATTERN = r"^[^\x00-\x1f\x7f]*$"
"""A username typed at a login: no control characters. ``check_login_name`` refuses
the others (400 ``invalid_username``); login bodies show this pattern in the document."""
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def check_login_name(username: str) -> str:
    """A username typed at a login, refused (400) when it holds control characters.

    No account name has any (``check_username``), and stripping them would let
    ``bob`` followed by a NUL sign in as ``bob``; every login method calls this first.
    """
    if CONTROL_CHARACTERS.search(username):
        raise InvalidInput(
            "The username must not contain control characters", code="invalid_username"
        )
    return username
