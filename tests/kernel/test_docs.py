"""Docs are part of the product: hooks, settings, CLI and API must be documented."""

import inspect
import re
import subprocess
import sys
from pathlib import Path

from hostgate import hookspecs

ROOT = Path(__file__).resolve().parents[2]


def hook_names():
    return [name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "hostgate_spec")]


def hook_signature(name):
    """``name(arg: Type, ...) -> Return`` exactly as hookspecs.py declares it."""
    signature = inspect.signature(getattr(hookspecs, name))
    params = ", ".join(f"{p.name}: {p.annotation}" for p in signature.parameters.values())
    return f"{name}({params}) -> {signature.return_annotation}"


def test_every_hook_has_a_documented_section_headed_by_its_signature():
    guide = (ROOT / "docs" / "plugins.md").read_text()
    documented = re.findall(r"^### `(\w+)\((.*)`$", guide, flags=re.MULTILINE)
    names = hook_names()
    assert len(names) == 18
    for name in names:
        heading = f"### `{hook_signature(name)}`"
        assert heading in guide, f"docs/plugins.md lacks the section {heading}"
    assert {name for name, _ in documented} >= set(names)


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
    from hostgate.cli import build_parser
    from hostgate.default_settings import KERNEL_SETTINGS

    settings = (ROOT / "docs" / "reference" / "settings.md").read_text()
    for spec in KERNEL_SETTINGS:
        assert f"`{spec.key}`" in settings
    cli = (ROOT / "docs" / "reference" / "cli.md").read_text()
    parser = build_parser()
    for action in parser._subparsers._group_actions:
        for name in action.choices:
            assert f"## `hostgate {name}`" in cli


def test_the_architecture_page_names_every_layer_the_contract_declares():
    import tomllib

    page = (ROOT / "docs" / "architecture.md").read_text()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    for layer in layers:
        for module in re.split(r"[|:]", layer):
            name = module.strip().removeprefix("__main__")
            if name:
                assert name in page, f"docs/architecture.md does not mention the layer {name}"


def test_every_close_reason_is_documented_and_explained_by_the_app():
    """A reason code the kernel sends is in the docs' table and in the app's mapping."""
    from hostgate.closereasons import CloseReason

    table = (ROOT / "docs" / "terminals.md").read_text()
    documented = set(re.findall(r"^\| `(\w+)` \| [\d /]+ \|", table, flags=re.MULTILINE))
    app = (ROOT / "plugins/web/ui/src/lib/closereason.ts").read_text()
    body = app[app.index("const REASONS") : app.index("const RULES")]
    mapped = set(re.findall(r"^  (\w+): \{", body, flags=re.MULTILINE))
    codes = {reason.value for reason in CloseReason}
    assert len(codes) == len(CloseReason) > 20
    assert documented == codes, documented ^ codes
    assert mapped == codes, mapped ^ codes
