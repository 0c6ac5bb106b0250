"""Matching command lines against command rules.

A command line is normalised first: surrounding whitespace dropped and each run of
whitespace made one space, so ``rm   -rf /`` and ``rm -rf /`` are the same line.
``exact`` compares the whole line, ``prefix`` its start, ``glob`` the whole line
(``*`` any text, ``?`` one character, ``[abc]`` one of them), ``regex`` searches it.
Globs are translated to RE2 and every pattern runs on the kernel's one linear-time
engine (``hostgate.safe_regex``), so no pattern can stall the event loop.

When several rules match, the strictest action decides (block, then approve, then
alert); among rules of that action, the lowest priority number, then the name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...safe_regex import MAX_SUBJECT_LENGTH, PatternError, compile_pattern

ACTIONS = ("block", "approve", "alert")
"""Strictest first."""
MATCHES = ("exact", "prefix", "glob", "regex")
_SPACE = re.compile(r"\s+")


def normalise(command: str) -> str:
    """The line as rules see it: trimmed, each whitespace run one space."""
    return _SPACE.sub(" ", command.strip())[:MAX_SUBJECT_LENGTH]


def glob_to_regex(glob: str) -> str:
    """An RE2 pattern matching the whole of what ``glob`` matches."""
    out: list[str] = []
    index, size = 0, len(glob)
    while index < size:
        char = glob[index]
        index += 1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = glob.find("]", index + 1 if glob[index : index + 1] in ("!", "^") else index)
            if end < 0:
                out.append(r"\[")
                continue
            body = glob[index:end]
            index = end + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\")
            out.append(f"[{'^' if negate else ''}{body}]")
        else:
            out.append(re.escape(char))
    return "(?s)^" + "".join(out) + "$"


def check_pattern(match: str, pattern: str) -> None:
    """``PatternError`` when ``pattern`` cannot be used as a ``match`` rule."""
    if match not in MATCHES:
        raise PatternError(f"match must be one of {', '.join(MATCHES)}")
    if not normalise(pattern):
        raise PatternError("the pattern is empty")
    if match == "glob":
        compile_pattern(glob_to_regex(normalise(pattern)))
    elif match == "regex":
        compile_pattern(pattern)


@dataclass(frozen=True)
class Rule:
    """A rule ready to match: its stored values and its compiled test."""

    id: str
    name: str
    action: str
    match: str
    pattern: str
    priority: int
    connection_ids: frozenset[str] = frozenset()
    group_ids: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    role_ids: frozenset[str] = frozenset()
    subject: str = field(init=False, default="", repr=False, compare=False)
    """The pattern normalised as command lines are (exact and prefix rules)."""
    compiled: Any = field(init=False, default=None, repr=False, compare=False)
    """The RE2 program of a glob or regex rule."""

    def __post_init__(self) -> None:
        check_pattern(self.match, self.pattern)
        subject = normalise(self.pattern)
        compiled: Any = None
        if self.match == "glob":
            compiled = compile_pattern(glob_to_regex(subject))
        elif self.match == "regex":
            compiled = compile_pattern(self.pattern)
        object.__setattr__(self, "subject", subject)
        object.__setattr__(self, "compiled", compiled)

    @property
    def severity(self) -> int:
        """0 for block, 1 for approve, 2 for alert: the lowest decides."""
        return ACTIONS.index(self.action)

    def applies(self, scope: Scope) -> bool:
        """Whether the rule covers a session of this scope (an empty list covers all)."""
        return self.covers_role(scope.role_id) and self.covers_connection(scope)

    def covers_role(self, role_id: str) -> bool:
        """Whether the rule covers users of ``role_id`` (no roles named: everyone)."""
        return not self.role_ids or role_id in self.role_ids

    def covers_connection(self, scope: Scope) -> bool:
        """Whether the rule covers the scope's connection (by id, group or tag; none: all)."""
        if not (self.connection_ids or self.group_ids or self.tags):
            return True
        return (
            scope.connection_id in self.connection_ids
            or (scope.group_id is not None and scope.group_id in self.group_ids)
            or not self.tags.isdisjoint(scope.tags)
        )

    def matches(self, line: str) -> bool:
        """Whether the normalised command ``line`` matches."""
        subject = self.subject
        if self.match == "exact":
            return line == subject
        if self.match == "prefix":
            return line.startswith(subject)
        compiled = self.compiled
        if self.match == "glob":
            return compiled.match(line) is not None
        return compiled.search(line) is not None


@dataclass(frozen=True)
class Scope:
    """What a session is: its connection (id, group, tags) and the user's role."""

    connection_id: str
    group_id: str | None
    tags: frozenset[str]
    role_id: str


@dataclass(frozen=True)
class Decision:
    """What happens to a command line: the action and the rule that decided it."""

    action: str
    rule: Rule
    command: str


def lines_of(command: str) -> list[str]:
    """The non-empty normalised lines of what was entered (a paste may hold several)."""
    return [line for line in (normalise(part) for part in command.splitlines()) if line]


def decide(rules: Sequence[Rule], command: str) -> Decision | None:
    """The strictest rule matching any line of ``command``, or None (sent as it is)."""
    best: Rule | None = None
    best_line = ""
    for line in lines_of(command):
        for rule in rules:
            if best is not None and _rank(rule) >= _rank(best):
                continue
            if rule.matches(line):
                best, best_line = rule, line
    return None if best is None else Decision(best.action, best, best_line)


def _rank(rule: Rule) -> tuple[int, int, str]:
    return (rule.severity, rule.priority, rule.name)


def ordered(rules: Iterable[Rule]) -> list[Rule]:
    """Rules in the order they are tried: strictest action, priority, name."""
    return sorted(rules, key=_rank)
