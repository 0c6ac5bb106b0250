"""pluggy markers named after the host."""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("hostgate")
hookimpl = pluggy.HookimplMarker("hostgate")
