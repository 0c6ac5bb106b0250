"""Every table.

Each module of this package holds one area; all are imported here so
``SQLModel.metadata`` is complete for migrations and backups.
"""

from __future__ import annotations

import importlib
import pkgutil

from sqlmodel import SQLModel

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

metadata = SQLModel.metadata
