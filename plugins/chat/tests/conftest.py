from pathlib import Path
from typing import Any

import hostgate_notifications.plugin
import pytest
from hostgate.config import Config
from hostgate_chat import plugin

from testsupport.receivers import http_receiver, https_receiver_factory  # noqa: F401
from testsupport.tlsca import IssuedCert, make_server_cert


@pytest.fixture(scope="session")
def chat_cert(tmp_path_factory: pytest.TempPathFactory) -> IssuedCert:
    """A certificate for 127.0.0.1 from a CA nobody trusts."""
    return make_server_cert(Path(tmp_path_factory.mktemp("chat-tls")))


@pytest.fixture
def hostgate_packs() -> list[object]:
    """The test kit's app loads this pack."""
    return [plugin, hostgate_notifications.plugin]


@pytest.fixture
def hostgate_config(hostgate_config: Config, http_receiver: Any) -> Config:  # noqa: F811
    """Telegram's API base is the local receiver (which answers as the Bot API)."""
    return hostgate_config.with_overrides(
        plugin_options={"chat": {"telegram_api_base": http_receiver.base}}
    )
