"""Every benchmark in one run, one table: each figure, its direct baseline, ratio, target.

.venv/bin/python bench/run_all.py [--file-mib 1024] [--api-seconds 5] [--audit-rows 1000000]
                                  [--terminals 200] [--load-seconds 60] [--skip files,load,...]
                                  [--variant-at NAME COMMIT]... [--variant-env NAME VAR=VAL]...
                                  [--rounds 1]

Sections, in order (each starts its own servers and gateway and tears them down):

- ``files``: SFTP (OpenSSH), SMB (smbd) and FTP (vsftpd/pyftpdlib) download and
  upload through the gateway vs the protocol's direct client (bench/files.py,
  bench/files_smb_ftp.py), with the gateway's RSS growth.
- ``terminal``: ``cat`` throughput through ``/ws/ssh`` vs a direct asyncssh shell,
  keystroke round trip, RSS with ``--terminals`` idle terminals (bench/terminal.py).
- ``rules``: keystroke round trip, Enter to prompt and ``cat`` of 64 MiB with 200
  command rules in force vs none (bench/command_rules.py).
- ``api``: requests/s at 32 clients for ``/auth/me`` and ``/connections`` vs a bare
  Quart endpoint on the same hypercorn set-up, login latency (argon2id), idle RSS
  (bench/api.py).
- ``audit``: ``GET /audit`` p50/p95 over ``--audit-rows`` entries (bench/audit_page.py).
- ``door``: OpenSSH's ``sftp`` and ``scp`` (``--file-mib``) and ``cat`` on a PTY (64 MiB)
  through the SSH front door vs straight to the same sshd, gateway CPU per GiB and RSS
  growth (bench/sshd_door.py).
- ``doorscale``: ``--terminals`` front-door shells open at once (errors, RSS per idle
  shell) and the key login's p50 through the door (bench/sshd_door_scale.py).
- ``recordings``: a recorded ``cat`` (64 MiB) and a ``--file-mib`` range read (1 GiB:
  the issue's WebM) with recordings in an S3-compatible bucket (radosgw, else moto)
  vs local disk (bench/recordings_bucket.py).
- ``player``: the browser's VNC player (Chromium) on a synthetic one-hour recording:
  time to the first picture, seeks (bench/vnc_player.py).
- ``load``: ``--terminals`` SSH terminals and 50 API clients for ``--load-seconds``
  (bench/load.py; 0 skips it; the 10-minute run is ``bench/load.py`` on its own).

A section that fails is reported under the table and the others still run. The
table is followed by the list of targets that were missed; the exit status is 1
when a target was missed or a section failed.

Variants compare code, not flags inside it: ``--variant-at before COMMIT`` runs
every section a second time against the kernel and packs of ``COMMIT`` (``git
archive`` into a temporary directory, put in front of the installed packages:
nothing is installed, so the commit must fit this venv's dependencies);
``--variant-env nopatch HOSTGATE_COMPAT_PATCHES=off`` runs it with those
environment variables set for the gateway (an operator's switch, e.g. one compat
module off: ``HOSTGATE_COMPAT_PATCHES=off:hypercorn``). Each section runs for
every variant in turn, ``--rounds`` times, the order rotating from round to round;
then one table gives each figure's median per variant and ``current``'s change
against each (``current / variant - 1``: for a rate, positive is faster; for a
time, CPU or memory figure, positive costs more); the targets are checked on
``current``'s figures.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import SOURCE_VARIABLE, Row, checkout, hostgate_server, print_table  # noqa: E402

SECTIONS = (
    "files",
    "terminal",
    "rules",
    "api",
    "audit",
    "door",
    "doorscale",
    "recordings",
    "player",
    "load",
)


def files_rows(args: argparse.Namespace) -> list[Row]:
    """SFTP, SMB and FTP through the gateway vs direct, one gateway for all three."""
    from files import sftp_rows
    from files_smb_ftp import BLOCK, MIB, Gateway, ftp_rows, smb_rows, source_file

    size = max(1, args.file_mib * MIB // BLOCK) * BLOCK
    source = source_file(size)
    rows: list[Row] = []
    try:
        with hostgate_server() as server:
            gateway = Gateway.setup(server.url, server.pid)
            rows += sftp_rows(gateway, source)
            rows += smb_rows(gateway, source)
            rows += ftp_rows(gateway, source)
    finally:
        shutil.rmtree(source.parent, ignore_errors=True)
    return rows


def terminal_rows(args: argparse.Namespace) -> list[Row]:
    """Throughput, keystrokes and RSS of idle terminals (bench/terminal.py's measure)."""
    import terminal

    from testsupport.sshd import start_sshd

    options = argparse.Namespace(size=64, keystrokes=300, terminals=args.terminals, rounds=3)
    server = start_sshd()
    try:
        with hostgate_server() as served:
            gateway = terminal.Gateway(served.url)
            gateway.settings(
                {"security.max_sessions_per_user": 10_000, "security.max_sessions_total": 10_000}
            )
            gateway.add_connection(server)
            return asyncio.run(terminal.measure(options, gateway, server, served.pid))
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


def rules_rows(args: argparse.Namespace) -> list[Row]:
    """Keystroke echo and ``cat`` with 200 command rules vs none (bench/command_rules.py)."""
    import command_rules

    options = argparse.Namespace(rules=200, size=64, keystrokes=300, rounds=3)
    return command_rules.run(options)


def api_rows(args: argparse.Namespace) -> list[Row]:
    """Throughput vs bare Quart, login latency, idle RSS (bench/api.py)."""
    import api

    return api.run(args.api_seconds, 32, rounds=7)


def audit_rows(args: argparse.Namespace) -> list[Row]:
    """``GET /audit`` over a large log (bench/audit_page.py)."""
    import audit_page

    data = Path(tempfile.mkdtemp(prefix="hg-bench-audit-"))
    try:
        url = f"sqlite+aiosqlite:///{data / 'hostgate.db'}"
        audit_page.migrate(url)
        filled = audit_page.fill_sqlite(data / "hostgate.db", args.audit_rows)
        rows: list[Row] = asyncio.run(audit_page.measure(url, data, filled, 30))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    for row in rows:
        if row.name.endswith("p95") and "search" not in row.name:
            row.target = "< 50 ms"
    return rows


def door_rows(args: argparse.Namespace) -> list[Row]:
    """OpenSSH's clients through the SSH front door vs direct (bench/sshd_door.py)."""
    import sshd_door

    options = argparse.Namespace(mib=args.file_mib, cat_mib=64, rounds=1)
    return sshd_door.measure(options)


def door_scale_rows(args: argparse.Namespace) -> list[Row]:
    """Front-door shells at once and key-login latency (bench/sshd_door_scale.py)."""
    import sshd_door_scale

    options = argparse.Namespace(shells=args.terminals, logins=40, parallel=50)
    return sshd_door_scale.measure(options)


def recordings_rows(args: argparse.Namespace) -> list[Row]:
    """Recording to a bucket vs local disk: cat, a ``--file-mib`` range read."""
    import recordings_bucket

    return recordings_bucket.measure(64, 3, args.file_mib)


def player_rows(args: argparse.Namespace) -> list[Row]:
    """The browser's VNC player on a one-hour recording (bench/vnc_player.py)."""
    import vnc_player

    return vnc_player.run(60, 8)


def load_rows(args: argparse.Namespace) -> list[Row]:
    """Terminals and API clients at once (bench/load.py)."""
    import load

    return load.run(args.terminals, 50, float(args.load_seconds))


RUNNERS: dict[str, Callable[[argparse.Namespace], list[Row]]] = {
    "files": files_rows,
    "terminal": terminal_rows,
    "rules": rules_rows,
    "api": api_rows,
    "audit": audit_rows,
    "door": door_rows,
    "doorscale": door_scale_rows,
    "recordings": recordings_rows,
    "player": player_rows,
    "load": load_rows,
}


def missed(row: Row) -> bool:
    """True when a row's target (``>= 0.9x``, ``< 100 ms``, ``< 512 MiB``, ``0``) is missed."""
    target = row.target.strip()
    if not target:
        return False
    match = re.match(r"(>=|<=|<|>)?\s*([\d.]+)\s*(x)?", target)
    if match is None:
        return False
    operator, number, ratio = match.group(1) or "==", float(match.group(2)), match.group(3)
    if ratio:
        if row.ratio_value is None:
            return True
        value = row.ratio_value
    else:
        value = row.value
    checks = {
        ">=": value >= number,
        "<=": value <= number,
        "<": value < number,
        ">": value > number,
        "==": value == number,
    }
    return not checks[operator]


Variant = tuple[str, dict[str, str]]
"""A variant's name and the environment its gateways get (``current``: none)."""


@contextmanager
def environment(changes: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``changes`` while the block runs (the gateways inherit it)."""
    saved = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def parse_env(spec: str) -> dict[str, str]:
    """``VAR=VALUE,VAR=VALUE`` as a mapping (a value may hold ``:`` but not ``,``)."""
    pairs = [item.partition("=") for item in spec.split(",") if item.strip()]
    if not pairs or any(not name.strip() or not equals for name, equals, _ in pairs):
        raise SystemExit(f"--variant-env wants VAR=VALUE[,VAR=VALUE...], not {spec!r}")
    return {name.strip(): value for name, _, value in pairs}


def rotated(variants: list[Variant], turn: int) -> list[Variant]:
    """The variants in the order of round ``turn``: each goes first in turn."""
    shift = turn % len(variants)
    return variants[shift:] + variants[:shift]


def figure(name: str) -> str:
    """A row's name without what varies from run to run (``rounds 0.81-0.93x``)."""
    name = re.sub(r",? ?rounds [\d.]+-[\d.]+x", "", name)
    return re.sub(r" \(\)", "", name)


def compared(results: dict[str, list[list[Row]]], names: list[str]) -> list[str]:
    """One line per figure: its median per variant, each variant's change against current."""
    medians: dict[str, dict[str, tuple[float, str]]] = {}
    order: list[str] = []
    for variant in names:
        rows = [row for section in results.get(variant, []) for row in section]
        for row in rows:
            if figure(row.name) not in order:
                order.append(figure(row.name))
        for name in order:
            values = [r.value for r in rows if figure(r.name) == name]
            units = [r.unit for r in rows if figure(r.name) == name]
            if values:
                medians.setdefault(name, {})[variant] = (statistics.median(values), units[0])
    width = max([len(name) for name in order] + [6])
    head = "".join(f"  {variant:>14}" for variant in names)
    changes = "".join(f"  {f'vs {variant}':>12}" for variant in names[1:])
    lines = [f"{'figure':<{width}}{head}{changes}"]
    for name in order:
        cells, unit = medians.get(name, {}), ""
        line = f"{name:<{width}}"
        for variant in names:
            value, unit = cells.get(variant, (float("nan"), unit))
            line += f"  {value:>11,.1f} {unit:<2}"
        current = cells.get("current", (float("nan"), ""))[0]
        for variant in names[1:]:
            other = cells.get(variant, (float("nan"), ""))[0]
            change = (current / other - 1) * 100 if other else float("nan")
            line += f"  {change:>+11.1f}%"
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file-mib", type=int, default=1024, help="file size for files")
    parser.add_argument("--api-seconds", type=int, default=5, help="seconds per API round")
    parser.add_argument("--audit-rows", type=int, default=1_000_000)
    parser.add_argument("--terminals", type=int, default=200)
    parser.add_argument("--load-seconds", type=int, default=60, help="0 skips the load section")
    parser.add_argument("--skip", default="", help=f"comma-separated sections of {SECTIONS}")
    parser.add_argument(
        "--variant-at",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "COMMIT"),
        help="also run every section against the kernel and packs of COMMIT",
    )
    parser.add_argument(
        "--variant-env",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VAR=VALUE"),
        help="also run every section with these variables in the gateways' environment",
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds per section and variant")
    args = parser.parse_args()
    skipped = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.load_seconds <= 0:
        skipped.add("load")
    unknown = skipped - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")

    began = time.monotonic()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"hostgate bench, {stamp}, {os.cpu_count()} CPUs, {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    failures: list[str] = []
    results: dict[str, list[list[Row]]] = {}
    with ExitStack() as stack:
        variants: list[Variant] = [("current", {})]
        for name, commit in args.variant_at:
            variants.append((name, {SOURCE_VARIABLE: str(stack.enter_context(checkout(commit)))}))
        variants += [(name, parse_env(spec)) for name, spec in args.variant_env]
        for section in SECTIONS:
            if section in skipped:
                continue
            for turn in range(max(1, args.rounds)):
                for name, env in rotated(variants, turn):
                    started = time.monotonic()
                    print(f"-- {section} ({name}, round {turn + 1}) ...", flush=True)
                    try:
                        with environment(env):
                            results.setdefault(name, []).append(RUNNERS[section](args))
                    except Exception:
                        trace = traceback.format_exc(limit=3).strip()
                        failures.append(f"{section} ({name}): {trace}")
                    print(f"-- {section} done in {time.monotonic() - started:.0f} s", flush=True)
    rows = [row for section_rows in results.get("current", []) for row in section_rows]
    print()
    if len(variants) > 1 or args.rounds > 1:
        print("\n".join(compared(results, [name for name, _ in variants])))
        for name, env in variants[1:]:
            print(f"variant {name}: {env}")
    elif rows:
        print_table(rows)
    misses = [row for row in rows if missed(row)]
    print()
    print(f"{len(rows)} figures in {time.monotonic() - began:.0f} s; ", end="")
    print(f"{len(misses)} target(s) missed" + (":" if misses else "."))
    for row in misses:
        print(f"  MISSED {row.name}: {row.value:,.2f} {row.unit} {row.ratio} (target {row.target})")
    for failure in failures:
        print(f"  FAILED section {failure}")
    if misses or failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
