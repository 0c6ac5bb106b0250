"""Schemathesis against the served OpenAPI document with every check it has.

Every operation is fuzzed, as an admin and as a low-permission user, with schema-valid
and schema-invalid requests, and every response goes through all of schemathesis's
checks (``--checks all``): no 5xx, statuses, content types, headers and bodies as
documented, valid requests accepted, invalid ones refused, authentication enforced.

A bounded, deterministic run is part of the suite (a few examples per operation and
mode, derandomized). Run it at length with HOSTGATE_FUZZ_EXAMPLES=200.

Operations that end the fuzzing identity (logout, revoking login sessions) run last,
and the identity is restored (a fresh login) whenever one of them ended it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from .conftest import PASSWORD

EXAMPLES = int(os.environ.get("HOSTGATE_FUZZ_EXAMPLES", "3"))

# Run last: they end the fuzzing identity's session (they work; the session is renewed).
ENDS_SESSION = ("/api/v1/auth/logout", "/api/v1/profile/login-sessions")


def operations(live_gateway):
    schema = schemathesis.openapi.from_url(f"{live_gateway.url}/api/v1/openapi.json")
    found = [result.ok() for result in schema.get_all_operations()]
    assert len(found) > 50, "the OpenAPI document lost most of the API"
    return sorted(found, key=lambda op: op.path.startswith(ENDS_SESSION))


def session_keeper(live_gateway, who: str) -> Callable[[], str]:
    """The identity's token, renewed by logging in again when an operation ended it."""
    username = "fuzzadmin" if who == "admin" else "fuzzuser"
    token = live_gateway.admin_token if who == "admin" else live_gateway.user_token

    def current() -> str:
        nonlocal token
        me = httpx.get(
            f"{live_gateway.url}/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"}
        )
        if me.status_code == 401:
            login = httpx.post(
                f"{live_gateway.url}/api/v1/auth/login",
                json={"username": username, "password": PASSWORD},
            )
            assert login.status_code == 200, login.text
            token = login.json()["token"]
        return token

    return current


def fuzz(live_gateway, who):
    token = session_keeper(live_gateway, who)
    failures = []
    calls = 0
    found = operations(live_gateway)
    for operation in found:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                derandomize=True,
                database=None,
            )
            def run(case):
                nonlocal calls
                calls += 1
                headers = {"Authorization": f"Bearer {token()}"}
                response = case.call(base_url=live_gateway.url, headers=headers, timeout=30)
                # no ``checks``: every check schemathesis has, as ``--checks all``
                case.validate_response(
                    response,
                    headers=headers,
                    transport_kwargs={"base_url": live_gateway.url, "headers": headers},
                )

            try:
                run()
            except Unsatisfiable:
                continue  # nothing in this operation can be made invalid
            except (Exception, BaseExceptionGroup) as exc:  # collect them all, then report
                first = exc.exceptions[0] if isinstance(exc, BaseExceptionGroup) else exc
                text = " ".join(str(first).split())[:400]
                failures.append(f"{operation.label} ({mode.value}): {text}")
    assert calls >= len(found), "fuzzing sent fewer requests than there are operations"
    return failures


@pytest.mark.parametrize("who", ["admin", "user"])
def test_every_check_passes(live_gateway, who):
    failures = fuzz(live_gateway, who)
    assert failures == [], "\n".join(failures)
