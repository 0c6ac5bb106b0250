"""``hostgate new-pack NAME``: a new pack from the starter template, tests included."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

TEMPLATE = Path(__file__).resolve().parent.parent / "pack_template"
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def register(subparsers: Any) -> None:
    """Add ``new-pack``."""
    parser = subparsers.add_parser(
        "new-pack", help="create a new plugin pack from the starter template"
    )
    parser.add_argument("name", help="entry-point name: lowercase letters, digits, underscores")
    parser.add_argument(
        "--directory",
        default=".",
        help="where to create hostgate-NAME/ (default: the current directory)",
    )
    parser.set_defaults(handler=run)


def render(name: str, target: Path) -> list[Path]:
    """Copy the template to ``target`` with ``NAME``/``{{name}}`` filled in; the files written."""
    values = {"{{name}}": name, "{{dist}}": name.replace("_", "-")}
    written = []
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        relative = source.relative_to(TEMPLATE).with_suffix("")
        path = target / Path(*(part.replace("NAME", name) for part in relative.parts))
        text = source.read_text()
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    """Create ``hostgate-NAME/`` under ``--directory``; refuse a bad name or an existing path."""
    name = args.name
    if not NAME.fullmatch(name):
        print(
            f"hostgate: {name!r} is not a pack name: use lowercase letters, digits and "
            "underscores, starting with a letter (at most 40 characters)",
            file=sys.stderr,
        )
        return 2
    target = Path(args.directory) / f"hostgate-{name.replace('_', '-')}"
    if target.exists():
        print(f"hostgate: {target} already exists", file=sys.stderr)
        return 1
    files = render(name, target)
    print(f"created {target} ({len(files)} files)")
    print(f"next: cd {target} && pip install -e '.[test]' && pytest")
    return 0
