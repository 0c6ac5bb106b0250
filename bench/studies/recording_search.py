"""GET /sessions/search over 10,000 recorded sessions: p50/p95 of command and output queries.

Fills a throwaway database (SQLite, and PostgreSQL when its binaries are installed)
with N recorded SSH sessions (default 10,000) through the service layer: each
session's row, its commands as the command log hands them to the ``recsearch``
pack and its terminal output, ANSI colours and all, cut by the same
``OutputChunker`` a live session uses (``RecordingSearch.entries``). Output per
session is drawn from a skewed distribution (median about 9 KiB of text, 5% of
sessions `cat` a large log and hit the 256 KiB bound). Then it times
``GET /api/v1/sessions/search`` through the real app (ASGI, no network) with the
filters the UI uses, as an admin (every session) and as one user (their own), in
alternating rounds.

.venv/bin/python bench/studies/recording_search.py [--sessions 10000] [--repeat 30]
    [--skip postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import BENCH_KEY, Row, median, percentile, postgres, print_table  # noqa: E402

USERS = 50
CONNECTIONS = 300
BATCH_SESSIONS = 200
RARE_EVERY = 997
"""One session in this many prints the rare error and runs the rare command."""

COMMANDS = [
    "ls -la", "cd /var/log", "sudo systemctl status nginx", "tail -n 50 syslog",
    "df -h", "free -m", "uptime", "ps aux --sort=-%mem | head", "cat /etc/hosts",
    "git pull", "docker ps", "kubectl get pods -n web", "journalctl -u nginx --since today",
    "grep -ri timeout /etc/nginx", "top -bn1 | head -20", "ip addr", "ss -tlnp",
    "vim /etc/nginx/sites-enabled/default", "sudo apt-get update", "whoami", "hostname",
]  # fmt: skip
LOG_WORDS = [
    "info", "warn", "error", "debug", "connection", "accepted", "closed", "refused", "timeout",
    "upstream", "request", "response", "GET", "POST", "200", "404", "500", "502", "nginx",
    "sshd", "kernel", "systemd", "started", "stopped", "user", "session", "opened", "for",
    "client", "from", "port", "worker", "process", "exited", "signal", "retry", "backend",
    "cache", "miss", "hit", "latency", "ms", "bytes", "sent", "received", "handshake", "tls",
    "certificate",
]  # fmt: skip
COLOURS = ["\x1b[32m", "\x1b[31m", "\x1b[1;34m", "\x1b[0m", "\x1b[33m"]


def output_kib(rng: random.Random) -> float:
    """Text per session: lognormal around 9 KiB, 5% of sessions dump a large log."""
    if rng.random() < 0.05:
        return rng.uniform(300, 2_000)
    return min(200.0, rng.lognormvariate(2.2, 0.8))


def log_line(rng: random.Random, number: int, when: datetime) -> str:
    colour = rng.choice(COLOURS)
    words = " ".join(rng.choice(LOG_WORDS) for _ in range(rng.randint(6, 14)))
    return (
        f"{colour}{when:%b %d %H:%M:%S}\x1b[0m host{number % 97} "
        f"{rng.choice(LOG_WORDS)}[{rng.randint(100, 99999)}]: {words} id={rng.getrandbits(32):08x}"
    )


def session_script(
    rng: random.Random, index: int, started: datetime
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(commands with their offsets, output reads with their offsets) of one session."""
    commands: list[tuple[int, str]] = []
    reads: list[tuple[int, str]] = []
    budget = int(output_kib(rng) * 1024)
    elapsed = rng.randint(200, 2_000)
    reads.append((elapsed, "Welcome to Ubuntu 24.04 LTS\r\nLast login: from 10.0.0.1\r\n$ "))
    rare = index % RARE_EVERY == 0
    written = 0
    step = 0
    while written < budget or step < 3:
        elapsed += rng.randint(1_500, 20_000)
        command = rng.choice(COMMANDS)
        if rare and step == 1:
            command = "sudo iptables -F INPUT"
        commands.append((elapsed, command))
        reads.append((elapsed, command + "\r\n"))
        lines = []
        for _ in range(rng.randint(3, 60) if written < budget else 2):
            lines.append(log_line(rng, index, started + timedelta(milliseconds=elapsed)))
        if rare and step == 2:
            lines.append("kernel: Out of memory: Killed process 4242 (java) total-vm:8123456kB")
        text = "\r\n".join(lines) + "\r\n$ "
        written += len(text)
        reads.append((elapsed + rng.randint(5, 400), text))
        step += 1
    return commands, reads


async def fill(url: str, sessions: int) -> tuple[list[str], list[str], datetime]:
    """Store recorded sessions with their index entries; (users, connections, newest)."""
    from types import SimpleNamespace

    from hostgate import SessionText
    from hostgate.db.engine import Database
    from hostgate.db.models.sessions import RemoteSession
    from hostgate.services.sessions.output_text import OutputChunker
    from hostgate_recsearch.index import RecordingSearch
    from hostgate_recsearch.models import SearchEntry
    from sqlalchemy import insert, text

    class OutputOn:
        def get(self, key: str) -> Any:
            return True

    db = Database(url)
    await db.migrate()
    search = RecordingSearch(SimpleNamespace(db=db, settings=OutputOn()))  # type: ignore[arg-type]
    rng = random.Random(21)
    users = [f"user-{n:03d}" for n in range(USERS)]
    connections = [f"conn-{n:03d}" for n in range(CONNECTIONS)]
    start = datetime(2026, 5, 1, tzinfo=UTC)
    step = timedelta(days=180) / sessions
    index = 0
    entries_total = 0
    while index < sessions:
        rows: list[dict[str, Any]] = []
        entries: list[dict[str, Any]] = []
        for _ in range(min(BATCH_SESSIONS, sessions - index)):
            started = start + step * index
            user = rng.randrange(USERS)
            connection = rng.randrange(CONNECTIONS)
            row = RemoteSession(
                user_id=users[user],
                username=f"u{user}",
                connection_id=connections[connection],
                connection_name=f"web-{connection}",
                protocol="ssh",
                started_at=started,
                ended_at=started + timedelta(minutes=30),
                recording_state="complete",
                recording_format="cast",
                recording_file=None,
            )
            rows.append(row.model_dump())
            commands, reads = session_script(rng, index, started)
            chunker = OutputChunker()
            for elapsed, data in reads:
                chunker.feed(data, elapsed)
            chunks = chunker.finish()
            texts = [SessionText(row.id, "output", c.offset_ms, c.text, c.marks) for c in chunks]
            texts += [SessionText(row.id, "command", ms, command) for ms, command in commands]
            for entry in search.entries(texts):
                entries.append(entry.model_dump(exclude={"id"}))
            index += 1
        async with db.session() as session:
            await session.execute(insert(RemoteSession), rows)
            await session.execute(insert(SearchEntry), entries)
            await session.commit()
        entries_total += len(entries)
    async with db.engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
        if db.dialect == "sqlite":
            await conn.execute(
                text("INSERT INTO recording_search_fts(recording_search_fts) VALUES ('optimize')")
            )
    await db.close()
    print(f"  {sessions:,} sessions, {entries_total:,} index entries")
    return users, connections, start + step * sessions


def database_size(url: str, data: Path) -> float:
    """MiB the database takes."""
    if url.startswith("sqlite"):
        return sum(p.stat().st_size for p in data.glob("hostgate.db*")) / 2**20
    import asyncpg

    async def size() -> float:
        dsn = url.replace("postgresql+asyncpg", "postgresql")
        conn = await asyncpg.connect(dsn)
        value = await conn.fetchval("SELECT pg_database_size(current_database())")
        await conn.close()
        return float(value) / 2**20

    return asyncio.run(size())


async def measure(
    url: str, data: Path, users: list[str], connections: list[str], newest: datetime, repeat: int
) -> list[Row]:
    from hostgate.app import create_app, kernel_of
    from hostgate.config import Config
    from hostgate.db.models.sessions import RemoteSession
    from hostgate.services.identity.identity import ClientInfo
    from hostgate_recsearch import plugin as recsearch
    from sqlalchemy import update

    # output indexing on, as it was while the sessions ran (off would purge the output)
    config = Config(
        data_dir=data,
        encryption_key=BENCH_KEY,
        load_entry_points=False,
        database_url=url,
        setting_defaults={"recordings.index_output": True},
    )
    app = create_app(config, plugins=[recsearch])
    kernel = kernel_of(app)
    rows: list[Row] = []
    async with app.test_app() as test_app:
        client = test_app.test_client()
        await kernel.accounts.create_user(
            username="bench", password="bench-password", role="admin", actor=None
        )
        await kernel.accounts.create_user(
            username="plain", password="bench-password", role="user", actor=None
        )
        headers = {}
        for name in ("bench", "plain"):
            user = await kernel.accounts.user_by_name(name)
            assert user is not None
            issued = await kernel.identity.issue_session(user, ClientInfo(ip_address="127.0.0.1"))
            headers[name] = {"Authorization": f"Bearer {issued.token}"}
        # "plain" owns the sessions of users[7]: the caller's own sessions only
        async with kernel.db.session() as session:
            plain = await kernel.accounts.user_by_name("plain")
            assert plain is not None
            await session.execute(
                update(RemoteSession)
                .where(RemoteSession.user_id == users[7])  # type: ignore[arg-type]
                .values(user_id=plain.id)
            )
            await session.commit()
        fmt = "%Y-%m-%dT%H:%M:%S.000Z"
        week_from = (newest - timedelta(days=37)).strftime(fmt)
        week = f"&from={week_from}&to={(newest - timedelta(days=30)).strftime(fmt)}"
        by_user = f"userId={users[3]}"
        by_connection = f"connectionId={connections[5]}"
        cases = [
            ("command, rare (iptables -F)", "bench", "q=iptables+-F&kind=command"),
            ("command, common (ls)", "bench", "q=ls&kind=command"),
            ("command, common + userId", "bench", f"q=systemctl+status&kind=command&{by_user}"),
            ("output, rare phrase (out of memory)", "bench", "q=out+of+memory&kind=output"),
            ("output, common word (error)", "bench", "q=error&kind=output"),
            ("output, common + connectionId", "bench", f"q=error&kind=output&{by_connection}"),
            ("output, common + one week", "bench", f"q=timeout&kind=output{week}"),
            ("both, phrase (connection refused)", "bench", "q=connection+refused"),
            ("both, page 20 of common", "bench", "q=nginx&page=20"),
            ("own sessions only, common", "plain", "q=error"),
        ]  # fmt: skip
        timings: dict[str, list[float]] = {name: [] for name, _, _ in cases}
        totals: dict[str, str] = {}
        for _ in range(repeat):  # alternating rounds: every case once per round
            for name, who, query in cases:
                began = time.perf_counter()
                response = await client.get(
                    f"/api/v1/sessions/search?{query}", headers=headers[who]
                )
                timings[name].append((time.perf_counter() - began) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(
                        f"{query}: {response.status_code} {await response.get_data()}"
                    )
                body = await response.get_json()
                totals[name] = f"{body['total']:,}{'+' if body['totalCapped'] else ''}"
        assert totals["output, common word (error)"] != "0", "the output was not indexed"
        for name, _, _ in cases:
            rows.append(Row(f"{name} p50 ({totals[name]} hits)", median(timings[name]), "ms"))
            rows.append(Row(f"{name} p95", percentile(timings[name], 95), "ms", target="< 200 ms"))
    return rows


def run(engine: str, url: str, data: Path, sessions: int, repeat: int) -> list[Row]:
    print(f"{engine}: filling")
    began = time.perf_counter()
    users, connections, newest = asyncio.run(fill(url, sessions))
    print(f"  filled in {time.perf_counter() - began:.0f} s, {database_size(url, data):,.0f} MiB")
    rows = asyncio.run(measure(url, data, users, connections, newest, repeat))
    return [Row(f"{engine}: {r.name}", r.value, r.unit, target=r.target) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--skip", default="", help="comma-separated: sqlite,postgresql")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    rows: list[Row] = []
    print(f"load average before: {os.getloadavg()}")
    if "sqlite" not in skip:
        data = Path(tempfile.mkdtemp(prefix="hg-bench-search-"))
        try:
            url = f"sqlite+aiosqlite:///{data / 'hostgate.db'}"
            rows += run("sqlite", url, data, args.sessions, args.repeat)
        finally:
            shutil.rmtree(data, ignore_errors=True)
    if "postgresql" not in skip:
        with postgres() as url:
            if url is not None:
                data = Path(tempfile.mkdtemp(prefix="hg-bench-search-pg-"))
                try:
                    rows += run("postgresql", url, data, args.sessions, args.repeat)
                finally:
                    shutil.rmtree(data, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    print_table(rows)


if __name__ == "__main__":
    main()
