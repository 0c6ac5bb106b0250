"""Rendering events into the one message every channel sends (subject + plain text)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hostgate import iso

DIGEST_LIST_LIMIT = 200
DETAILS_LIMIT = 2000


def _details_text(details: Mapping[str, Any]) -> str:
    if not details:
        return ""
    text = json.dumps(details, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= DETAILS_LIMIT else text[: DETAILS_LIMIT - 1] + "…"


def render_event(app_name: str, rule_name: str, event: Mapping[str, Any]) -> tuple[str, str]:
    """``(subject, text)`` for one event (``event`` is the spec's audit entry shape)."""
    event_type = str(event.get("eventType", ""))
    subject = f"[{app_name}] {rule_name} — {event_type}"
    who = str(event.get("username") or event.get("userId") or "system")
    lines = [
        f"Rule:   {rule_name}",
        f"Event:  {event_type}",
        f"User:   {who}",
        f"IP:     {event.get('ipAddress') or '-'}",
        f"Target: {event.get('target') or '-'}",
        f"Time:   {event.get('timestamp', '')}",
    ]
    details = _details_text(event.get("details") or {})
    if details:
        lines.append(f"Details: {details}")
    return subject, "\n".join(lines)


def _event_line(event: Mapping[str, Any]) -> str:
    who = event.get("username") or event.get("userId") or "system"
    parts = [str(event.get("timestamp", "")), str(event.get("eventType", "")), f"user={who}"]
    if event.get("ipAddress"):
        parts.append(f"ip={event['ipAddress']}")
    if event.get("target"):
        parts.append(f"target={event['target']}")
    return "  ".join(parts)


def render_digest(
    app_name: str,
    rule_name: str,
    cadence: str,
    period_start: datetime,
    period_end: datetime,
    events: Sequence[Mapping[str, Any]],
) -> tuple[str, str]:
    """``(subject, text)`` for an hourly or daily digest of several events."""
    count = len(events)
    noun = "event" if count == 1 else "events"
    subject = f"[{app_name}] {rule_name} — {count} {noun} ({cadence} digest)"
    lines = [
        f"Rule:   {rule_name}",
        f"Period: {iso(period_start)} – {iso(period_end)}",
        f"Events: {count}",
        "",
    ]
    lines.extend(_event_line(e) for e in events[:DIGEST_LIST_LIMIT])
    if count > DIGEST_LIST_LIMIT:
        lines.append(f"… and {count - DIGEST_LIST_LIMIT} more")
    return subject, "\n".join(lines)


def channel_test_event(username: str, ip_address: str, timestamp: datetime) -> dict[str, Any]:
    """The event a channel test sends (``test.notification``)."""
    return {
        "id": "test",
        "userId": "",
        "username": username,
        "displayName": "",
        "eventType": "test.notification",
        "target": "test",
        "details": {},
        "ipAddress": ip_address,
        "timestamp": iso(timestamp),
    }
