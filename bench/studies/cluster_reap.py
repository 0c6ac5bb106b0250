"""Several nodes: the shared live-session registry's cost, and ending a dead node's sessions.

.venv/bin/python bench/studies/cluster_reap.py [--sessions 200] [--live 400] [--rounds 3]

A real redis-server (Debian's) and one gateway kernel (in process, SQLite in a
temporary data directory) with ``HOSTGATE_REDIS_URL``. Printed (medians over the
rounds):

- one heartbeat round of a node while ``--live`` sessions of other (live) nodes
  are in the registry: heartbeat, write, read the others, reap (nothing dead);
  what each node pays every ``node_timeout / 6`` seconds;
- ending ``--sessions`` sessions of a dead node: their registry entries are
  taken, their rows marked ended with a ``connection.session_ended`` audit
  entry each, and their recordings (64 KiB of asciicast each, encrypted) sized
  from the files; per session too. This comes on top of the detection bound
  (the node timeout: a node is dead two thirds of it after its last heartbeat,
  and another node notices at its next beat).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import BENCH_KEY, Row, median, print_table  # noqa: E402

from testsupport.peers import launch_on_free_port, stop, which  # noqa: E402

CAST_LINE = b'[0.5, "o", "' + b"x" * 100 + b'"]\n'


def redis_server(directory: Path) -> tuple[object, str]:
    binary = which("redis-server", "/usr/bin", "/usr/sbin")
    if binary is None:
        raise SystemExit("redis-server is not installed")

    def command(port: int) -> list[str]:
        return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]

    process, port = launch_on_free_port("redis-server", command, directory / "redis.log")
    return process, f"redis://127.0.0.1:{port}/0"


async def measure(args: argparse.Namespace, redis_url: str, data: Path) -> list[Row]:
    from hostgate.app import create_app, kernel_of
    from hostgate.cluster.registry import RedisRegistry
    from hostgate.config import Config
    from hostgate.db.models.sessions import RemoteSession
    from hostgate.tasks import cancel_and_wait

    # a short node timeout: a node judges the others once it reached Redis that long
    config = Config(
        data_dir=data, encryption_key=BENCH_KEY, redis_url=redis_url, node_timeout_seconds=1.5
    )
    app = create_app(config)
    beats: list[float] = []
    ends: list[float] = []
    async with app.test_app():
        kernel = kernel_of(app)
        shared = kernel.live.shared
        assert shared is not None and kernel.cluster.redis is not None
        await cancel_and_wait(shared._task)  # only the beats measured here run
        shared._task = None
        await asyncio.sleep(shared.registry.dead_after * 1.2)
        client = kernel.cluster.redis
        others = RedisRegistry(client, "live-" + uuid.uuid4().hex, shared.registry.dead_after)
        registered = {
            f"live-{i}": {"id": f"live-{i}", "kind": "terminal", "user_id": "u"}
            for i in range(args.live)
        }

        async def others_alive() -> None:
            await others.heartbeat()
            await others.write(registered, [])

        taken: list[int] = []

        async def count(batch: list[dict[str, object]]) -> None:
            taken.append(len(batch))

        shared.on_reaped(count)
        for _ in range(args.rounds):
            await others_alive()
            started = time.perf_counter()
            await shared.beat()
            beats.append(time.perf_counter() - started)

            ghost = RedisRegistry(client, "dead-" + uuid.uuid4().hex, shared.registry.dead_after)
            entries = {}
            async with kernel.db.session() as db:
                for _ in range(args.sessions):
                    row = RemoteSession(
                        user_id="u",
                        username="bench",
                        connection_id="c",
                        connection_name="box",
                        protocol="ssh",
                    )
                    writer = await kernel.recordings.create(row, "cast")
                    assert writer is not None
                    writer.write(b'{"version": 2, "width": 80, "height": 24}\n')
                    for _ in range(64 * 1024 // len(CAST_LINE)):
                        writer.write(CAST_LINE)
                    writer.close()
                    db.add(row)
                    entries[row.id] = {"id": row.id, "kind": "terminal", "user_id": "u"}
                await db.commit()
            await others_alive()
            await ghost.write(entries, [])  # a node that never beat again: dead at once
            taken.clear()
            started = time.perf_counter()
            await shared.beat()
            ends.append(time.perf_counter() - started)
            assert sum(taken) == args.sessions, taken
            async with kernel.db.session() as db:
                for session_id in entries:
                    row = await db.get(RemoteSession, session_id)
                    assert row is not None and row.ended_at is not None
                    assert row.recording_state == "complete", row.recording_state
    beat_ms = median(beats) * 1000
    end_ms = median(ends) * 1000
    return [
        Row(f"heartbeat round, {args.live} sessions registered", beat_ms, "ms"),
        Row(f"end a dead node's {args.sessions} sessions", end_ms, "ms"),
        Row("  per session", end_ms / args.sessions, "ms"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--live", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="hg-bench-reap-"))
    process, url = redis_server(directory)
    try:
        data = directory / "data"
        data.mkdir()
        rows = asyncio.run(measure(args, url, data))
    finally:
        stop(process)  # type: ignore[arg-type]
        shutil.rmtree(directory, ignore_errors=True)
    print_table(rows)


if __name__ == "__main__":
    main()
