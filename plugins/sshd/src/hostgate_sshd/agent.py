"""Agent forwarding through the door (``ssh -A``), where an admin allows it.

Off by default (``sshd.agent_forwarding``): the client's request is refused, the user
is told on their terminal and ``sshd.session_refused`` says so. When allowed, the
door accepts the request (asyncssh makes a UNIX socket for the client's agent) and a
shell or command session offers that agent to the server's session
(``kernel.front_door.open_terminal(agent_path=...)``); the gateway never signs in to
the server with it. Each forwarded session writes ``sshd.agent_forwarded``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .plugin import AGENT_SETTING

if TYPE_CHECKING:
    from hostgate import KernelAPI

AGENT_FORWARDING = "agent forwarding"
"""What ``watch_forwarding_requests`` reports for an ``auth-agent-req@openssh.com``."""


def agent_allowed(kernel: KernelAPI) -> bool:
    """True when the admin allows agent forwarding through the door."""
    return kernel.settings.get(AGENT_SETTING) is True


def agent_path(kernel: KernelAPI, channel: Any) -> str | None:
    """The client's forwarded agent's socket on this channel, if asked for and allowed.

    Checked again here: without the request watch (``watch_forwarding_requests``
    outside its asyncssh versions) asyncssh itself would have accepted the request.
    """
    if not agent_allowed(kernel):
        return None
    path = channel.get_agent_path()
    return str(path) if path else None


async def audit_forwarded(
    kernel: KernelAPI, actor: Any, target: str, details: dict[str, Any]
) -> None:
    """``sshd.agent_forwarded``: a session was offered the client's agent."""
    await kernel.audit.record(
        "sshd.agent_forwarded", actor=actor, target=target[:200], details=details
    )
