"""Per-action rights on the browser's file routes, against a real OpenSSH sshd.

The effective right is the connection's switch AND the role's permission; a refused
upload, download or delete is a 403 ``action_denied`` that leaves the remote side as
it was and writes a ``session.action_denied`` audit entry.
"""

from __future__ import annotations

from typing import Any

from plugins.ssh.tests.sftp_support import api, download, give, upload


async def sftp_connection(client: Any, user: Any, sshd: Any, **fields: Any) -> dict[str, Any]:
    """A connection made through the API (the ``actions`` field goes the public way)."""
    response = await client.post(
        "/api/v1/connections",
        json={
            "name": "rights box",
            "protocol": "sftp",
            "host": sshd.host,
            "port": sshd.port,
            "username": sshd.username,
            "password": sshd.password,
            **fields,
        },
        headers=user.headers,
    )
    assert response.status_code in (200, 201), await response.get_data()
    return await response.get_json()  # type: ignore[no-any-return]


async def audit_entries(client: Any, user: Any, event_type: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/audit?eventType={event_type}", headers=user.headers)
    return (await response.get_json())["entries"]  # type: ignore[no-any-return]


class Conn:
    def __init__(self, body: dict[str, Any]) -> None:
        self.id = body["id"]


async def denied_entry(client: Any, user: Any, action: str) -> dict[str, Any]:
    entries = await audit_entries(client, user, "session.action_denied")
    [entry] = [e for e in entries if e["details"]["action"] == action]
    return entry


async def test_connection_switch_refuses_an_upload_and_audits_it(client, make_user, sshd, workdir):
    owner = await make_user("owner")
    body = await sftp_connection(client, owner, sshd, actions={"upload": False})
    assert body["actions"] == {
        "upload": False,
        "download": True,
        "delete": True,
        "copy": True,
        "paste": True,
    }
    conn = Conn(body)
    target = workdir / "refused.txt"

    response = await upload(client, owner, conn, str(target), b"never")
    assert response.status_code == 403
    answer = await response.get_json()
    assert answer["code"] == "action_denied"
    assert answer["action"] == "upload"
    assert "Uploading files is not allowed" in answer["error"]
    assert not target.exists()
    entry = await denied_entry(client, owner, "upload")
    assert entry["details"]["connectionId"] == conn.id
    assert str(target) in entry["details"]["detail"]

    # what the switch leaves on still works: download and delete
    existing = workdir / "there.txt"
    existing.write_bytes(b"hello")
    give(existing)
    got = await download(client, owner, conn, str(existing))
    assert got.status_code == 200 and await got.get_data() == b"hello"
    gone = await client.delete(
        api(conn, "file"), query_string={"path": str(existing)}, headers=owner.headers
    )
    assert gone.status_code == 200
    assert not existing.exists()


async def test_role_without_the_permission_is_refused_on_an_open_connection(
    client, kernel, make_user, sshd, workdir
):
    role_without = [
        p for p in kernel.permission_names if p not in ("files.download", "files.delete")
    ]
    narrow = await make_user("narrow", permissions=role_without)
    conn = Conn(await sftp_connection(client, narrow, sshd))
    keep = workdir / "keep.txt"
    keep.write_bytes(b"secret")
    give(keep)

    got = await download(client, narrow, conn, str(keep))
    assert got.status_code == 403
    assert (await got.get_json())["code"] == "action_denied"
    gone = await client.delete(
        api(conn, "file"), query_string={"path": str(keep)}, headers=narrow.headers
    )
    assert gone.status_code == 403
    assert keep.read_bytes() == b"secret"
    refused = await audit_entries(client, narrow, "session.action_denied")
    assert {e["details"]["action"] for e in refused} == {"download", "delete"}
    # the role still uploads
    up = await upload(client, narrow, conn, str(workdir / "in.txt"), b"ok")
    assert up.status_code == 200
    assert (workdir / "in.txt").read_bytes() == b"ok"


async def test_actions_field_is_checked_and_kept(client, make_user, sshd):
    owner = await make_user("owner")
    body = await sftp_connection(client, owner, sshd)
    assert set(body["actions"].values()) == {True}
    for bad in ({"upload": "no"}, {"print": False}, ["upload"], None):
        response = await client.put(
            f"/api/v1/connections/{body['id']}", json={"actions": bad}, headers=owner.headers
        )
        assert response.status_code == 400, bad
    response = await client.put(
        f"/api/v1/connections/{body['id']}",
        json={"actions": {"delete": False, "paste": False}},
        headers=owner.headers,
    )
    assert response.status_code == 200
    again = await (
        await client.get(f"/api/v1/connections/{body['id']}", headers=owner.headers)
    ).get_json()
    assert again["actions"] == {
        "upload": True,
        "download": True,
        "delete": False,
        "copy": True,
        "paste": False,
    }
