"""The secret box, the key check at start-up, and key rotation."""

from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.security.secretbox import SecretBox, SecretKeyError, generate_key, parse_key


def test_round_trip_and_tamper_detection():
    box = SecretBox(parse_key(generate_key()))
    envelope = box.seal("p@ss wörd")
    assert envelope.startswith(f"hg1:{box.key_id}:") and "p@ss" not in envelope
    assert box.open(envelope) == "p@ss wörd"
    assert box.seal("same") != box.seal("same")  # random nonce
    prefix, kid, body = envelope.split(":", 2)
    flipped = body[:-3] + ("A" if body[-3] != "A" else "B") + body[-2:]
    with pytest.raises(SecretKeyError, match="authentication"):
        box.open(f"{prefix}:{kid}:{flipped}")


def test_other_key_gives_a_clear_error_not_garbage():
    one, two = SecretBox(parse_key(generate_key())), SecretBox(parse_key(generate_key()))
    with pytest.raises(SecretKeyError, match="encrypted with key"):
        two.open(one.seal("secret"))


@pytest.mark.parametrize("bad", ["", "abc", "zz" * 32, "00" * 31])
def test_malformed_keys_are_refused(bad):
    with pytest.raises(SecretKeyError):
        parse_key(bad)


async def refused_at_start(app: Any, reason: str) -> None:
    """The app does not start, for ``reason``; the failed start closed its database itself.

    The start fails after opening the database: its aiosqlite connection, left open,
    would be stopped by the garbage collector during a later test, and its worker thread
    then hand the result to this test's closed event loop ("Event loop is closed" there).
    """
    with pytest.raises(Exception, match=reason):
        async with app.test_app():
            pass
    database = kernel_of(app).db
    assert database._workers is not None and not database._workers._threads  # all ended


async def test_generated_key_file_marks_instance_insecure(config):
    app = create_app(config.with_overrides(encryption_key=None))
    async with app.test_app():
        kernel = kernel_of(app)
        key_file = config.data_dir / "encryption.key"
        assert key_file.exists() and oct(key_file.stat().st_mode & 0o777) == "0o600"
        assert kernel.settings.public()["system.insecure_key"] is True


async def test_starting_with_the_wrong_key_fails_clearly(config):
    app = create_app(config)
    async with app.test_app():
        pass
    wrong = create_app(config.with_overrides(encryption_key="aa" * 32))
    await refused_at_start(wrong, "cannot decrypt")


async def test_rotation_reencrypts_every_secret(config, tmp_path):
    from hostgate.services.keyrotation import sealed_columns

    assert ("connections", "password", ["id"]) in sealed_columns()
    app = create_app(config)
    async with app.test_app():
        kernel = kernel_of(app)
        kernel.settings.specs["test.secret"] = __import__("hostgate").SettingSpec(
            "test.secret", str, "", secret=True
        )
        await kernel.settings.update({"test.secret": "s3cret"})
        new_key = generate_key()
        result = await kernel.key_rotation.rotate_encryption_key(new_key)
        assert result.count >= 3  # setting, signing key, key check
    rotated = create_app(config.with_overrides(encryption_key=new_key))
    async with rotated.test_app():
        kernel = kernel_of(rotated)
        kernel.settings.specs["test.secret"] = __import__("hostgate").SettingSpec(
            "test.secret", str, "", secret=True
        )
        await kernel.settings.load()
        assert kernel.settings.get("test.secret") == "s3cret"
    await refused_at_start(create_app(config), "cannot decrypt")


async def test_signing_key_rotation_invalidates_sessions(app, client, admin, kernel):
    assert (await client.get("/api/v1/settings", headers=admin.headers)).status_code == 200
    revoked = await kernel.identity.rotate_signing_key()
    assert revoked >= 1
    response = await client.get("/api/v1/settings", headers=admin.headers)
    assert response.status_code == 401
