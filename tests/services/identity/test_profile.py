"""/profile: the profile object, updates, SSH preferences, dismissed warnings."""

from tests.services.identity.helpers import API, audit_entries


async def test_profile_shape_and_defaults(client, make_user):
    user = await make_user("jane.doe")
    response = await client.get(f"{API}/profile", headers=user.headers)
    assert response.status_code == 200
    body = await response.get_json()
    assert {
        "id",
        "username",
        "displayName",
        "email",
        "avatarText",
        "role",
        "permissions",
        "dismissedWarnings",
    } <= set(body)
    assert body["email"] == ""  # never null
    assert body["avatarText"] == "JD"  # initials of "Jane.Doe"
    assert body["role"] == "user"
    assert isinstance(body["permissions"], list) and body["dismissedWarnings"] == []


async def test_update_profile(client, make_user, kernel):
    user = await make_user("kai", email="kai@example.com")
    response = await client.put(
        f"{API}/profile",
        headers=user.headers,
        json={"displayName": "Kai Lee", "email": "kai@lee.example", "avatarText": "KL!"},
    )
    assert response.status_code == 200 and await response.get_json() == {"success": True}
    body = await (await client.get(f"{API}/profile", headers=user.headers)).get_json()
    assert (body["displayName"], body["email"], body["avatarText"]) == (
        "Kai Lee",
        "kai@lee.example",
        "KL!",
    )
    cleared = await client.put(
        f"{API}/profile", headers=user.headers, json={"email": "", "avatarText": ""}
    )
    assert cleared.status_code == 200
    body = await (await client.get(f"{API}/profile", headers=user.headers)).get_json()
    assert body["email"] == "" and body["avatarText"] == "KL"
    event = (await audit_entries(kernel, "profile.updated"))[0]
    assert event.details["after"]["displayName"] == "Kai Lee"

    for bad in (
        {"email": "nope"},
        {"displayName": ""},
        {"avatarText": "x" * 17},
        {"role": "admin"},
    ):
        response = await client.put(f"{API}/profile", headers=user.headers, json=bad)
        assert response.status_code == 400, bad


async def test_ssh_prefs_defaults_overlay_and_reset(client, make_user, kernel):
    user = await make_user("lee")
    defaults = await (await client.get(f"{API}/profile/ssh-prefs", headers=user.headers)).get_json()
    assert defaults == {
        "fontFamily": '"Fira Code", monospace',
        "fontSize": 14,
        "cursorStyle": "block",
        "cursorBlink": True,
        "theme": "vscode-dark",
        "scrollback": 5000,
    }
    await kernel.settings.update({"ssh.theme": "nord", "ssh.font_size": 13})
    response = await client.put(
        f"{API}/profile/ssh-prefs",
        headers=user.headers,
        json={"fontSize": 16, "cursorBlink": False, "theme": "my-own-theme"},
    )
    assert response.status_code == 200 and await response.get_json() == {"ok": True}
    await client.put(f"{API}/profile/ssh-prefs", headers=user.headers, json={"scrollback": 100})
    prefs = await (await client.get(f"{API}/profile/ssh-prefs", headers=user.headers)).get_json()
    assert prefs["fontSize"] == 16 and isinstance(prefs["fontSize"], int)
    assert prefs["cursorBlink"] is False and prefs["theme"] == "my-own-theme"
    assert prefs["scrollback"] == 100 and prefs["cursorStyle"] == "block"

    for bad in (
        {"fontSize": "16"},
        {"cursorBlink": "false"},
        {"cursorStyle": "beam"},
        {"scrollback": -1},
        {"theme": "t" * 65},
        {"colour": "red"},
    ):
        response = await client.put(f"{API}/profile/ssh-prefs", headers=user.headers, json=bad)
        assert response.status_code == 400, bad

    assert (
        await client.delete(f"{API}/profile/ssh-prefs", headers=user.headers)
    ).status_code == 200
    prefs = await (await client.get(f"{API}/profile/ssh-prefs", headers=user.headers)).get_json()
    assert prefs["theme"] == "nord" and prefs["fontSize"] == 13 and prefs["cursorBlink"] is True


async def test_dismiss_warning_is_remembered_once(client, make_user):
    user = await make_user("mo")
    for _ in range(2):
        response = await client.post(
            f"{API}/profile/dismiss-warning", headers=user.headers, json={"warning": "insecure_key"}
        )
        assert response.status_code == 200 and await response.get_json() == {"ok": True}
    me = await (await client.get(f"{API}/auth/me", headers=user.headers)).get_json()
    assert me["user"]["dismissedWarnings"] == ["insecure_key"]
    empty = await client.post(
        f"{API}/profile/dismiss-warning", headers=user.headers, json={"warning": ""}
    )
    assert empty.status_code == 400
