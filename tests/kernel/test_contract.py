"""The kernel contract: KernelAPI is what the Kernel offers, typed, documented, and used."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import hostgate
from hostgate import contract
from hostgate.app import create_app, kernel_of

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = [
    value
    for value in vars(contract).values()
    if isinstance(value, type) and getattr(value, "_is_protocol", False)
]


def members(protocol):
    return [name for name in vars(protocol) if not name.startswith("_")]


def test_the_kernel_has_every_member_of_the_contract(config):
    kernel = kernel_of(create_app(config))
    for name in members(contract.KernelAPI):
        service = getattr(kernel, name)
        kind = vars(contract.KernelAPI)[name].fget.__annotations__["return"]
        protocol = getattr(contract, kind, None)
        for method in members(protocol) if isinstance(protocol, type) else ():
            assert hasattr(service, method), f"kernel.{name}.{method}"


def test_every_attribute_of_the_kernel_object_is_documented():
    guide = (ROOT / "docs" / "plugins.md").read_text()
    for name in members(contract.KernelAPI):
        assert f"### `kernel.{name}: " in guide, name
    for protocol in PROTOCOLS:
        for name in members(protocol):
            assert re.search(rf"`(async )?{name}[(:]", guide), f"{protocol.__name__}.{name}"


def test_every_exported_name_has_a_reference_entry():
    guide = (ROOT / "docs" / "plugins.md").read_text()
    headings = re.findall(r"^#### `(?:class |async |@)?(\w+)", guide, flags=re.MULTILINE)
    assert sorted(set(hostgate.__all__)) == sorted(set(headings))


def test_no_kernel_is_typed_any():
    sources = [*ROOT.glob("kernel/src/hostgate/**/*.py"), *ROOT.glob("plugins/*/src/**/*.py")]
    pattern = re.compile(r"\bkernel\w*\s*:\s*\"?Any\b|kernel\w*\s*=\s*cast\(Any")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not offenders


def test_mypy_is_strict_for_every_pack():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = next(o for o in config["overrides"] if o.get("disallow_any_generics"))
    packs = {path.name for path in ROOT.glob("plugins/*/src/hostgate_*")}
    assert {module.removesuffix(".*") for module in strict["module"]} == packs
    assert strict["disallow_untyped_calls"] and strict["warn_return_any"]


def test_import_layers_hold():
    """The import-linter contracts in pyproject.toml (also run by scripts/dev.py lint)."""
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


def test_every_kernel_module_has_a_layer_and_is_closed_to_packs():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts = config["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    placed = {m.strip() for layer in layers for m in re.split(r"[|:]", layer)}
    # protocol and login packs, and feature packs (which may keep tables): two contracts
    closed_lists = [c["forbidden_modules"] for c in contracts if "public names" in c["name"]]
    assert len(closed_lists) == 2
    package = ROOT / "kernel" / "src" / "hostgate"
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    assert modules <= placed, sorted(modules - placed)
    for closed in closed_lists:
        assert {f"hostgate.{m}" for m in modules - {"__main__"}} <= set(closed)
    bound = [c["source_modules"] for c in contracts if "public names" in c["name"]]
    packs = {path.name for path in ROOT.glob("plugins/*/src/hostgate_*")}
    assert sorted(m for sources in bound for m in sources) == sorted(packs)


def test_the_public_package_re_exports_no_service_internals():
    """``hostgate/__init__.py`` (what packs may use) imports nothing from ``services/``."""
    source = (ROOT / "kernel" / "src" / "hostgate" / "__init__.py").read_text()
    imported = re.findall(r"^from \.([\w.]+) import", source, flags=re.MULTILINE)
    assert imported  # the pattern still reads the file's imports
    assert [module for module in imported if module.split(".")[0] == "services"] == []
