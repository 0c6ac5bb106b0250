"""OpenSSH client configuration (``~/.ssh/config``) to connections, and back.

Reading follows ``ssh_config(5)`` where it matters for stored connections:

- keywords are case-insensitive; a keyword and its arguments are separated by spaces
  or by one ``=`` (with optional spaces); arguments may be double-quoted; ``#`` starts
  a comment line;
- every name of a ``Host`` line without wildcards (``*``, ``?``) or negation (``!``)
  becomes a connection named after it; its options are collected from every block
  that matches it (the lines before the first ``Host``, its own blocks, and wildcard
  blocks such as ``Host *``), the **first** value of each keyword winning;
- ``HostName`` (``%h`` is the alias), ``User``, ``Port``, ``ProxyJump`` (other
  entries of the file, or ``[user@]host[:port]`` which become SSH connections of
  their own; a comma-separated chain becomes a chain of jump hosts) and
  ``IdentityFile`` (its contents when that file was supplied alongside) are used;
- ``Include`` is followed for files that were supplied (matched by path, or by path
  relative to ``~/.ssh``, globs allowed); ``Match`` blocks, wildcard blocks and
  options that cannot be stored (``ProxyCommand``, forwardings) are reported as
  skipped.

Tags come from a comment inside a ``Host`` block: ``# hostgate-tags: prod, eu``.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ...errors import InvalidInput

TAGS_COMMENT = re.compile(r"^#\s*hostgate-tags\s*:\s*(?P<tags>.*)$", re.IGNORECASE)
KEYWORD_LINE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9]*)\s*(?:=\s*|\s+)(?P<rest>.*)$")
WILDCARDS = frozenset("*?!")
UNSTORABLE = ("proxycommand", "localforward", "remoteforward", "dynamicforward")
MAX_INCLUDE_DEPTH = 16
MAX_LINES = 20_000
ID_PREFIX = "ssh-config:"


@dataclass
class Block:
    """One ``Host`` (or ``Match``, or the leading global) block with its options."""

    kind: str  # "global", "host", "match"
    patterns: tuple[str, ...]
    line: str
    options: list[tuple[str, list[str]]] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def matches(self, alias: str) -> bool:
        """True when the block applies to ``alias`` (global always; Match never)."""
        if self.kind == "global":
            return True
        if self.kind != "host":
            return False
        hit = False
        for pattern in self.patterns:
            negated = pattern.startswith("!")
            if fnmatch.fnmatchcase(alias, pattern[1:] if negated else pattern):
                if negated:
                    return False
                hit = True
        return hit


@dataclass
class Skipped:
    """Something of the file that does not become a connection, and why."""

    where: str
    reason: str


@dataclass
class Entry:
    """A connection the file describes."""

    alias: str
    host: str
    port: int | None
    user: str
    jump_chain: list[str]
    identity_file: str | None
    private_key: str | None
    tags: list[str]


def _unquote(text: str, where: str) -> list[str]:
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        raise InvalidInput(f"{where}: unbalanced quotes") from None


def _normal(path: str) -> str:
    """A supplied or included file name, relative to ``~/.ssh`` when under it."""
    path = path.strip()
    for prefix in ("~/.ssh/", "$HOME/.ssh/", "${HOME}/.ssh/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


class Reader:
    """Reads one configuration and the files supplied with it."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = {_normal(name): text for name, text in files.items()}
        self.blocks: list[Block] = [Block("global", (), "start of the file")]
        self.skipped: list[Skipped] = []
        self.lines = 0

    def read(self, text: str, source: str, depth: int = 0) -> None:
        """Add the blocks of one file (and of the files it includes)."""
        for number, raw in enumerate(text.splitlines(), 1):
            self.lines += 1
            if self.lines > MAX_LINES:
                raise InvalidInput(f"the configuration has more than {MAX_LINES} lines")
            where = f"{source} line {number}"
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                tags = TAGS_COMMENT.match(line)
                if tags and self.blocks[-1].kind == "host":
                    found = [t.strip().lower() for t in tags.group("tags").split(",")]
                    self.blocks[-1].tags.extend(t for t in found if t)
                continue
            match = KEYWORD_LINE.match(line)
            if match is None:
                raise InvalidInput(f"{where}: expected 'Keyword value', got {line[:80]!r}")
            key = match.group("key").lower()
            args = _unquote(match.group("rest"), where)
            if not args:
                raise InvalidInput(f"{where}: {match.group('key')} needs a value")
            if key == "host":
                self.blocks.append(Block("host", tuple(args), where))
            elif key == "match":
                self.blocks.append(Block("match", tuple(args), where))
                self.skipped.append(Skipped(where, "Match blocks are not imported"))
            elif key == "include":
                self._include(args, where, depth)
            else:
                self.blocks[-1].options.append((key, args))

    def _include(self, patterns: Sequence[str], where: str, depth: int) -> None:
        if depth >= MAX_INCLUDE_DEPTH:
            raise InvalidInput(f"{where}: Include nests deeper than {MAX_INCLUDE_DEPTH}")
        for pattern in patterns:
            wanted = _normal(pattern)
            names = sorted(n for n in self.files if fnmatch.fnmatchcase(n, wanted))
            if not names:
                self.skipped.append(Skipped(where, f"Include {pattern}: not supplied"))
            for name in names:
                self.read(self.files[name], name, depth + 1)

    def entries(self) -> list[Entry]:
        """Every concrete alias with its options (first value wins)."""
        aliases: list[str] = []
        for block in self.blocks:
            if block.kind != "host":
                continue
            concrete = [p for p in block.patterns if not WILDCARDS & set(p)]
            if len(concrete) < len(block.patterns):
                self.skipped.append(
                    Skipped(block.line, "wildcard patterns apply as defaults to matching hosts")
                )
            aliases.extend(a for a in concrete if a not in aliases)
        return [self._entry(alias) for alias in aliases]

    def _entry(self, alias: str) -> Entry:
        options: dict[str, list[str]] = {}
        tags: list[str] = []
        for block in self.blocks:
            if not block.matches(alias):
                continue
            tags.extend(t for t in block.tags if t not in tags)
            for key, args in block.options:
                if key == "identityfile":
                    options.setdefault(key, []).extend(args[:1])
                else:
                    options.setdefault(key, args)
        for key in UNSTORABLE:
            if key in options:
                self.skipped.append(Skipped(alias, f"{key} cannot be stored and is ignored"))
        host = options.get("hostname", [alias])[0].replace("%h", alias)
        port: int | None = None
        if "port" in options:
            text = options["port"][0]
            if not text.isdigit() or not 1 <= int(text) <= 65535:
                raise InvalidInput(f"{alias}: Port {text!r} is not a port number")
            port = int(text)
        jump = options.get("proxyjump", ["none"])[0]
        chain = [] if jump.lower() == "none" else [j for j in jump.split(",") if j]
        identity = options.get("identityfile", [None])[0]
        key_text = self.files.get(_normal(identity)) if identity else None
        if identity and key_text is None:
            self.skipped.append(Skipped(alias, f"IdentityFile {identity}: not supplied"))
        return Entry(
            alias=alias,
            host=host,
            port=port,
            user=options.get("user", [""])[0],
            jump_chain=chain,
            identity_file=identity,
            private_key=key_text,
            tags=tags,
        )


def split_jump(text: str) -> tuple[str, str, int | None]:
    """``[user@]host[:port]`` (IPv6 in brackets) as (user, host, port)."""
    user, _, rest = text.rpartition("@")
    port: int | None = None
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        if tail.startswith(":") and tail[1:].isdigit():
            port = int(tail[1:])
    else:
        host, sep, tail = rest.partition(":")
        if sep and tail.isdigit():
            port = int(tail)
    return user, host, port


@dataclass
class Plan:
    """What an ssh_config import creates: an import document, key files and what it left."""

    document: dict[str, object]
    private_keys: dict[str, dict[str, str]]
    skipped: list[Skipped]


def plan_import(text: str, files: Mapping[str, str]) -> Plan:
    """The import document (format ``hostgate-connections``) an ssh_config describes."""
    reader = Reader(files)
    reader.read(text, "config")
    entries = reader.entries()
    by_alias = {e.alias: e for e in entries}
    items: dict[str, dict[str, object]] = {}
    keys: dict[str, dict[str, str]] = {}

    def item_for_entry(entry: Entry) -> str:
        ident = ID_PREFIX + entry.alias
        if ident not in items:
            item: dict[str, object] = {
                "id": ident, "name": entry.alias, "protocol": "ssh", "host": entry.host,
                "port": entry.port, "username": entry.user, "tags": entry.tags,
            }  # fmt: skip
            items[ident] = item
            if entry.private_key:
                keys[ident] = {"privateKey": entry.private_key}
        return ident

    def item_for_hop(hop: str) -> str:
        if hop in by_alias:
            return item_for_entry(by_alias[hop])
        user, host, port = split_jump(hop)
        if host in by_alias and not user and port is None:
            return item_for_entry(by_alias[host])
        ident = f"{ID_PREFIX}jump:{hop}"
        if ident not in items:
            items[ident] = {
                "id": ident, "name": host, "protocol": "ssh", "host": host, "port": port,
                "username": user, "tags": [],
            }  # fmt: skip
        return ident

    for entry in entries:
        ident = item_for_entry(entry)
        if not entry.jump_chain:
            continue
        hops = [item_for_hop(hop) for hop in entry.jump_chain]
        links = list(zip([*hops[1:], ident], hops, strict=True))
        for linked, jump in links:
            current = items[linked].get("jumpHostId")
            if current not in (None, jump):
                reader.skipped.append(
                    Skipped(entry.alias, f"ProxyJump: {items[linked]['name']} already goes "
                            "through another jump host; the first one is kept")
                )  # fmt: skip
                continue
            items[linked]["jumpHostId"] = jump
    for item in items.values():
        if item["port"] is None:
            del item["port"]
    document: dict[str, object] = {
        "format": "hostgate-connections",
        "version": 1,
        "groups": [],
        "connections": list(items.values()),
    }
    return Plan(document=document, private_keys=keys, skipped=reader.skipped)


ALIAS_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class ExportedHost:
    """A connection as an ssh_config ``Host`` block."""

    alias: str
    host: str
    port: int
    user: str
    jump_alias: str | None
    tags: Sequence[str]
    link: str


def alias_for(name: str, taken: set[str]) -> str:
    """A ``Host`` alias from a connection name: safe characters, unique in the file."""
    base = ALIAS_UNSAFE.sub("-", name).strip("-") or "host"
    alias, number = base, 2
    while alias in taken:
        alias, number = f"{base}-{number}", number + 1
    taken.add(alias)
    return alias


def _value(text: str) -> str:
    return f'"{text}"' if any(c.isspace() for c in text) else text


def render(hosts: Sequence[ExportedHost], header: Sequence[str]) -> str:
    """The ssh_config fragment, one ``Host`` block per connection."""
    lines = [f"# {line}" for line in header]
    for host in hosts:
        lines += ["", f"# {host.link}", f"Host {host.alias}", f"  HostName {_value(host.host)}"]
        if host.user:
            lines.append(f"  User {_value(host.user)}")
        lines.append(f"  Port {host.port}")
        if host.jump_alias:
            lines.append(f"  ProxyJump {host.jump_alias}")
        if host.tags:
            lines.append(f"  # hostgate-tags: {', '.join(host.tags)}")
    return "\n".join(lines) + "\n"
