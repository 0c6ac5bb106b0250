"""``/backup`` over HTTP: size, export, import, and refusals that change nothing."""

from __future__ import annotations

import os

import pytest
from hostgate.db.models.audit import AuditEntry
from sqlmodel import select

from tests.services.backup.support import API, PASSWORD, user_named

EXPORT = f"{API}/backup/export"
IMPORT = f"{API}/backup/import"


async def export_archive(client, admin, *, include_recordings=True, password=PASSWORD) -> bytes:
    response = await client.post(
        EXPORT,
        json={"password": password, "includeRecordings": include_recordings},
        headers=admin.headers,
    )
    assert response.status_code == 200, await response.get_data()
    return await response.get_data()


async def post_import(client, admin, body: bytes, password: str = PASSWORD):
    headers = {**admin.headers, "X-Backup-Password": password}
    response = await client.post(IMPORT, data=body, headers=headers)
    return response.status_code, await response.get_json()


async def events(kernel, event_type):
    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == event_type)
        return list((await session.exec(query)).all())


async def test_size_counts_database_and_recordings(client, admin, kernel):
    recordings = kernel.config.data_dir / "recordings"
    recordings.mkdir(exist_ok=True)
    (recordings / "a.cast").write_bytes(b"x" * 1000)
    (recordings / "b.webm").write_bytes(b"y" * 24)
    response = await client.get(f"{API}/backup/size", headers=admin.headers)
    body = await response.get_json()
    assert response.status_code == 200
    assert body["recordingsSize"] == 1024 and body["recordingCount"] == 2
    assert body["dbSize"] == os.path.getsize(kernel.config.data_dir / "hostgate.db") > 0


async def test_routes_need_settings_backup(client, make_user):
    user = await make_user("plain", role="user")
    for method, path in (
        ("get", "/backup/size"),
        ("post", "/backup/export"),
        ("post", "/backup/import"),
    ):
        anonymous = await getattr(client, method)(f"{API}{path}")
        assert anonymous.status_code == 401
        denied = await getattr(client, method)(f"{API}{path}", headers=user.headers)
        assert denied.status_code == 403


@pytest.mark.parametrize(
    "body",
    [
        {"password": "short", "includeRecordings": False},
        {"includeRecordings": False},
        {"password": PASSWORD, "includeRecordings": "yes"},
        {"password": PASSWORD, "includeRecordings": False, "other": 1},
    ],
)
async def test_export_refuses_bad_bodies(client, admin, body):
    response = await client.post(EXPORT, json=body, headers=admin.headers)
    assert response.status_code == 400
    assert (await response.get_json())["code"] == "invalid_input"


async def test_export_then_import_restores_and_signs_everyone_out(
    client, admin, kernel, make_user, make_connection
):
    owner = await make_user("marker-owner", role="user")
    await make_connection(owner, "ssh", "10.0.0.9", 22, username="u", password="conn-secret-9")
    await kernel.settings.update({"app.name": "Before Export"})
    recordings = kernel.config.data_dir / "recordings"
    recordings.mkdir(exist_ok=True)
    (recordings / "kept.cast").write_bytes(b"recording bytes")

    response = await client.post(
        EXPORT, json={"password": PASSWORD, "includeRecordings": True}, headers=admin.headers
    )
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/octet-stream"
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="hostgate-backup-')
    assert disposition.endswith('.geb"')
    archive = await response.get_data()
    assert archive.startswith(b"HGBACKUP")
    assert b"conn-secret-9" not in archive and b"Before Export" not in archive
    exported = await events(kernel, "backup.exported")
    assert exported and exported[-1].details == {"includeRecordings": True, "via": "post"}
    assert PASSWORD not in str(exported[-1].details)

    await make_user("made-after-export", role="user")
    await kernel.settings.update({"app.name": "After Export"})
    (recordings / "kept.cast").unlink()

    status, body = await post_import(client, admin, archive)
    assert status == 200, body
    assert body["ok"] is True and body["recordingsRestored"] == 1
    assert "log in again" in body["message"]
    assert await user_named(kernel, "made-after-export") is None
    assert await user_named(kernel, "marker-owner") is not None
    assert kernel.settings.get("app.name") == "Before Export"
    assert (recordings / "kept.cast").read_bytes() == b"recording bytes"
    # every login session, the caller's included, is revoked
    again = await client.get(f"{API}/backup/size", headers=admin.headers)
    assert again.status_code == 401
    imported = await events(kernel, "backup.imported")
    assert imported and imported[-1].details["recordingsRestored"] == 1
    assert PASSWORD not in str(imported[-1].details)


async def assert_unchanged(client, admin, kernel, marker: str) -> None:
    assert await user_named(kernel, marker) is not None
    response = await client.get(f"{API}/backup/size", headers=admin.headers)
    assert response.status_code == 200, "the caller's session still works"
    assert not list((kernel.config.data_dir / ".backup-staging").glob("*"))
    assert not (kernel.config.data_dir / "backup-restore.json").exists()


def frames(archive: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of every frame after the 64-byte header."""
    found, offset = [], 64
    while offset < len(archive):
        length = int.from_bytes(archive[offset : offset + 4], "big") & 0x7FFF_FFFF
        found.append((offset, offset + 4 + length))
        offset += 4 + length
    return found


def flip(data: bytes, offset: int) -> bytes:
    changed = bytearray(data)
    changed[offset] ^= 0x01
    return bytes(changed)


async def test_wrong_password_tampering_and_truncation_change_nothing(
    client, admin, kernel, make_user
):
    archive = await export_archive(client, admin)
    await make_user("made-after-export", role="user")
    spans = frames(archive)
    assert len(spans) > 6
    (a, b), (c, d) = spans[3], spans[4]
    swapped = archive[:a] + archive[c:d] + archive[a:b] + archive[d:]
    dropped = archive[:a] + archive[b:]
    cases = {
        "wrong password": (archive, "not the password", "invalid_backup_password"),
        "short password": (archive, "short", "invalid_backup_password"),
        "tampered header": (flip(archive, 20), PASSWORD, "invalid_backup_password"),
        "tampered middle": (flip(archive, len(archive) // 2), PASSWORD, "backup_corrupted"),
        "tampered last byte": (flip(archive, len(archive) - 1), PASSWORD, "backup_corrupted"),
        "truncated": (archive[: len(archive) - 100], PASSWORD, "backup_corrupted"),
        "final frame dropped": (archive[: spans[-1][0]], PASSWORD, "backup_corrupted"),
        "frames swapped": (swapped, PASSWORD, "backup_corrupted"),
        "frame dropped": (dropped, PASSWORD, "backup_corrupted"),
        "header only": (archive[:64], PASSWORD, "backup_corrupted"),
        "appended data": (archive + b"\x00" * 40, PASSWORD, "backup_corrupted"),
    }
    for name, (body, password, code) in cases.items():
        status, answer = await post_import(client, admin, body, password)
        assert status == 422, (name, answer)
        if code is not None:
            assert answer["code"] == code, (name, answer)
        if code == "invalid_backup_password":
            assert answer["error"] == "Invalid backup password or corrupted backup file"
        await assert_unchanged(client, admin, kernel, "made-after-export")


async def test_other_refusals(client, admin, kernel, make_user):
    await make_user("still-here", role="user")
    status, body = await post_import(client, admin, b"PK\x03\x04 not a backup at all" * 10)
    assert status == 400 and body["code"] == "invalid_backup"
    version_two = bytearray(await export_archive(client, admin, include_recordings=False))
    version_two[9] = 2
    status, body = await post_import(client, admin, bytes(version_two))
    assert status == 400 and body["code"] == "unsupported_backup_version"
    status, body = await post_import(client, admin, b"")
    assert status == 400
    response = await client.post(IMPORT, data=b"x" * 200, headers=admin.headers)
    assert response.status_code == 400
    assert "X-Backup-Password" in (await response.get_json())["error"]
    kernel.backups.max_import_bytes = 1000
    status, body = await post_import(client, admin, b"x" * 5000)
    assert status == 413
    await assert_unchanged(client, admin, kernel, "still-here")


async def test_large_archive_beyond_the_body_limit_is_accepted(client, admin, kernel, config):
    recordings = kernel.config.data_dir / "recordings"
    recordings.mkdir(exist_ok=True)
    big = os.urandom(config.max_body_bytes + 1024 * 1024)
    (recordings / "big.cast").write_bytes(big)
    archive = await export_archive(client, admin)
    assert len(archive) > config.max_body_bytes
    (recordings / "big.cast").unlink()
    status, body = await post_import(client, admin, archive)
    assert status == 200, body
    assert (recordings / "big.cast").read_bytes() == big


async def test_password_beyond_latin1_travels_as_utf8(client, admin):
    password = "пароль-密码-ok"
    archive = await export_archive(client, admin, include_recordings=False, password=password)
    # the test client puts header values on the (ASGI) wire as UTF-8 bytes
    status, body = await post_import(client, admin, archive, password)
    assert status == 200, body


def test_header_text():
    from hostgate.api.backup import header_text

    assert header_text("plain ascii") == "plain ascii"
    assert header_text("pässwörd") == "pässwörd"  # Latin-1 bytes stay Latin-1
    assert header_text("пароль".encode().decode("latin-1")) == "пароль"
