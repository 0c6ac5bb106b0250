from typing import Any

import pytest

from tests.services.sessions import localshell
from tests.services.sessions.live import live_server  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [localshell]


@pytest.fixture
async def shell_connection(make_user: Any, make_connection: Any, tmp_path: Any) -> Any:
    """A user and a localshell connection of theirs."""
    user = await make_user("alice")
    home = tmp_path / "home"
    home.mkdir()
    connection = await make_connection(
        user, "localshell", "127.0.0.1", 1, name="local shell", extra={"home": str(home)}
    )
    return user, connection
