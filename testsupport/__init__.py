"""Test support shared by kernel and pack tests: app fixtures and real-peer launchers."""

# The suite's peers listen on 127.0.0.1, which the gateway refuses by default
# (network.protected). Every test gateway, in process (``fixtures.config``, which
# is the test kit's ``hostgate_config``) or served (``gateway.GatewayProcess``),
# starts with these setting defaults, defined once by the test kit: they let the
# suite reach loopback (and keep the update check off the internet). Tests of the
# shipped defaults build their app with ``config.with_overrides(setting_defaults={})``.
from hostgate.testing import TEST_SETTING_DEFAULTS

__all__ = ["TEST_SETTING_DEFAULTS"]
