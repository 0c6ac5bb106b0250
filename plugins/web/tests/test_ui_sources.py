"""The browser app's own checks, run by the Python suite so `.ci/run` runs them too.

Vitest (the app's logic), svelte-check (TypeScript and Svelte types against the
generated API schema) and the schema's drift from the gateway's OpenAPI document.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hostgate_web.assets import UI, ensure_node_modules, npm

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def node_modules() -> None:
    ensure_node_modules()


def test_vitest_unit_tests_pass(node_modules: None) -> None:
    result = npm(["run", "test", "--", "--reporter=dot"], capture=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_typescript_and_svelte_types_check(node_modules: None) -> None:
    result = npm(["run", "check"], capture=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_the_generated_api_schema_matches_the_gateway(node_modules: None) -> None:
    """ui/src/api/schema.d.ts is what scripts/web_api_types.py makes from the app now."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "web_api_types.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_api_document_has_unique_operation_ids() -> None:
    """Generated clients key operations by operationId: two routes must never share one."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from web_api_types import openapi_document

    seen: dict[str, str] = {}
    for path, operations in openapi_document()["paths"].items():
        for method, operation in operations.items():
            key = operation["operationId"]
            assert key not in seen, f"{method.upper()} {path} and {seen[key]} share {key}"
            seen[key] = f"{method.upper()} {path}"


def test_ui_sources_exist() -> None:
    assert (UI / "package-lock.json").is_file()
