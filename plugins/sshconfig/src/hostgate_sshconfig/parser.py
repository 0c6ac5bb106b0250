r"""OpenSSH client configuration (``~/.ssh/config``) to connections, and back.

Reading follows ``ssh_config(5)`` where it matters for stored connections:

- keywords are case-insensitive; a keyword and its arguments are separated by spaces
  or by one ``=`` (with optional spaces); arguments are split as ``ssh`` splits them
  (double or single quotes, ``\"``, ``\'``, ``\\`` and ``\ `` escapes, ``#``
  starting a token ends the line); ``#`` starts a comment line;
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

Reading is bounded (lines, characters, Include files, arguments per line, aliases,
matching work: see the ``MAX_`` constants): a configuration past a limit is refused
with a 400 naming the limit, and the work grows linearly with the input. It is pure
CPU work: callers on the event loop run :func:`plan_import` in a thread.
"""

from __future__ import annotations

import fnmatch
import heapq
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hostgate import CONTROL_CHARACTERS as CONTROL
from hostgate import MAX_JUMP_HOPS as MAX_HOPS
from hostgate import MAX_TAGS as TAGS_MAX
from hostgate import InvalidInput, validate_host

TAGS_COMMENT = re.compile(r"^#\s*hostgate-tags\s*:\s*(?P<tags>.*)$", re.IGNORECASE)
KEYWORD_LINE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9]*)\s*(?:=\s*|\s+)(?P<rest>.*)$")
WILDCARDS = frozenset("*?!")
UNSTORABLE = ("proxycommand", "localforward", "remoteforward", "dynamicforward")
USED = frozenset({"hostname", "user", "port", "proxyjump", "identityfile", *UNSTORABLE})
ID_PREFIX = "ssh-config:"

MAX_INCLUDE_DEPTH = 16
MAX_LINES = 20_000
"""Lines read, counting each time an included file is read."""
MAX_CHARS = 2_000_000
"""Characters read, counting each time an included file is read."""
MAX_INCLUDES = 256
"""Files read through ``Include`` in all."""
MAX_ARGUMENTS = 256
"""Arguments of one line (the names of a ``Host`` line, the files of an ``Include``)."""
MAX_PATTERN = 255
"""Characters of one ``Host`` name or pattern."""
MAX_ALIASES = 1_000
"""Connections one configuration may describe (its aliases and the jump hosts it names)."""
MAX_WORK = 250_000
"""Steps of work, each about as costly: an alias tried against a block and its
patterns (by their length), a pattern compiled (by its length), a tag merged, an
Include glob tried on a file, a quoted part of an argument."""
COMPILE_COST = 100
QUOTE_COST = 2


def limit_reached(limit: str, message: str) -> InvalidInput:
    """The 400 for a configuration past one of the limits; ``limit`` names it."""
    return InvalidInput(
        f"the configuration is too large to import: {message}", extra={"limit": limit}
    )


def match_cost(pattern: str) -> int:
    """Steps of work to match a name against ``pattern`` (longer ones cost more)."""
    return 1 + len(pattern) // 16


@dataclass
class Block:
    """One ``Host`` (or ``Match``, or the leading global) block with its options."""

    kind: str  # "global", "host", "match"
    patterns: tuple[str, ...]
    line: str
    options: dict[str, list[str]] = field(default_factory=dict)
    """The first value of each keyword hostgate uses (IdentityFile: the first file)."""
    tags: dict[str, None] = field(default_factory=dict)
    literal: frozenset[str] = frozenset()
    wild: tuple[str, ...] = ()
    negated: tuple[str, ...] = ()
    cost: int = 1
    """Steps of work to try an alias against this block."""

    def __post_init__(self) -> None:
        literal: set[str] = set()
        wild: list[str] = []
        negated: list[str] = []
        for pattern in self.patterns:
            if pattern.startswith("!"):
                negated.append(pattern[1:])
            elif WILDCARDS & set(pattern):
                wild.append(pattern)
            else:
                literal.add(pattern)
        self.literal, self.wild, self.negated = frozenset(literal), tuple(wild), tuple(negated)
        self.cost = 1 + sum(match_cost(p) for p in (*wild, *negated))

    def add_option(self, key: str, args: list[str]) -> None:
        """Keep the first value of a keyword hostgate uses; ignore the others."""
        if key in USED and key not in self.options:
            self.options[key] = args[:1] if key == "identityfile" else args


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


def split_arguments(text: str, where: str, spend: Callable[[int], None] | None = None) -> list[str]:
    r"""The arguments of a line as ``ssh`` splits them (its ``argv_split``).

    Spaces and tabs separate arguments; double or single quotes group them;
    ``\"``, ``\'`` and ``\\`` (and ``\ `` outside quotes) escape, any other
    backslash is kept; a ``#`` that starts an argument ends the line. Regular
    expressions do the scanning, so the time is linear in the line; ``spend`` is
    charged for each quoted part (the one step done in Python).
    """
    arguments: list[str] = []
    index, end = 0, len(text)
    while True:
        index = _BLANKS.match(text, index).end()  # type: ignore[union-attr]
        if index >= end or text[index] == "#":
            return arguments
        argument = _ARGUMENT.match(text, index)
        if argument is None or (argument.end() < end and text[argument.end()] not in " \t"):
            raise InvalidInput(f"{where}: unbalanced quotes")
        if len(arguments) >= MAX_ARGUMENTS:
            raise limit_reached("arguments", f"{where} has more than {MAX_ARGUMENTS} arguments")
        if spend is not None:
            spend(QUOTE_COST * (argument.group().count('"') + argument.group().count("'")))
        arguments.append(_unescape(argument.group()))
        index = argument.end()


_BLANKS = re.compile(r"[ \t]*")
_QUOTED = r""""(?>[^"\\]+|\\[\\'"]|\\)*+"|'(?>[^'\\]+|\\[\\'"]|\\)*+'"""
_BARE = r"""(?>[^ \t"'\\]+|\\[\\'" ]|\\)++"""
_ARGUMENT = re.compile(f"(?>{_QUOTED}|{_BARE})+")
_SEGMENT = re.compile(f"(?P<quoted>{_QUOTED})|(?P<bare>{_BARE})")
_ESCAPED_BARE = re.compile(r"""\\([\\'" ])""")
_ESCAPED_QUOTED = re.compile(r"""\\([\\'"])""")


def _unescape(argument: str) -> str:
    """One argument without its quotes and escapes."""
    if '"' not in argument and "'" not in argument:
        return _ESCAPED_BARE.sub(r"\1", argument)
    parts = []
    for segment in _SEGMENT.finditer(argument):
        if segment.group("bare") is not None:
            parts.append(_ESCAPED_BARE.sub(r"\1", segment.group()))
        else:
            parts.append(_ESCAPED_QUOTED.sub(r"\1", segment.group()[1:-1]))
    return "".join(parts)


def _normal(path: str) -> str:
    """A supplied or included file name, relative to ``~/.ssh`` when under it."""
    path = path.strip()
    for prefix in ("~/.ssh/", "$HOME/.ssh/", "${HOME}/.ssh/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


class Reader:
    """Reads one configuration and the files supplied with it, within the limits."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = {_normal(name): text for name, text in files.items()}
        self.blocks: list[Block] = [Block("global", (), "start of the file")]
        self.skipped: list[Skipped] = []
        self.lines = 0
        self.chars = 0
        self.includes = 0
        self.work = 0
        """Matching steps so far (bounded by ``MAX_WORK``)."""
        self.aliases: dict[str, None] = {}
        self._literal_blocks: dict[str, list[int]] = {}
        self._wild_blocks: list[int] = []
        self._compiled: dict[tuple[str, bool], re.Pattern[str]] = {}

    def spend(self, steps: int) -> None:
        """Count matching steps; refuse the configuration past ``MAX_WORK``."""
        self.work += steps
        if self.work > MAX_WORK:
            raise limit_reached(
                "work",
                f"reading it takes more than {MAX_WORK} steps of work (hosts times the "
                "wildcard patterns they are tried against, repeated Includes, quoted parts)",
            )

    def glob(self, pattern: str, text: str, *, ssh: bool = True) -> bool:
        """``text`` matches the pattern (``ssh``: only ``*`` and ``?`` are special).

        Compiling spends work by the pattern's length, once; the caller spends the
        matching (:func:`match_cost`).
        """
        compiled = self._compiled.get((pattern, ssh))
        if compiled is None:
            self.spend(COMPILE_COST + 3 * len(pattern))
            glob = pattern.replace("[", "[[]") if ssh else pattern
            compiled = self._compiled[pattern, ssh] = re.compile(fnmatch.translate(glob))
        return compiled.match(text) is not None

    def read(self, text: str, source: str, depth: int = 0) -> None:
        """Add the blocks of one file (and of the files it includes)."""
        self.chars += len(text)
        if self.chars > MAX_CHARS:
            raise limit_reached(
                "characters", f"more than {MAX_CHARS} characters read (Includes count each time)"
            )
        for number, raw in enumerate(text.split("\n"), 1):
            self.lines += 1
            if self.lines > MAX_LINES:
                raise limit_reached(
                    "lines", f"more than {MAX_LINES} lines read (Includes count each time)"
                )
            where = f"{source} line {number}"
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                tags = TAGS_COMMENT.match(line)
                if tags and self.blocks[-1].kind == "host":
                    self._tags(self.blocks[-1], tags.group("tags"), where)
                continue
            match = KEYWORD_LINE.match(line)
            if match is None:
                raise InvalidInput(f"{where}: expected 'Keyword value', got {line[:80]!r}")
            key = match.group("key").lower()
            args = split_arguments(match.group("rest"), where, self.spend)
            if not args:
                raise InvalidInput(f"{where}: {match.group('key')} needs a value")
            if len(args) > MAX_ARGUMENTS:
                raise limit_reached("arguments", f"{where} has more than {MAX_ARGUMENTS} arguments")
            if key == "host":
                self._host(args, where)
            elif key == "match":
                self.blocks.append(Block("match", tuple(args), where))
                self.skipped.append(Skipped(where, "Match blocks are not imported"))
            elif key == "include":
                self._include(args, where, depth)
            else:
                self.blocks[-1].add_option(key, args)

    def _tags(self, block: Block, text: str, where: str) -> None:
        pieces = text.split(",", 4 * TAGS_MAX)
        block.tags.update(dict.fromkeys(t for t in (p.strip().lower() for p in pieces) if t))
        if len(block.tags) > TAGS_MAX or len(pieces) > 4 * TAGS_MAX:
            raise InvalidInput(f"{where}: more than {TAGS_MAX} tags")

    def _host(self, patterns: Sequence[str], where: str) -> None:
        for pattern in patterns:
            if len(pattern) > MAX_PATTERN:
                raise limit_reached(
                    "pattern", f"{where}: a Host name is longer than {MAX_PATTERN} characters"
                )
        block = Block("host", tuple(patterns), where)
        index = len(self.blocks)
        self.blocks.append(block)
        for alias in block.literal:
            self._literal_blocks.setdefault(alias, []).append(index)
        if block.wild:
            self._wild_blocks.append(index)
        if block.wild or block.negated:
            self.skipped.append(
                Skipped(where, "wildcard patterns apply as defaults to matching hosts")
            )
        for pattern in patterns:
            if pattern in block.literal and pattern not in self.aliases:
                if len(self.aliases) >= MAX_ALIASES:
                    raise limit_reached(
                        "aliases", f"{where}: more than {MAX_ALIASES} hosts in the configuration"
                    )
                self.aliases[pattern] = None

    def _include(self, patterns: Sequence[str], where: str, depth: int) -> None:
        if depth >= MAX_INCLUDE_DEPTH:
            raise InvalidInput(f"{where}: Include nests deeper than {MAX_INCLUDE_DEPTH}")
        for pattern in patterns:
            wanted = _normal(pattern)
            self.spend(len(self.files) * match_cost(wanted))
            names = sorted(n for n in self.files if self.glob(wanted, n, ssh=False))
            if not names:
                self.skipped.append(Skipped(where, f"Include {pattern}: not supplied"))
            for name in names:
                self.includes += 1
                if self.includes > MAX_INCLUDES:
                    raise limit_reached(
                        "includes", f"{where}: more than {MAX_INCLUDES} files read by Include"
                    )
                self.read(self.files[name], name, depth + 1)

    def entries(self) -> list[Entry]:
        """Every concrete alias with its options (first value wins)."""
        return [self._entry(alias) for alias in self.aliases]

    def _matching(self, alias: str) -> Iterable[Block]:
        """The blocks that apply to ``alias``, in file order (each tried once)."""
        self.spend(1)
        yield self.blocks[0]  # the lines before the first Host
        last = -1
        for index in heapq.merge(self._literal_blocks.get(alias, ()), self._wild_blocks):
            if index == last:
                continue
            last = index
            block = self.blocks[index]
            self.spend(block.cost)
            if any(self.glob(p, alias) for p in block.negated):
                continue
            if alias in block.literal or any(self.glob(p, alias) for p in block.wild):
                yield block

    def _entry(self, alias: str) -> Entry:
        options: dict[str, list[str]] = {}
        tags: dict[str, None] = {}
        for block in self._matching(alias):
            self.spend(len(block.tags))
            tags.update(block.tags)
            for key, args in block.options.items():
                options.setdefault(key, args)
        for key in UNSTORABLE:
            if key in options:
                self.skipped.append(Skipped(alias, f"{key} cannot be stored and is ignored"))
        host = options.get("hostname", [alias])[0].replace("%h", alias)
        port: int | None = None
        if "port" in options:
            text = options["port"][0]
            if not (text.isascii() and text.isdigit() and len(text) <= 5) or not (
                1 <= int(text) <= 65535
            ):
                raise InvalidInput(f"{alias}: Port {text[:20]!r} is not a port number")
            port = int(text)
        jump = options.get("proxyjump", ["none"])[0]
        chain = [] if jump.lower() == "none" else [j for j in jump.split(",") if j]
        if len(chain) > MAX_HOPS:
            raise InvalidInput(f"{alias}: ProxyJump names more than {MAX_HOPS} jump hosts")
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
            tags=list(tags),
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
    spent: dict[str, int] = field(default_factory=dict)
    """What reading cost: lines, characters, includes, work (matching steps)."""


def plan_import(text: str, files: Mapping[str, str]) -> Plan:
    """The import document (format ``hostgate-connections``) an ssh_config describes."""
    reader = Reader(files)
    reader.read(text, "config")
    entries = reader.entries()
    by_alias = {e.alias: e for e in entries}
    items: dict[str, dict[str, object]] = {}
    keys: dict[str, dict[str, str]] = {}

    def count_item(where: str) -> None:
        if len(items) >= MAX_ALIASES:
            raise limit_reached(
                "aliases", f"{where}: more than {MAX_ALIASES} connections with the jump hosts"
            )

    def item_for_entry(entry: Entry) -> str:
        ident = ID_PREFIX + entry.alias
        if ident not in items:
            count_item(entry.alias)
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
            count_item(f"ProxyJump {hop}")
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
    spent = {
        "lines": reader.lines,
        "characters": reader.chars,
        "includes": reader.includes,
        "work": reader.work,
        "connections": len(items),
    }
    return Plan(document=document, private_keys=keys, skipped=reader.skipped, spent=spent)


ALIAS_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
RESERVED_ALIASES = frozenset({"none"})
"""``ProxyJump none`` means "no jump host": no Host may be called that."""
BARE_ARGUMENT = re.compile(r"""[^\s"'#=][^\s"']*""")
"""An argument ``ssh`` reads back unchanged without quotes (unless it holds a double backslash)."""
USER_EXPANDED = re.compile(r"%|\$\{")
"""What newer ``ssh`` expands in ``User`` (tokens, environment) and older takes as it is."""


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
    jump_missing: bool = False
    """It goes through a jump host that is not exported (not visible, or not SSH)."""


def alias_for(name: str, taken: set[str]) -> str:
    """A ``Host`` alias from a connection name: safe characters, unique in the file.

    Only ``[A-Za-z0-9._-]`` (no pattern, quote or token can be made of them), and
    never ``none``.
    """
    base = ALIAS_UNSAFE.sub("-", name).strip("-") or "host"
    if base.lower() in RESERVED_ALIASES:
        base = f"{base}-host"
    alias, number = base, 2
    while alias in taken:
        alias, number = f"{base}-{number}", number + 1
    taken.add(alias)
    return alias


def ssh_argument(text: str) -> str:
    r"""``text`` written as one ssh_config argument that ``ssh`` reads back as ``text``.

    Bare when nothing in it is special to ``ssh``'s argument splitting, otherwise in
    double quotes with ``\`` and ``"`` escaped. ``text`` holds no control character
    (no quoting can carry a line break: callers leave such values out).
    """
    if BARE_ARGUMENT.fullmatch(text) and "\\\\" not in text:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def comment(text: str) -> str:
    """``text`` for a comment line: no control character can end the line early."""
    return CONTROL.sub("\ufffd", text)


def unexpressible(host: ExportedHost) -> str | None:
    """Why ``host`` cannot be written so that ``ssh`` reads it exactly, or None."""
    try:
        validate_host(host.host)
    except InvalidInput:
        return "its host is not a host name or IP address"
    if CONTROL.search(host.user):
        return "its user name holds a control character or line break"
    if USER_EXPANDED.search(host.user):
        return "its user name holds '%' or '${', which versions of ssh read differently"
    if not 1 <= host.port <= 65535:
        return "its port is out of range"
    return None


def _tags(tags: Iterable[str]) -> list[str]:
    """The tags the comment can carry (read back by the importer: no commas)."""
    return [t for t in tags if t and not CONTROL.search(t) and "," not in t]


def render(hosts: Sequence[ExportedHost], header: Sequence[str]) -> str:
    """The ssh_config fragment, one ``Host`` block per connection.

    Every value is written as ``ssh`` reads it (see :func:`ssh_argument`); a
    connection that cannot be (see :func:`unexpressible`), or whose jump host was left
    out, is left out with a comment saying why, so no value of a connection can
    become a directive of its own. ``hosts`` lists jump hosts before their users: a
    ProxyJump to a Host not written above (a loop) leaves its connection out too.
    """
    lines = [f"# {comment(line)}" for line in header]
    left_out: set[str] = set()
    written: set[str] = set()
    for host in hosts:
        reason = unexpressible(host)
        if reason is None and host.jump_missing:
            reason = "its jump host is not one of the exported connections"
        if reason is None and host.jump_alias in left_out:
            reason = f"its jump host {host.jump_alias} is left out"
        elif reason is None and host.jump_alias and host.jump_alias not in written:
            reason = "its jump hosts go round in a loop"
        if reason is not None:
            left_out.add(host.alias)
            lines += ["", f"# {comment(host.link)}", f"# {host.alias} is left out: {reason}"]
            continue
        written.add(host.alias)
        hostname = ssh_argument(host.host.replace("%", "%%"))
        lines += ["", f"# {comment(host.link)}", f"Host {host.alias}", f"  HostName {hostname}"]
        if host.user:
            lines.append(f"  User {ssh_argument(host.user)}")
        lines.append(f"  Port {host.port}")
        if host.jump_alias:
            lines.append(f"  ProxyJump {host.jump_alias}")
        tags = _tags(host.tags)
        if tags:
            lines.append(f"  # hostgate-tags: {', '.join(tags)}")
    return "\n".join(lines) + "\n"


DOOR_CIPHERS = (
    "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,"
    "aes128-ctr,aes192-ctr,aes256-ctr"
)
"""OpenSSH's own ciphers with AES-GCM first, for every leg the door decrypts: the client
picks the cipher, and chacha20-poly1305 (its default) costs the gateway about a third
more CPU per byte than AES-GCM with hardware AES (docs/performance.md)."""


@dataclass(frozen=True)
class Door:
    """The SSH front door every exported host is reached through (``ProxyJump``)."""

    host: str
    port: int
    user: str


def render_through_door(hosts: Sequence[ExportedHost], header: Sequence[str], door: Door) -> str:
    """The fragment with one ``Host`` for the door and one per connection jumping through it.

    A connection's ``HostName`` is its id, which the door resolves (``ssh -J``); the
    door reaches the real server itself, through the connection's own jump hosts, and
    records the session. Every connection's inner host key is the door's ProxyJump key,
    filed under one ``HostKeyAlias``, so it is accepted once for all of them. Both
    connections the door terminates prefer AES-GCM (``DOOR_CIPHERS``).
    """
    taken = {h.alias for h in hosts}
    door_alias = alias_for(f"hostgate-{door.host}", taken)
    key_alias = f"{door_alias}-proxyjump"
    lines = [f"# {comment(line)}" for line in header]
    lines += [
        "",
        "# the gateway's SSH front door (check its host keys on first connection)",
        f"Host {door_alias}",
        f"  HostName {ssh_argument(door.host.replace('%', '%%'))}",
        f"  Port {door.port}",
        f"  User {ssh_argument(door.user)}",
        f"  Ciphers {DOOR_CIPHERS}",
    ]
    for host in hosts:
        lines += [
            "",
            f"# {comment(host.link)}",
            f"Host {host.alias}",
            f"  HostName {ssh_argument(host.host)}",
            f"  ProxyJump {door_alias}",
            f"  HostKeyAlias {key_alias}",
            f"  Ciphers {DOOR_CIPHERS}",
        ]
        tags = _tags(host.tags)
        if tags:
            lines.append(f"  # hostgate-tags: {', '.join(tags)}")
    return "\n".join(lines) + "\n"
