import pytest
from hostgate_web import plugin as web_plugin


@pytest.fixture
def plugins() -> list[object]:
    return [web_plugin]
