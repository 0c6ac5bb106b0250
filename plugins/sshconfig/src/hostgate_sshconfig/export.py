"""Which connections an ssh_config export holds, and in what order."""

from __future__ import annotations

from hostgate import Caller, ConnectionSummary, InvalidInput, KernelAPI, iso, utcnow, validate_host

from .parser import Door, ExportedHost, alias_for, render, render_through_door

DOOR = "ssh"
"""The name the SSH front door pack announces itself under (``kernel.front_door.doors``)."""


def door_address(kernel: KernelAPI, host: str, user: str) -> Door | None:
    """The front door on ``host`` (the gateway's name as the client reached it), if any."""
    port = kernel.front_door.doors.get(DOOR)
    if not port:
        return None
    host = host.strip("[]")
    try:
        validate_host(host)
    except InvalidInput:
        return None
    return Door(host=host, port=port, user=user)


async def export_text(
    kernel: KernelAPI, owner: Caller | str, username: str, link: str, door: Door | None
) -> tuple[str, int]:
    """The owner's SSH connections as ssh_config, and how many it holds.

    Without a door: each host as it is, jump hosts first so each ``ProxyJump`` names a
    ``Host`` above it. With one: every SSH connection the owner sees, each reached
    through the door (which follows the connection's own jump hosts itself).
    ``link`` is the gateway's page of a connection: ``link.format(id=...)``.
    """
    visible = {c.id: c for c in await kernel.connection_transfer.visible(owner)}
    header = [f"SSH connections of {username} on hostgate, {iso(utcnow())}."]
    taken: set[str] = set()
    if door is not None:
        ssh = [c for c in visible.values() if c.tunnels]
        hosts = [
            ExportedHost(
                alias=alias_for(c.name, taken),
                host=c.id,
                port=22,
                user="",
                jump_alias=None,
                tags=list(c.tags),
                link=link.format(id=c.id),
            )
            for c in ssh
        ]
        header.append("Each is reached through the gateway's SSH front door, which records it.")
        return render_through_door(hosts, header, door), len(hosts)
    order: list[ConnectionSummary] = []
    seen: set[str] = set()  # a loop of jump hosts stored by mistake ends here

    def add(connection_id: str) -> None:
        connection = visible[connection_id]
        if connection_id in seen or not connection.tunnels:
            return
        seen.add(connection_id)
        if connection.jump_host_id is not None and connection.jump_host_id in visible:
            add(connection.jump_host_id)  # jump hosts first
        order.append(connection)

    for connection_id in list(visible):
        add(connection_id)
    aliases = {c.id: alias_for(c.name, taken) for c in order}
    hosts = [
        ExportedHost(
            alias=aliases[c.id],
            host=c.host,
            port=c.port,
            user=c.username,
            jump_alias=aliases.get(c.jump_host_id or ""),
            tags=list(c.tags),
            link=link.format(id=c.id),
            jump_missing=bool(c.jump_host_id) and c.jump_host_id not in aliases,
        )
        for c in order
    ]
    header.append("The gateway records sessions it relays: open them there (the links below).")
    return render(hosts, header), len(hosts)
