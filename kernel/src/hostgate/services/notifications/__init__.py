"""Notifications: channels' stored config, rules, matching, the delivery queue and log.

Channel packs implement ``send``; everything else lives here. The kernel's
built-in plugin hands every audit event to ``Notifications.on_event``.
"""

from __future__ import annotations

from .service import Notifications

__all__ = ["Notifications"]
