"""Settings validation: accepted values round-trip, rejected values change nothing."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hostgate import SECRET_MASK
from hostgate.default_settings import KERNEL_SETTINGS
from hostgate.descriptors import SettingSpec
from hostgate.errors import InvalidInput
from hostgate.services.identity.onboarding import role_names
from hostgate.services.settings import coerce
from hypothesis import given
from hypothesis import strategies as st

EXTRA_SPECS = (
    SettingSpec("test.nullable_text", str, None, nullable=True, max_length=10),
    SettingSpec("test.secret", str, "", secret=True, max_length=50),
    SettingSpec("test.choice", int, 1, choices=(1, 2, 3)),
)
WRITABLE = [spec for spec in KERNEL_SETTINGS if not spec.readonly]
MFA_ROLES = "security.require_mfa_roles"
SPECS = WRITABLE + list(EXTRA_SPECS)
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def plausible(spec: SettingSpec) -> st.SearchStrategy[Any]:
    """Values near the spec's own bounds and choices, mixed with anything JSON."""
    near: list[st.SearchStrategy[Any]] = [JSON_VALUES]
    if spec.choices:
        near.append(st.sampled_from(spec.choices))
    if spec.type in (int, float):
        low = -1e6 if spec.minimum is None else spec.minimum
        high = 1e9 if spec.maximum is None else spec.maximum
        near.append(st.integers(math.floor(low) - 2, math.ceil(high) + 2))
        near.append(st.floats(low - 1, high + 1))
    if spec.type is str:
        near.append(st.text(max_size=spec.max_length + 2))
        near.append(st.sampled_from(["loopback", "10.0.0.0/8", "*.example.com", "bad rule!"]))
    return st.one_of(near)


def valued_spec() -> st.SearchStrategy[tuple[SettingSpec, Any]]:
    return st.sampled_from(SPECS).flatmap(lambda spec: st.tuples(st.just(spec), plausible(spec)))


def _accepts(spec: SettingSpec, value: Any) -> tuple[bool, Any]:
    try:
        return True, coerce(spec, value)
    except InvalidInput:
        return False, None


@given(valued_spec())
def test_accepted_values_are_typed_bounded_and_stable(case: tuple[SettingSpec, Any]) -> None:
    spec, value = case
    accepted, clean = _accepts(spec, value)
    if not accepted:
        return
    if clean is None:
        assert spec.nullable
        return
    assert coerce(spec, clean) == clean
    assert json.loads(json.dumps(clean)) == clean
    if spec.type is bool:
        assert isinstance(clean, bool)
    elif spec.type is int:
        assert isinstance(clean, int) and not isinstance(clean, bool)
    elif spec.type is float:
        assert isinstance(clean, int | float) and not isinstance(clean, bool)
        assert math.isfinite(clean)
    else:
        assert isinstance(clean, str) and len(clean) <= spec.max_length
    if spec.minimum is not None:
        assert clean >= spec.minimum
    if spec.maximum is not None:
        assert clean <= spec.maximum
    if spec.choices is not None:
        assert clean in spec.choices


@given(st.sampled_from(KERNEL_SETTINGS).filter(lambda s: s.readonly), JSON_VALUES)
def test_read_only_settings_refuse_every_value(spec: SettingSpec, value: Any) -> None:
    with pytest.raises(InvalidInput):
        coerce(spec, value)


@given(
    changes=st.lists(
        st.sampled_from(WRITABLE).flatmap(
            lambda spec: st.tuples(st.just(spec.key), plausible(spec))
        ),
        min_size=1,
        max_size=3,
    )
)
async def test_put_settings_stores_exactly_the_accepted_sets(
    client: Any, admin: Any, changes: list[tuple[str, Any]]
) -> None:
    body = dict(changes)
    before = await (await client.get("/api/v1/settings", headers=admin.headers)).get_json()
    specs = {spec.key: spec for spec in WRITABLE}
    verdicts = {key: _accepts(specs[key], value) for key, value in body.items()}
    ok, clean = verdicts.get(MFA_ROLES, (False, None))
    if ok:
        # the one setting checked against the database: it may name existing roles only
        roles = await (await client.get("/api/v1/roles", headers=admin.headers)).get_json()
        known = {role["name"].lower() for role in roles["roles"]}
        if any(name.lower() not in known for name in role_names(str(clean))):
            verdicts[MFA_ROLES] = (False, None)
    response = await client.put(
        "/api/v1/settings",
        data=json.dumps(body, allow_nan=True),
        headers={**admin.headers, "Content-Type": "application/json"},
    )
    after = await (await client.get("/api/v1/settings", headers=admin.headers)).get_json()
    locks_out = verdicts.get("auth.local_enabled", (True, True))[1] is False
    if all(ok for ok, _ in verdicts.values()) and locks_out:
        # the admin signs in with a local password only: nobody could sign in after it
        assert response.status_code == 409
        assert (await response.get_json())["code"] == "would_lock_out"
        assert after == before
    elif all(ok for ok, _ in verdicts.values()):
        assert response.status_code == 200, await response.get_data()
        expected = dict(before["settings"])
        for key, (_, clean) in verdicts.items():
            expected[key] = SECRET_MASK if specs[key].secret and clean else clean
        assert after["settings"] == expected
    else:
        assert response.status_code == 400
        body_json = await response.get_json()
        assert set(body_json) == {"error", "code"}
        assert after == before
