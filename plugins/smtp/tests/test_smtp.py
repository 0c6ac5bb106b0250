"""The smtp channel against real aiosmtpd servers: auth, STARTTLS, implicit TLS, failures.

The app and the logged-in client come from the kernel's test kit (``hostgate.testing``).
"""

import pytest
from hostgate.app import create_app
from hostgate.testing import LoggedInClient
from hostgate_smtp.plugin import SmtpConfig
from pydantic import ValidationError

TEST = "/api/v1/notifications/channels/smtp/test"


def smtp_config(receiver, **changes):
    return {
        "host": "127.0.0.1",
        "port": receiver.port,
        "from": "Gateway <gw@example.org>",
        **changes,
    }


async def send_test(client, config, to="ops@example.org"):
    return await client.post(TEST, json={**config, "recipients": [to]})


async def test_plain_delivery_with_authentication(hostgate_client, smtp_receiver_factory):
    receiver = smtp_receiver_factory(auth={"mailer": "mail-pass-1"})
    config = smtp_config(receiver, username="mailer", password="mail-pass-1")
    response = await send_test(hostgate_client, config)
    assert response.status_code == 200, await response.get_data()
    [mail] = await receiver.wait_for()
    assert receiver.logins == [("mailer", "mail-pass-1")]
    assert mail.sender == "gw@example.org"
    assert mail.message["From"] == "Gateway <gw@example.org>"
    assert mail.message["To"] == "ops@example.org"
    assert mail.message["Message-ID"].endswith("@example.org>")
    assert "Test Notification" in mail.subject


async def test_wrong_credentials_are_reported(hostgate_client, smtp_receiver_factory):
    receiver = smtp_receiver_factory(auth={"mailer": "mail-pass-1"})
    config = smtp_config(receiver, username="mailer", password="wrong")
    response = await send_test(hostgate_client, config)
    assert response.status_code == 502
    body = await response.get_json()
    assert body["code"] == "remote_auth_failed"
    assert "rejected the credentials" in body["error"]
    assert "wrong" not in body["error"]
    assert receiver.messages == []


async def test_starttls_with_a_verified_certificate(
    hostgate_client, smtp_receiver_factory, tls_context
):
    receiver = smtp_receiver_factory(auth={"mailer": "tls-pass"}, tls_context=tls_context)
    config = smtp_config(receiver, username="mailer", password="tls-pass")
    response = await send_test(hostgate_client, config)
    assert response.status_code == 200, await response.get_data()
    assert len(await receiver.wait_for()) == 1
    assert receiver.logins == [("mailer", "tls-pass")]


async def test_implicit_tls(hostgate_client, smtp_receiver_factory, tls_context):
    receiver = smtp_receiver_factory(tls_context=tls_context, implicit_tls=True)
    response = await send_test(hostgate_client, smtp_config(receiver, tls=True))
    assert response.status_code == 200, await response.get_data()
    assert len(await receiver.wait_for()) == 1


async def test_an_untrusted_certificate_is_refused(
    hostgate_config, hostgate_packs, hostgate_client, smtp_receiver_factory, tls_context
):
    receiver = smtp_receiver_factory(tls_context=tls_context, implicit_tls=True)
    untrusting = create_app(
        hostgate_config.with_overrides(plugin_options={}), plugins=hostgate_packs
    )
    async with untrusting.test_app() as app:  # same data dir: the admin's token still works
        client = LoggedInClient(app.test_client(), hostgate_client.token, hostgate_client.user)
        response = await send_test(client, smtp_config(receiver, tls=True))
    assert response.status_code == 502
    assert "could not be verified" in (await response.get_json())["error"]
    assert receiver.messages == []


def test_a_host_with_control_characters_is_refused():
    base = {"port": 25, "from": "gate@example.org"}
    assert SmtpConfig.model_validate({**base, "host": "mail.example.org"}).host
    for host in ("a\x00b", "mail\x7f.example", "mail\u2028.example"):
        with pytest.raises(ValidationError):
            SmtpConfig.model_validate({**base, "host": host})
