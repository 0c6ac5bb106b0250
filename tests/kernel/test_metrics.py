"""``GET /api/v1/metrics`` after real traffic: an SSH terminal against sshd, a webhook delivery."""

from __future__ import annotations

from typing import Any

import hostgate_chat.plugin
import hostgate_notifications.plugin
import httpx
import pytest
from hostgate_ssh import plugin as ssh_plugin
from prometheus_client.parser import text_string_to_metric_families

from tests.kernel.test_serve import start, stop_gracefully
from tests.services.sessions.helpers import Screen, socket_path, ticket_for
from testsupport.peers import free_port, wait_for_port
from testsupport.receivers import eventually, http_receiver  # noqa: F401
from testsupport.sshd import sshd  # noqa: F401

METRICS = "/api/v1/metrics"


@pytest.fixture
def plugins() -> list[object]:
    return [ssh_plugin, hostgate_chat.plugin, hostgate_notifications.plugin]


async def scrape(client: Any, user: Any) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await client.get(METRICS, headers=user.headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = await response.get_data(as_text=True)
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_scraping_needs_the_permission(client, make_user):
    assert (await client.get(METRICS)).status_code == 401
    user = await make_user("alice")
    response = await client.get(METRICS, headers=user.headers)
    assert response.status_code == 403
    assert "system.metrics" in (await response.get_json())["error"]


async def test_the_figures_move_with_real_traffic(
    client,
    kernel,
    admin,
    make_user,
    make_connection,
    sshd,  # noqa: F811
    http_receiver,  # noqa: F811
):
    before = await scrape(client, admin)
    user = await make_user("alice")
    connection = await make_connection(
        user,
        "ssh",
        sshd.host,
        sshd.port,
        name="box",
        username=sshd.username,
        password=sshd.password,
    )
    path = socket_path("ssh", ticket_for(kernel, user), connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("echo metrics-$((6*7))", "metrics-42")
        during = await scrape(client, admin)
        assert value(during, "hostgate_sessions_live", protocol="ssh", kind="terminal") == 1
        assert value(during, "hostgate_relay_bytes_total", protocol="ssh", direction="in") > 0
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000

    response = await client.put(
        "/api/v1/notifications/channels/webhook",
        headers=admin.headers,
        json={"enabled": True, "config": {"url": http_receiver.url("/hook")}},
    )
    assert response.status_code == 200
    response = await client.post(
        "/api/v1/notifications/rules",
        headers=admin.headers,
        json={
            "name": "new users",
            "events": ["user.created"],
            "actions": [{"channel": "webhook", "recipients": []}],
        },
    )
    assert response.status_code == 201
    response = await client.post(
        "/api/v1/users",
        headers=admin.headers,
        json={"username": "bob", "password": "long enough pw"},
    )
    assert response.status_code == 201
    await http_receiver.wait_for("/hook")

    sent = "hostgate_notification_deliveries_total"

    async def delivered() -> dict[Any, float] | None:
        samples = await scrape(client, admin)
        return samples if value(samples, sent, channel="webhook", outcome="sent") == 1 else None

    after = await eventually(delivered, what="the delivery counted")
    assert value(after, sent, channel="webhook", outcome="sent") == 1
    assert value(after, "hostgate_sessions_live", protocol="ssh", kind="terminal") == 0
    for direction in ("in", "out"):
        moved = value(after, "hostgate_relay_bytes_total", protocol="ssh", direction=direction)
        assert moved > value(
            before, "hostgate_relay_bytes_total", protocol="ssh", direction=direction
        )
    assert value(after, "hostgate_recordings_written_total", format="cast") == (
        value(before, "hostgate_recordings_written_total", format="cast") + 1
    )
    scrapes = {"method": "GET", "route": METRICS, "status": "200"}
    # a scrape is counted once answered: the earlier scrapes (before, during) are in
    assert value(after, "hostgate_http_requests_total", **scrapes) >= 2
    rules = {"method": "POST", "route": "/api/v1/notifications/rules", "status": "201"}
    assert value(after, "hostgate_http_requests_total", **rules) == 1
    assert (
        value(after, "hostgate_http_request_duration_seconds_count", method="GET", route=METRICS)
        >= 2
    )
    # a path no route matched is one label, never the path itself
    await client.get("/api/v1/no-such-thing-123")
    final = await scrape(client, admin)
    assert (
        value(final, "hostgate_http_requests_total", method="GET", route="unmatched", status="404")
        == 1
    )
    assert not any("no-such-thing" in str(key) for key in final)


def test_a_separate_metrics_address_serves_without_authentication(tmp_path):
    """``HOSTGATE_METRICS_ADDRESS``: /metrics there for the scraper, the API still guarded."""
    metrics_port = free_port()
    process, port = start(tmp_path, env={"HOSTGATE_METRICS_ADDRESS": f"127.0.0.1:{metrics_port}"})
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}{METRICS}").status_code == 401
        assert wait_for_port(metrics_port, 10)
        scraped = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert scraped.status_code == 200
        families = {f.name for f in text_string_to_metric_families(scraped.text)}
        assert {"hostgate_http_requests", "hostgate_sessions_live"} <= families
        assert 'route="/health",status="200"' in scraped.text
    finally:
        assert stop_gracefully(process) == 0


def test_a_bad_metrics_address_is_a_configuration_error(run_cli):
    code, _, err = run_cli("serve", env={"HOSTGATE_METRICS_ADDRESS": "nowhere"})
    assert code == 2 and "HOSTGATE_METRICS_ADDRESS" in err
