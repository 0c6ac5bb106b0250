"""``python -m hostgate`` with module attributes replaced first: a bench variant.

``HOSTGATE_BENCH_PATCHES`` holds a JSON object ``{"module:NAME": value}``; each
named module is imported and its attribute set before the server starts, so
one run can compare a tunable (a block size, a read-ahead depth) on and off
against the same peers. Bench use only: the product reads none of this.
"""

from __future__ import annotations

import importlib
import json
import os
import sys


def apply(patches: dict[str, object]) -> None:
    for key, value in patches.items():
        module_name, _, name = key.partition(":")
        module = importlib.import_module(module_name)
        if not hasattr(module, name):
            raise SystemExit(f"bench patch: {module_name} has no attribute {name}")
        setattr(module, name, value)


def main() -> None:
    apply(json.loads(os.environ.get("HOSTGATE_BENCH_PATCHES", "{}")))
    from hostgate.cli import main as hostgate_main

    sys.argv[0] = "hostgate"
    raise SystemExit(hostgate_main())


if __name__ == "__main__":
    main()
