"""The baseline: a bare Quart endpoint served by the same hypercorn set-up."""

from __future__ import annotations

import asyncio
import sys

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
    asyncio.run(serve(app, config))  # type: ignore[arg-type]
