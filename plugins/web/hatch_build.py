"""Wheel build hook: compile the browser app (ui/) when its built assets are missing or stale."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

HERE = Path(__file__).resolve().parent


class WebAssetsHook(BuildHookInterface):  # type: ignore[type-arg]
    """Runs ``npm ci`` + ``npm run build`` through ``hostgate_web.assets`` before packing."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Build for a real wheel; an editable install serves ui/'s build from src/."""
        if version == "editable" or not (HERE / "ui" / "package.json").exists():
            return
        spec = importlib.util.spec_from_file_location(
            "hostgate_web_assets", HERE / "src" / "hostgate_web" / "assets.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.ensure_built(log=lambda line: self.app.display_info(line))
