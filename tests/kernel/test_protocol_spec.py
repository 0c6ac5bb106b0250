"""A ``ProtocolSpec`` refuses what the file routes cannot serve at load, not per request."""

from __future__ import annotations

import pytest
from hostgate import STAT_FIELDS, ProtocolSpec
from hostgate.api.files import ATTRIBUTE_VALUES


def test_every_stat_field_has_a_value_in_the_api() -> None:
    assert set(STAT_FIELDS) == set(ATTRIBUTE_VALUES)


def test_unknown_stat_fields_and_attribute_sets_are_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown stat_fields \['modified'\] \(valid: size, "):
        ProtocolSpec(name="webdav", default_port=443, stat_fields=("size", "modified"))
    with pytest.raises(ValueError, match="file_attributes must be 'basic' or 'full'"):
        ProtocolSpec(name="webdav", default_port=443, file_attributes="rich")
    spec = ProtocolSpec(name="webdav", default_port=443, stat_fields=STAT_FIELDS)
    assert spec.stat_fields == STAT_FIELDS
