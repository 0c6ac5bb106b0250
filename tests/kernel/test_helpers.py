"""Pure pieces: pagination, timestamps, config, client info, rate limits (with properties)."""

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hostgate.config import ConfigError, load_config
from hostgate.errors import InvalidInput
from hostgate.pagination import MAX_LIMIT, page_from
from hostgate.security.clientinfo import client_ip, parse_user_agent
from hostgate.timefmt import iso, parse_iso
from hypothesis import given
from hypothesis import strategies as st


def test_pagination_defaults_and_clamp():
    page = page_from({})
    assert (page.page, page.limit, page.offset) == (1, 25, 0)
    assert page_from({"page": "3", "limit": "10"}).offset == 20
    assert page_from({"limit": "5000"}).limit == MAX_LIMIT


@pytest.mark.parametrize("bad", [{"page": "0"}, {"page": "-1"}, {"limit": "x"}, {"page": "1.5"}])
def test_pagination_rejects_nonsense(bad):
    with pytest.raises(InvalidInput):
        page_from(bad)


@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=1, max_value=10**6))
def test_pagination_property(page, limit):
    result = page_from({"page": str(page), "limit": str(limit)})
    assert result.page == page and 1 <= result.limit <= MAX_LIMIT
    assert result.offset == (page - 1) * result.limit
    assert result.echo() == {"page": page, "limit": result.limit}


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 2), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)
    )
)
def test_iso_round_trip_to_the_millisecond(moment):
    text = iso(moment)
    assert text.endswith("Z") and len(text) == 24
    assert parse_iso(text) == moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def test_iso_converts_offsets_to_utc():
    moment = datetime(2026, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert iso(moment) == "2026-05-01T10:00:00.000Z"
    assert iso(None) is None


def test_config_precedence(tmp_path):
    toml = tmp_path / "hostgate.toml"
    toml.write_text('port = 8000\nhost = "0.0.0.0"\n[plugins.chat]\ntelegram_api = "http://x"\n')
    config = load_config(
        env={"HOSTGATE_PORT": "9000", "HOSTGATE_TRUSTED_PROXIES": "10.0.0.0/8, ::1"},
        config_file=toml,
    )
    assert config.port == 9000 and config.host == "0.0.0.0"
    assert config.plugin("chat")["telegram_api"] == "http://x"
    assert [str(n) for n in config.trusted_proxies] == ["10.0.0.0/8", "::1/128"]
    assert config.resolved_database_url.startswith("sqlite+aiosqlite:///")
    assert load_config(env={}, port=7000).port == 7000


@pytest.mark.parametrize(
    "env, message",
    [
        ({"HOSTGATE_PORT": "abc"}, "HOSTGATE_PORT"),
        ({"HOSTGATE_PORT": "70000"}, "HOSTGATE_PORT"),
        ({"HOSTGATE_TRUSTED_PROXIES": "not-an-ip"}, "HOSTGATE_TRUSTED_PROXIES"),
        ({"HOSTGATE_LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        ({"HOSTGATE_TLS_CERT": "/x.pem"}, "TLS"),
        ({"HOSTGATE_CONFIG": "/nonexistent.toml"}, "does not exist"),
        ({"HOSTGATE_SHUTDOWN_GRACE_SECONDS": "0"}, "HOSTGATE_SHUTDOWN_GRACE_SECONDS"),
        ({"HOSTGATE_SHUTDOWN_GRACE_SECONDS": "soon"}, "HOSTGATE_SHUTDOWN_GRACE_SECONDS"),
    ],
)
def test_config_errors_name_the_variable(env, message):
    with pytest.raises(ConfigError, match=message):
        load_config(env=env)


def test_the_shutdown_grace_period_reaches_hypercorn(tmp_path):
    from hostgate.commands.serve import hypercorn_config

    assert hypercorn_config(load_config(env={})).graceful_timeout == 10.0
    toml = tmp_path / "hostgate.toml"
    toml.write_text("shutdown_grace_seconds = 4.5\n")
    assert hypercorn_config(load_config(env={}, config_file=toml)).graceful_timeout == 4.5
    env = {"HOSTGATE_SHUTDOWN_GRACE_SECONDS": "2"}
    assert hypercorn_config(load_config(env=env)).graceful_timeout == 2.0


def test_bad_toml_is_reported(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("port = = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(env={}, config_file=Path(path))


def test_client_ip_trusts_only_configured_proxies():
    from ipaddress import ip_network

    proxies = [ip_network("10.0.0.0/8")]
    forwarded = {"X-Forwarded-For": "203.0.113.9, 10.1.1.1"}
    assert client_ip("192.0.2.1", forwarded, proxies) == "192.0.2.1"  # untrusted peer
    assert client_ip("10.2.2.2", forwarded, proxies) == "203.0.113.9"
    assert client_ip("::ffff:192.0.2.7", {}, []) == "192.0.2.7"
    spoofed = {"X-Forwarded-For": "1.1.1.1, 203.0.113.9"}
    assert client_ip("10.2.2.2", spoofed, proxies) == "203.0.113.9"


@pytest.mark.parametrize(
    "agent, expected",
    [
        (
            "Mozilla/5.0 (Windows NT 10.0) AppleWebKit Chrome/120.0 Safari/537.36 Edg/120.0",
            ("Edge", "Windows"),
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
            ("Firefox", "Linux"),
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit Version/17.0 Safari/605.1.15",
            ("Safari", "macOS"),
        ),
        ("curl/8.0", ("cURL", "Unknown")),
        (None, ("Unknown", "Unknown")),
    ],
)
def test_user_agent_parsing(agent, expected):
    assert parse_user_agent(agent) == expected


def test_keys_rotate_cli(tmp_path, run_cli):
    data = ["--data-dir", str(tmp_path)]
    code, out, err = run_cli(*data, "keys", "rotate")
    assert code == 0, err
    assert "re-encrypted" in out and "encryption.key" in out
    code, out, err = run_cli(*data, "keys", "rotate-signing")
    assert code == 0 and "sessions revoked" in out, err
    code, out, err = run_cli(*data, "plugins")
    assert code == 0
