"""The recsearch pack's tests: this pack and a real bash under a local PTY (localshell)."""

from __future__ import annotations

from typing import Any

import hostgate_recsearch.plugin as recsearch_plugin
import pytest

from tests.services.sessions import localshell
from testsupport import hypothesis_profile  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [localshell, recsearch_plugin]


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
