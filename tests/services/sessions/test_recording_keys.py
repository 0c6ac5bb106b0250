"""Key rotation re-seals each recording's data key; the files themselves are not rewritten."""

from __future__ import annotations

from hostgate.app import create_app

from tests.services.sessions.test_retention import rdp_connection_id


async def test_rotation_keeps_recordings_readable(config, plugins, client, kernel, make_user):
    alice = await make_user("alice")
    rdp = await rdp_connection_id(kernel, alice)
    created = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": rdp}, headers=alice.headers
    )
    url = f"/api/v1/sessions/{(await created.get_json())['sessionId']}/recording"
    content = bytes(range(256)) * 400
    await client.post(f"{url}/chunk", data=content, headers=alice.headers)
    await client.post(f"{url}/finalize", headers=alice.headers)
    [file] = list((kernel.config.data_dir / "recordings").iterdir())
    on_disk = file.read_bytes()

    new_key = "7c" * 32
    result = await kernel.key_rotation.rotate_encryption_key(new_key)
    assert result.count > 0
    assert file.read_bytes() == on_disk

    rotated = create_app(config.with_overrides(encryption_key=new_key), plugins=plugins)
    async with rotated.test_app() as running:
        again = running.test_client()
        assert await (await again.get(url, headers=alice.headers)).get_data() == content
