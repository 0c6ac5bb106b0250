"""The baseline: a bare Quart endpoint served by the same hypercorn set-up.

Same event loop as ``hostgate serve`` (``HOSTGATE_EVENT_LOOP``, uvloop when
installed), so the ratio measures the gateway's own work.
"""

from __future__ import annotations

import asyncio
import os
import sys

from hostgate.commands.serve import loop_factory
from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart

app = Quart("bare")


@app.get("/ping")
async def ping() -> dict[str, bool]:
    return {"ok": True}


if __name__ == "__main__":
    config = Config()
    config.bind = [f"127.0.0.1:{sys.argv[1]}"]
    config.accesslog = None
    with asyncio.Runner(
        loop_factory=loop_factory(os.environ.get("HOSTGATE_EVENT_LOOP", "auto"))
    ) as runner:
        runner.run(serve(app, config))  # type: ignore[arg-type]
