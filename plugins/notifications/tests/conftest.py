"""Notification tests: the smtp and chat packs, real receivers, quick retry timings."""

from typing import Any

import hostgate_chat.plugin
import hostgate_notifications.plugin
import hostgate_smtp.plugin
import pytest
from hostgate.config import Config
from hostgate_notifications.service import service

from testsupport.receivers import (  # noqa: F401
    http_receiver,
    silent_receiver,
    smtp_receiver,
    smtp_receiver_factory,
)


@pytest.fixture
def plugins() -> list[object]:
    return [hostgate_smtp.plugin, hostgate_chat.plugin, hostgate_notifications.plugin]


@pytest.fixture
def config(config: Config, http_receiver: Any) -> Config:  # noqa: F811
    """Telegram's API base is the local HTTP receiver; retries come after 0.2 s."""
    return config.with_overrides(
        plugin_options={
            "chat": {"telegram_api_base": http_receiver.base},
            "notifications": {"retry_delays": [0.2, 0.2]},
        }
    )


@pytest.fixture
def notifications(kernel: Any) -> Any:
    """The pack's notification service."""
    return service(kernel)
