#!/usr/bin/env python3
"""Generate the browser app's typed API client schema from the gateway's OpenAPI document.

    .venv/bin/python scripts/web_api_types.py          # writes plugins/web/ui/src/api/schema.d.ts
    .venv/bin/python scripts/web_api_types.py --check  # exit 1 when the committed file drifted

The document comes from the app itself (every installed pack loaded, as in
production), so no server needs to run; openapi-typescript turns it into types.
The generated file is committed so the app builds without a running gateway;
tests/…/test_api_types.py fails when it no longer matches the app.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
UI = ROOT / "plugins" / "web" / "ui"
SCHEMA = UI / "src" / "api" / "schema.d.ts"


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of an app with every installed pack (a throwaway data dir)."""
    from hostgate.app import create_app
    from hostgate.config import Config

    with tempfile.TemporaryDirectory() as data:
        app = create_app(Config(data_dir=Path(data), encryption_key="0f" * 32))

        async def fetch() -> dict[str, Any]:
            response = await app.test_client().get("/api/v1/openapi.json")
            assert response.status_code == 200, response.status_code
            document: dict[str, Any] = await response.get_json()
            return document

        document = asyncio.run(fetch())
    document.get("info", {})["version"] = "0"  # the types must not change with the version
    return document


def generate(target: Path) -> None:
    """Write the TypeScript schema for the current app to ``target``."""
    sys.path.insert(0, str(ROOT / "plugins" / "web" / "src"))
    from hostgate_web.assets import ensure_node_modules, npm

    ensure_node_modules()
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "openapi.json"
        source.write_text(json.dumps(openapi_document(), indent=1, sort_keys=True))
        result = npm(
            ["exec", "--", "openapi-typescript", str(source), "-o", str(target)], capture=True
        )
        if result.returncode != 0:
            raise SystemExit(f"openapi-typescript failed:\n{result.stdout}\n{result.stderr}")


def main(argv: list[str]) -> int:
    if "--check" not in argv:
        generate(SCHEMA)
        print(f"wrote {SCHEMA.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as work:
        fresh = Path(work) / "schema.d.ts"
        generate(fresh)
        if fresh.read_text() != SCHEMA.read_text():
            print(f"{SCHEMA.relative_to(ROOT)} is out of date: run scripts/web_api_types.py")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
