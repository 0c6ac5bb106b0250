"""``POST /backup/export-link`` and the one-time ``GET /backup/export/<ticket>`` download."""

from __future__ import annotations

from tests.services.backup.support import API, PASSWORD
from tests.services.backup.test_api import events, post_import

LINK = f"{API}/backup/export-link"


async def new_link(client, user, **body):
    response = await client.post(
        LINK, json={"password": PASSWORD, "includeRecordings": False, **body}, headers=user.headers
    )
    return response.status_code, await response.get_json()


async def test_a_link_downloads_the_archive_once(client, admin, kernel):
    status, body = await new_link(client, admin)
    assert status == 200, body
    assert body["url"].startswith("/api/v1/backup/export/") and body["expiresIn"] == 30
    assert PASSWORD not in str(body)

    response = await client.get(body["url"], headers=admin.headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert response.headers["Content-Disposition"].startswith('attachment; filename="hostgate-')
    assert response.headers["Cache-Control"] == "no-store"
    archive = await response.get_data()
    assert archive.startswith(b"HGBACKUP")
    exported = await events(kernel, "backup.exported")
    assert exported[-1].details == {"includeRecordings": False, "via": "link"}

    again = await client.get(body["url"], headers=admin.headers)
    assert again.status_code == 404
    assert (await again.get_json())["code"] == "download_expired"

    # the archive is sealed with the password given to the link
    status, answer = await post_import(client, admin, archive, password="not the password")
    assert status == 422 and answer["code"] == "invalid_backup_password"
    status, answer = await post_import(client, admin, archive)
    assert status == 200 and answer["ok"] is True


async def test_a_link_is_for_its_user_and_session_only(client, admin, make_user):
    other = await make_user("other-admin", permissions=["settings.backup"])
    _, body = await new_link(client, admin)
    stolen = await client.get(body["url"], headers=other.headers)
    assert stolen.status_code == 404
    # and a link tried by someone else is gone for its owner too
    assert (await client.get(body["url"], headers=admin.headers)).status_code == 404

    # a second session of the same user cannot use it either
    second = await make_user("second", permissions=["settings.backup"])
    _, body = await new_link(client, second)
    login = await client.post(
        f"{API}/auth/login", json={"username": "second", "password": second.password}
    )
    token = (await login.get_json())["token"]
    elsewhere = await client.get(body["url"], headers={"Authorization": f"Bearer {token}"})
    assert elsewhere.status_code == 404


async def test_link_refusals(client, admin, make_user):
    status, body = await new_link(client, admin, password="short")
    assert status == 400 and body["code"] == "invalid_input"
    assert (
        await client.get(f"{API}/backup/export/nonsense", headers=admin.headers)
    ).status_code == 404
    plain = await make_user("plain", role="user")
    assert (await new_link(client, plain))[0] == 403
    assert (await client.get(f"{API}/backup/export/x", headers=plain.headers)).status_code == 403
    anonymous = await client.post(LINK, json={"password": PASSWORD})
    assert anonymous.status_code == 401
