"""The rules a stored connection's values follow, shared by the kernel and the packs.

A pack that reads or writes connections (the ssh_config importer, say) applies the
same checks as the API: hosts, control characters, tags and jump-host chains.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from .errors import InvalidInput

HOST_MAX = 253
TAGS_MAX = 50
"""At most this many tags on one connection."""
MAX_JUMP_HOPS = 5
"""At most this many jump hosts in front of one connection."""

_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters (Unicode Cc) and the line and paragraph separators: none of them
belongs in a user name, host or tag, and each could end a line of a file made from it
(an ssh_config export)."""
CONTROL_PATTERN = "^[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029]*$"
"""``CONTROL``'s refusal as a JSON-schema pattern."""


def refuse_control(what: str, text: str) -> str:
    """``text`` unchanged, or InvalidInput when it holds a control character."""
    if CONTROL.search(text):
        raise InvalidInput(f"{what} must not contain control characters or line breaks")
    return text


def validate_host(value: Any) -> str:
    """A host name or IP address (IPv6 with or without brackets); no scheme, port or path."""
    if not isinstance(value, str):
        raise InvalidInput("host must be a string")
    text = refuse_control("host", value).strip()
    if not text:
        raise InvalidInput("host is required")
    if len(text) > HOST_MAX:
        raise InvalidInput(f"host must be at most {HOST_MAX} characters")
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return str(ipaddress.ip_address(inner))
    except ValueError:
        pass
    problem = "host must be a host name or IP address, without scheme, port, path or spaces"
    if any(c in text for c in "/\\:@?#[]% \t\r\n"):
        raise InvalidInput(problem)
    try:
        ascii_name = text.encode("idna").decode("ascii") if not text.isascii() else text
    except UnicodeError:
        raise InvalidInput(problem) from None
    labels = ascii_name.rstrip(".").split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise InvalidInput(problem)
    return text
