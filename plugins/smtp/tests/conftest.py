from pathlib import Path
from typing import Any

import hostgate_notifications.plugin
import pytest
from hostgate.config import Config
from hostgate_smtp import plugin

from testsupport.receivers import smtp_receiver_factory  # noqa: F401
from testsupport.tlsca import IssuedCert, make_server_cert


@pytest.fixture(scope="session")
def smtp_cert(tmp_path_factory: pytest.TempPathFactory) -> IssuedCert:
    """A test CA and a certificate for 127.0.0.1 / localhost."""
    return make_server_cert(Path(tmp_path_factory.mktemp("smtp-tls")))


@pytest.fixture
def hostgate_packs() -> list[object]:
    """The test kit's app loads this pack."""
    return [plugin, hostgate_notifications.plugin]


@pytest.fixture
def hostgate_config(hostgate_config: Config, smtp_cert: IssuedCert) -> Config:
    """The pack trusts the test CA (``[plugins.smtp] ca_file``)."""
    return hostgate_config.with_overrides(
        plugin_options={"smtp": {"ca_file": str(smtp_cert.ca_path)}}
    )


@pytest.fixture
def tls_context(smtp_cert: IssuedCert) -> Any:
    from testsupport.receivers import server_tls_context

    return server_tls_context(smtp_cert.cert_path, smtp_cert.key_path)
