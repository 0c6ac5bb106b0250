"""The ``matches`` operator's regular expressions, run by the kernel's linear-time engine.

``hostgate.compile_pattern`` (RE2, kernel/src/hostgate/safe_regex.py) is the one
engine for patterns admins write; command rules use it too.
"""

from __future__ import annotations

import logging

from hostgate import MAX_PATTERN_LENGTH, MAX_SUBJECT_LENGTH, PatternError, compile_pattern

log = logging.getLogger(__name__)

__all__ = ["MAX_PATTERN_LENGTH", "MAX_SUBJECT_LENGTH", "PatternError", "compile_pattern", "search"]


def search(pattern: str, text: str) -> bool:
    """True when ``pattern`` occurs in the first ``MAX_SUBJECT_LENGTH`` characters of ``text``.

    A stored pattern the engine cannot run (saved before patterns were checked
    this way) never matches, with a warning in the log.
    """
    try:
        compiled = compile_pattern(pattern)
    except PatternError as exc:
        log.warning("notification rule pattern skipped: %s", exc)
        return False
    return compiled.search(text[:MAX_SUBJECT_LENGTH]) is not None
