"""Regular expressions run by a linear-time engine (RE2), for patterns admins write.

Notification rules (``matches``) and command rules match patterns against text a
user chooses (a username at sign-in, a command line), on the event loop. Python's
``re`` backtracks, so ``^(a+)+$`` against crafted text takes exponential time and
stalls every request; RE2 guarantees time linear in the input, and the input is cut
to ``MAX_SUBJECT_LENGTH`` characters first. RE2 has no backreferences or lookaround:
such patterns are refused when a rule is saved.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

MAX_PATTERN_LENGTH = 500
MAX_SUBJECT_LENGTH = 4096
"""Only the first 4096 characters of a text are matched."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors are reported to the caller, not printed by RE2 itself


class PatternError(ValueError):
    """A pattern the engine refuses; the message says why in plain words."""


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:  # re2's compiled type is private (re2._Regexp)
    """Compile once (cached); ``PatternError`` for a pattern RE2 cannot run.

    The result has ``search(text)`` and ``fullmatch(text)``, as ``re`` patterns do.
    """
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"regular expressions are limited to {MAX_PATTERN_LENGTH} characters")
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(
            f"{pattern!r} is not a regular expression hostgate can run ({reason}); "
            "backreferences and lookaround (such as \\1, (?=...), (?<!...)) are not supported"
        ) from None
