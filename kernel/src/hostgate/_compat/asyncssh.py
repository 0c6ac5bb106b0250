"""The agent and X11 forwarding requests asyncssh refuses, seen before it refuses them.

asyncssh's server answers a session channel's ``auth-agent-req@openssh.com`` and
``x11-req`` itself (refused while its ``agent_forwarding`` / ``x11_forwarding``
options are off) and offers no public hook for either, so the SSH door could neither
audit those refusals nor tell the user why nothing was forwarded.
``watch_forwarding_requests`` wraps those two request handlers of one channel so that
each request is reported first; asyncssh then answers it as before, unless the report
says ``False``: then the request is refused whatever asyncssh's options (so a server
started with ``agent_forwarding`` on can still refuse it per connection or setting).

Private names used: asyncssh's
``SSHServerChannel._process_auth_agent_req_at_openssh_dot_com_request`` and
``SSHServerChannel._process_x11_req_request``. Guarded by ``RANGES``; outside them
nothing is reported (the requests are still refused: the stock behaviour).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import VersionRange, applies

RANGES = (VersionRange("asyncssh", "2.23.1", "2.24"),)
"""The versions this was written and tested against."""

AGENT_FORWARDING = "agent forwarding"
X11_FORWARDING = "X11 forwarding"
_HANDLERS = {
    "_process_auth_agent_req_at_openssh_dot_com_request": AGENT_FORWARDING,
    "_process_x11_req_request": X11_FORWARDING,
}


def watch_forwarding_requests(channel: Any, report: Callable[[str], bool | None]) -> bool:
    """Report ``channel``'s agent and X11 forwarding requests; False when nothing is watched.

    ``channel`` is an asyncssh ``SSHServerChannel``; ``report`` gets ``AGENT_FORWARDING``
    or ``X11_FORWARDING`` before asyncssh answers the request as it does; when ``report``
    returns ``False`` the request is refused instead. Nothing is watched outside
    ``RANGES``.
    """
    if not applies("asyncssh.forwarding_requests", *RANGES):
        return False
    handlers: dict[str, Callable[[Any], Any]] = {}
    for name in _HANDLERS:
        handler = getattr(channel, name, None)
        if not callable(handler):
            return False  # not asyncssh's server channel: nothing to watch
        handlers[name] = handler
    for name, what in _HANDLERS.items():
        setattr(channel, name, _reporting(handlers[name], what, report))
    return True


def _reporting(
    handler: Callable[[Any], Any], what: str, report: Callable[[str], bool | None]
) -> Callable[[Any], Any]:
    def reported(packet: Any) -> Any:
        if report(what) is False:
            return False  # asyncssh answers the request with a failure
        return handler(packet)

    return reported
