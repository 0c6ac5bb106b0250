"""Default plugin: the kernel's six permission groups."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .markers import hookimpl
from .permissions import KERNEL_PERMISSIONS


@hookimpl
def register_permissions() -> Mapping[str, Sequence[str]]:
    """The kernel's six permission groups."""
    return KERNEL_PERMISSIONS
