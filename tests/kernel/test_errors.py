"""One error shape for every failure under /api/v1, never a 500."""

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hostgate import hookimpl, public
from hostgate.logging_setup import configure_logging
from quart import Blueprint


def assert_error_shape(body, code=None):
    assert set(body) >= {"error", "code"}
    assert isinstance(body["error"], str) and body["error"]
    if code:
        assert body["code"] == code


async def test_unknown_route_is_json_404(client):
    response = await client.get("/api/v1/no/such/route")
    assert response.status_code == 404
    assert_error_shape(await response.get_json(), "not_found")


async def test_wrong_method_is_json_405(client):
    response = await client.delete("/api/v1/health")
    assert response.status_code == 405
    assert_error_shape(await response.get_json(), "method_not_allowed")
    assert "GET" in response.headers["Allow"]


async def test_no_token_is_401_whatever_the_body(client):
    response = await client.put(
        "/api/v1/settings", data=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 401
    assert_error_shape(await response.get_json(), "not_authenticated")


@pytest.mark.parametrize(
    "payload",
    [b"{not json", b"[1, 2", b"\xff\xfe", b'"just a string"', b"[]", b"{}", b"null"],
)
async def test_garbage_bodies_are_400(client, admin, payload):
    response = await client.put(
        "/api/v1/settings",
        data=payload,
        headers={**admin.headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 400, await response.get_data()
    assert_error_shape(await response.get_json())


async def test_oversize_body_is_413(client, admin, kernel):
    big = b'{"app.name": "' + b"x" * (kernel.config.max_body_bytes + 10) + b'"}'
    response = await client.put(
        "/api/v1/settings", data=big, headers={**admin.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert_error_shape(await response.get_json(), "payload_too_large")


async def test_bad_token_is_401(client):
    response = await client.get("/api/v1/settings", headers={"Authorization": "Bearer nonsense"})
    assert response.status_code == 401
    assert_error_shape(await response.get_json(), "invalid_token")


async def test_missing_permission_is_403(client, make_user):
    plain = await make_user("plain", role="user")
    response = await client.get("/api/v1/settings", headers=plain.headers)
    assert response.status_code == 403
    assert_error_shape(await response.get_json(), "forbidden")


async def test_responses_carry_request_id_and_no_store(client):
    response = await client.get("/api/v1/health", headers={"X-Request-Id": "abc123"})
    assert response.headers["X-Request-Id"] == "abc123"
    assert response.headers["Cache-Control"] == "no-store"


chatty = Blueprint("chatty", __name__)
chatty_log = logging.getLogger("hostgate.tests.chatty")


@chatty.get("/chatty/<word>")
@public
async def chatty_view(word: str) -> dict[str, str]:
    """Log a line before and after yielding to the loop; ``boom`` then fails."""
    chatty_log.warning("before %s", word)
    await asyncio.sleep(0.01)  # let the other request's lines interleave
    chatty_log.warning("after %s", word)
    if word == "boom":
        raise RuntimeError("chatty view failed")
    return {"word": word}


class ChattyPack:
    """A pack with one route that logs."""

    @hookimpl
    def register_blueprints(self) -> list[Blueprint]:
        """The logging blueprint."""
        return [chatty]


@pytest.fixture
def plugins(plugins: list[object]) -> list[object]:
    """The default test packs plus the logging one."""
    return [*plugins, ChattyPack()]


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """``--log-format json`` installed, its output captured in a string."""
    configure_logging("INFO", "json")
    handler = next(h for h in logging.getLogger().handlers if getattr(h, "_hostgate", False))
    assert isinstance(handler, logging.StreamHandler)
    stream = io.StringIO()
    handler.setStream(stream)
    yield stream


async def test_log_lines_carry_the_responses_request_id(client: Any, json_log: io.StringIO) -> None:
    """Each request's log records (the unhandled-error one too) carry its own X-Request-Id.

    Three requests run at once and interleave their lines; a given id and two
    generated ones must each match exactly the lines of their request.
    """
    responses = await asyncio.gather(
        client.get("/api/v1/chatty/one", headers={"X-Request-Id": "given-id-1"}),
        client.get("/api/v1/chatty/two"),
        client.get("/api/v1/chatty/boom"),
    )
    assert [r.status_code for r in responses] == [200, 200, 500]
    words = ["one", "two", "boom"]
    ids = {word: r.headers["X-Request-Id"] for word, r in zip(words, responses, strict=True)}
    assert ids["one"] == "given-id-1"
    assert len(set(ids.values())) == 3 and "-" not in ids.values()
    records = [json.loads(line) for line in json_log.getvalue().splitlines()]
    for word, rid in ids.items():
        mine = [r["message"] for r in records if r["request_id"] == rid]
        expected = [f"before {word}", f"after {word}"]
        if word == "boom":
            expected.append("unhandled error")
        # the access log's line comes last, when the response is ready
        status = 500 if word == "boom" else 200
        assert mine[:-1] == expected, records
        assert mine[-1].startswith(f"GET /api/v1/chatty/{word} {status} "), records


async def test_validation_errors_are_one_plain_sentence_per_field(client, admin):
    response = await client.put(
        "/api/v1/profile/ssh-prefs",
        json={"fontSize": "big", "cursorStyle": "round", "scrollback": -1, "colour": "red"},
        headers=admin.headers,
    )
    assert response.status_code == 400
    body = await response.get_json()
    assert_error_shape(body, "invalid_input")
    assert body["error"] == (
        "fontSize must be a number. cursorStyle must be 'block', 'bar' or 'underline'."
        " scrollback must be at least 0. colour is not a known field."
    )


async def test_a_missing_field_and_a_wrong_body_type_are_plain_sentences(client, make_user):
    await make_user("bob")
    response = await client.post("/api/v1/auth/login", json={"username": "bob"})
    assert (await response.get_json())["error"] == "password is required."
    response = await client.post("/api/v1/auth/login", json=["bob", "pw"])
    assert (await response.get_json())["error"] == "The body must be an object."


async def test_a_pattern_field_says_what_it_expects(client, admin):
    response = await client.put(
        "/api/v1/profile", json={"email": "not-an-address"}, headers=admin.headers
    )
    assert response.status_code == 400
    assert (await response.get_json())["error"] == "email must be an e-mail address."
