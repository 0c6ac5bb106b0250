"""Docs are part of the product: hooks, settings, CLI and API must be documented."""

import subprocess
import sys
from pathlib import Path

from hostgate import hookspecs

ROOT = Path(__file__).resolve().parents[2]


def hook_names():
    return [name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "hostgate_spec")]


def test_every_hook_has_a_documented_section():
    guide = (ROOT / "docs" / "plugins.md").read_text()
    names = hook_names()
    assert len(names) == 10
    for name in names:
        assert f"### `{name}(" in guide, f"hook {name} is not documented in docs/plugins.md"


def test_every_hook_has_a_docstring_with_an_example():
    for name in hook_names():
        doc = getattr(hookspecs, name).__doc__ or ""
        assert "Example::" in doc, name


def test_generated_reference_is_current():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_every_setting_and_command_is_in_the_reference():
    from hostgate.builtin import KERNEL_SETTINGS
    from hostgate.cli import build_parser

    settings = (ROOT / "docs" / "reference" / "settings.md").read_text()
    for spec in KERNEL_SETTINGS:
        assert f"`{spec.key}`" in settings
    cli = (ROOT / "docs" / "reference" / "cli.md").read_text()
    parser = build_parser()
    for action in parser._subparsers._group_actions:
        for name in action.choices:
            assert f"## `hostgate {name}`" in cli
