"""Hypothesis settings for the property tests: modest example counts, no deadline.

``HOSTGATE_PROPERTY_EXAMPLES`` raises the count for a long run, e.g.
``HOSTGATE_PROPERTY_EXAMPLES=2000 pytest tests/properties``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "hostgate",
    max_examples=int(os.environ.get("HOSTGATE_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=os.environ.get("CI", "").lower() in {"1", "true", "yes"},
)
settings.load_profile("hostgate")
