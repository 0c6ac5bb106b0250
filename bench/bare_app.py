"""The baseline: a bare Quart endpoint served by the same hypercorn set-up.

Same event loop as ``hostgate serve`` (``HOSTGATE_EVENT_LOOP``, uvloop when
installed), so the ratio measures the gateway's own work.

``bare_app.py PORT`` runs it as a plain Quart program would (Python's default
garbage collector settings); ``bare_app.py PORT --gateway-gc`` also applies what
``hostgate serve`` does to the collector before serving (start-up objects frozen,
higher thresholds): the same process set-up as the gateway's, so a ratio against
it is the requests' work alone.
"""

from __future__ import annotations

import asyncio
import os
import sys

from hostgate.commands.serve import loop_factory, tune_garbage_collector
from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart

app = Quart("bare")


@app.get("/ping")
async def ping() -> dict[str, bool]:
    return {"ok": True}


async def main(config: Config, gateway_gc: bool) -> None:
    if gateway_gc:
        tune_garbage_collector()
    await serve(app, config)  # type: ignore[arg-type]


if __name__ == "__main__":
    config = Config()
    config.bind = [f"127.0.0.1:{sys.argv[1]}"]
    config.accesslog = None
    with asyncio.Runner(
        loop_factory=loop_factory(os.environ.get("HOSTGATE_EVENT_LOOP", "auto"))
    ) as runner:
        options = sys.argv[2:]
        runner.run(main(config, "--gateway-gc" in options))
