"""The access pack's hooks: its routes, its sweeper, and the grant the kernel asks for."""

from __future__ import annotations

from hostgate import KernelAPI, hookimpl
from quart import Blueprint

from .routes import STATE_KEY, blueprint
from .service import AccessRequests


def service(kernel: KernelAPI) -> AccessRequests:
    """The pack's service of a started kernel."""
    found: AccessRequests = kernel.state[STATE_KEY]
    return found


@hookimpl
def register_blueprints() -> list[Blueprint]:
    """``/api/v1/access-requests`` and the decisions on them."""
    return [blueprint]


@hookimpl
async def startup(kernel: KernelAPI) -> None:
    """Keep the service in ``kernel.state``; expire accesses that ran out while serving."""
    requests = AccessRequests(kernel)
    kernel.state[STATE_KEY] = requests
    if kernel.serving:
        requests.start()


@hookimpl
async def shutdown(kernel: KernelAPI) -> None:
    """Stop the sweeper."""
    requests = kernel.state.get(STATE_KEY)
    if isinstance(requests, AccessRequests):
        await requests.stop()


@hookimpl
async def grant_connection_access(user_id: str, connection_id: str, kernel: KernelAPI) -> bool:
    """Yes while the user holds an approved access request to the connection that runs."""
    requests = kernel.state.get(STATE_KEY)
    if not isinstance(requests, AccessRequests):
        return False
    return await requests.granted(user_id, connection_id)
