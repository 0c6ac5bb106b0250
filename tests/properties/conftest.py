"""The property tests run under the suite's Hypothesis profile (testsupport)."""

from testsupport import hypothesis_profile  # noqa: F401
