r"""JSON a client sent: parsed once, with a bounded depth and only storable text.

Every JSON request body (``request.get_json``, through the kernel's request
class) and every WebSocket control message goes through ``decode``:

- nesting is bounded at ``MAX_DEPTH`` before the parser runs, so a body nested
  a thousand levels deep is a 400 instead of a ``RecursionError`` in the
  decoder (or later, in whatever walks the value);
- a string holding a lone UTF-16 surrogate (``"\ud800"``, which JSON allows
  and no database or encoder takes) is refused, naming the field.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from pydantic import BeforeValidator

from .errors import InvalidInput

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a client may send."""

_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def decode(text: str | bytes) -> Any:
    """The value of a client's JSON text.

    Raises ``InvalidInput`` for nesting deeper than ``MAX_DEPTH`` or a lone
    surrogate in any string or key, and ``ValueError`` when it is not JSON.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    _check_depth(text)
    value = json.loads(text)
    if _SURROGATE_ESCAPE.search(text):
        where = _surrogate_at(value, ())
        if where is not None:
            field = ".".join(where) or "the body"
            raise InvalidInput(
                f"{field} holds a lone UTF-16 surrogate, which is not valid text",
                code="invalid_text",
            )
    return value


def _check_depth(text: str) -> None:
    """Linear in the text, whatever it holds (no backtracking regex over strings)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return  # cannot be deeper than the brackets it has
    # Drop escaped backslashes, then escaped quotes: every quote left delimits a
    # string, so every other piece between quotes is outside the strings.
    unescaped = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(unescaped.split('"')[::2])
    brackets = _NOT_BRACKET.sub("", outside)
    deepest = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if deepest > MAX_DEPTH:
        raise InvalidInput(
            f"JSON nested deeper than {MAX_DEPTH} levels is not accepted",
            code="too_deep",
        )


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate_at(value: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
    """The path of the first string (or key) that cannot be encoded, else None."""
    if isinstance(value, str):
        return None if _storable(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if not _storable(key):
                return (*path, key.encode("utf-8", "backslashreplace").decode())
            found = _surrogate_at(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_at(item, (*path, str(index)))
            if found is not None:
                return found
    return None


def _whole_number(value: Any) -> Any:
    """``3.0`` is the integer 3 (as JSON Schema says); ``3.5`` and ``"3"`` stay refused."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE = BeforeValidator(_whole_number)
"""Put last in ``Annotated[int, Field(...bounds), WHOLE]`` (after the bounds, or the
document loses them): a whole number, also when written ``3.0``."""
