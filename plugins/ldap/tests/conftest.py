from __future__ import annotations

from typing import Any

import pytest
from hostgate_ldap import plugin

from testsupport.slapd import SlapdServer, slapd_server  # noqa: F401


@pytest.fixture
def plugins() -> list[object]:
    return [plugin]


@pytest.fixture
def ldap_config(slapd_server: SlapdServer) -> dict[str, Any]:  # noqa: F811
    """Settings pointing at the test directory over plain LDAP."""
    return {
        "auth.ldap_enabled": True,
        "auth.ldap_url": slapd_server.url,
        "auth.ldap_bind_dn": slapd_server.bind_dn,
        "auth.ldap_bind_password": slapd_server.bind_password,
        "auth.ldap_search_base": slapd_server.suffix,
        "auth.ldap_username_attr": "uid",
    }


@pytest.fixture
async def ldap_on(kernel: Any, ldap_config: dict[str, Any]) -> dict[str, Any]:
    await kernel.settings.update(ldap_config)
    return ldap_config
