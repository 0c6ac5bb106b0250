"""ssh_config export and import under hostile values (issue 30, items 1 and 2).

Export: for any user name, host, tags and connection name (control characters,
quotes, backslashes, ``#``, ``=``, ``%`` tokens, ``${}``), the real ``ssh -G`` reads
each value back exactly and no option but HostName, User, Port and ProxyJump, or
the connection is left out (and so is one that jumps through it); hostgate's own
importer reads back what ssh reads.

Import: generated hostile configurations (Include bombs, wide Host lines, wildcard
blocks times aliases, quote and backslash runs, tag floods, nesting) are either read
or refused with a 400, never anything else; every pattern tried and compiled, every
block visited is counted in the work counters, which never pass their limits: the
time an example takes is bounded by counted work, not measured.
"""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hostgate import InvalidInput
from hostgate_sshconfig import parser as ssh_config
from hostgate_sshconfig.parser import ExportedHost, plan_import, render
from hypothesis import event, given
from hypothesis import strategies as st

from testsupport.ssh_client import ssh_reads

SPECIAL = list(" \t\"'\\#=%${},*?!\n\r\x00\x0b\x0c\x1b\x7f\x85\u2028\u2029\u00a0\u3000") + [
    "a", "B", "-", ".", "é", "ProxyCommand touch /tmp/pwned", "%h", "%d", "${HOME}",
]  # fmt: skip
hostile = st.one_of(
    st.lists(st.sampled_from(SPECIAL), max_size=12).map("".join),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
)
PRINTABLE = [c for c in SPECIAL if not ssh_config.CONTROL.search(c) and c not in "%$"]
printable = st.one_of(  # what the export writes (no control character, no % or ${)
    st.lists(st.sampled_from(PRINTABLE), max_size=12).map("".join),
    st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters="%$")),
)
users = st.integers(0, 2).flatmap(lambda k: hostile if k == 0 else printable)
valid_hosts = st.sampled_from(
    ["web.example", "10.0.0.7", "::1", "münchen.example", "DB-1", "10.1", "a_b.example"]
)
hosts = st.integers(0, 3).flatmap(lambda k: hostile if k == 0 else valid_hosts)
ALLOWED = {"host", "hostname", "user", "port", "proxyjump"}


def as_ssh_prints(host: str) -> str:
    """``ssh -G`` lower-cases ASCII letters of a name and normalises IPv4 forms
    (``10.1`` is ``10.0.0.1``), as the resolver would too."""
    if ":" not in host:
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            pass
    return "".join(c.lower() if c.isascii() and ":" not in host else c for c in host)


@cache
def defaults() -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as directory:
        empty = Path(directory) / "empty"
        empty.write_text("")
        return ssh_reads(empty, "unconfigured.invalid")


@given(
    jump_user=users,
    jump_host=hosts,
    user=users,
    host=hosts,
    tags=st.lists(hostile, max_size=4),
    name=hostile,
    port=st.integers(1, 65535),
)
def test_ssh_reads_every_exported_value_exactly_or_the_host_is_left_out(
    jump_user: str, jump_host: str, user: str, host: str, tags: list[str], name: str, port: int
) -> None:
    taken: set[str] = set()
    jump_alias = ssh_config.alias_for("jump", taken)
    alias = ssh_config.alias_for(name, taken)
    jump = ExportedHost(jump_alias, jump_host, 22, jump_user, None, [], "https://gw/1\n")
    target = ExportedHost(alias, host, port, user, jump_alias, tags, "https://gw/2")
    text = render([jump, target], ["header\nProxyCommand touch /tmp/pwned"])
    for line in text.split("\n"):
        assert line == "" or line.startswith(("#", "Host ", "  "))
        assert line.split()[:1] in ([], ["#"], ["Host"], ["HostName"], ["User"], ["Port"],
                                    ["ProxyJump"])  # fmt: skip
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "exported"
        config.write_text(text)
        jump_left_out = ssh_config.unexpressible(jump) is not None
        left_out = jump_left_out or ssh_config.unexpressible(target) is not None
        back = {c["name"]: c for c in plan_import(text, {}).document["connections"]}
        event("target left out" if left_out else "target exported")
        for each, out in ((jump, jump_left_out), (target, left_out)):
            seen = ssh_reads(config, each.alias)
            changed = {k for k, v in seen.items() if defaults().get(k) != v}
            if out:
                assert f"# {each.alias} is left out: " in text
                assert f"Host {each.alias}" not in text.split("\n")
                assert changed <= {"host", "hostname"}  # not configured at all
                assert each.alias not in back
                continue
            assert changed <= ALLOWED
            assert seen["hostname"] == [as_ssh_prints(each.host)]
            assert seen["port"] == [str(each.port)]
            assert back[each.alias]["host"] == each.host
            if each.user:
                assert seen["user"] == [each.user]
                assert back[each.alias]["username"] == each.user
            if each is target:
                assert seen["proxyjump"] == [jump_alias]
                assert back[alias]["jumpHostId"] == f"ssh-config:{jump_alias}"
                kept = [t for t in tags if t and not ssh_config.CONTROL.search(t) and "," not in t]
                read = dict.fromkeys(t.strip().lower() for t in kept if t.strip())
                assert back[alias]["tags"] == list(read)


class CountingReader(ssh_config.Reader):
    """A Reader that counts what it really does, to hold its work counter to it."""

    def __init__(self, files: Mapping[str, str]) -> None:
        super().__init__(files)
        self.matched = 0
        self.compiled = 0
        self.visited = 0
        self.done = 0
        """Work spent before the last charge: what ran before a refusal could stop it."""

    def spend(self, steps: int) -> None:
        self.done = self.work
        super().spend(steps)

    def glob(self, pattern: str, text: str, *, ssh: bool = True) -> bool:
        self.compiled += (pattern, ssh) not in self._compiled
        self.matched += 1
        return super().glob(pattern, text, ssh=ssh)

    def _matching(self, alias: str) -> Any:
        for block in super()._matching(alias):
            self.visited += 1
            yield block


names = st.text("abcxy0123-.", min_size=1, max_size=6)
patterns = st.one_of(names, names.map(lambda n: f"*{n}*"), names.map(lambda n: f"!{n}?"))
# Each piece is drawn as a small recipe (what, how many) and made into text inside the
# test, so that a failing example stays short to print.
BUILDERS = {
    "includes": lambda n: "Include inc\n" * n,
    "include lines": lambda n: "Include inc inc inc inc\n" * (n % 50),
    "hosts": lambda n: "".join(f"Host h{i}\n" for i in range(n * 3)),
    "wild blocks": lambda n: "".join(f"Host *{i}*\n  User u{i}\n" for i in range(n)),
    "quoted parts": lambda n: "User " + '"a"' * (n * 500) + "\n",
    "backslashes": lambda n: "User " + "\\a" * (n * 500) + "\n",
    "tags": lambda n: "# hostgate-tags: " + ",".join("t" * n) + "\n",
    "jumps": lambda n: "ProxyJump " + ",".join(f"j{i}" for i in range(n % 30)) + "\n",
    "comments": lambda n: "#\n" * (n * 60),
}
recipes = st.tuples(st.sampled_from(sorted(BUILDERS)), st.integers(0, 400))
pieces = st.one_of(
    recipes,
    st.lists(names, max_size=300).map(lambda ns: f"Host {' '.join(ns) or 'x'}\n"),
    st.lists(patterns, min_size=1, max_size=300).map(lambda ps: f"Host {' '.join(ps)}\n"),
    st.sampled_from(['User "unbalanced\n', "Port 99999\n", "Port ²\n", "Match all\n", "=\n"]),
    st.text(max_size=50),
)
configs = st.lists(pieces, max_size=8)


def made(recipe: list[Any]) -> str:
    """The configuration a list of pieces describes."""
    return "".join(p if isinstance(p, str) else BUILDERS[p[0]](p[1]) for p in recipe)


@given(config=configs, included=configs)
def test_hostile_configurations_are_read_within_the_limits_or_refused(
    config: list[Any], included: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:

    readers: list[CountingReader] = []

    def reader(files: Mapping[str, str]) -> CountingReader:
        readers.append(CountingReader(files))
        return readers[-1]

    monkeypatch.setattr(ssh_config, "Reader", reader)
    try:
        plan = plan_import(made(config), {"inc": made(included)})
    except InvalidInput as refused:
        assert refused.status == 400 and refused.message
        if refused.extra:
            assert set(refused.extra) == {"limit"}
        event(f"refused: {refused.extra.get('limit', 'invalid')}")
        plan = None
    [counted] = readers
    # what was done is counted, and what is counted stays within the budget (an
    # example that goes over is refused at the step that passes it)
    assert counted.matched + counted.visited <= counted.work
    assert counted.compiled * ssh_config.COMPILE_COST <= counted.work
    assert counted.done <= ssh_config.MAX_WORK  # a charge that passes it stops the work
    assert counted.lines <= ssh_config.MAX_LINES + 1
    assert counted.includes <= ssh_config.MAX_INCLUDES + 1
    if plan is not None:
        assert plan.spent["work"] <= ssh_config.MAX_WORK
        assert plan.spent["connections"] <= ssh_config.MAX_ALIASES
        assert plan.spent["characters"] <= ssh_config.MAX_CHARS
