"""Usernames that look like others: NFKC and case folding decide uniqueness; invisible
and text-direction characters and mixed scripts are refused, for local accounts and
for the accounts LDAP, OIDC and other login packs create; existing names keep working."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.db.models.identity import Role, User
from hostgate.security.passwords import hash_password_sync
from hostgate.services.identity.usernames import clean_external, problem, username_key
from sqlmodel import select

from testsupport.fixtures import PASSWORD

API = "/api/v1"
FULLWIDTH = "\uff41dmin"  # ａdmin
CYRILLIC = "\u0430dmin"  # а (Cyrillic) + dmin
ZERO_WIDTH = "ad\u200bmin"
RIGHT_TO_LEFT = "\u202eadmin"


async def create_user(client: Any, admin: Any, username: str) -> Any:
    body = {
        "username": username,
        "password": "a long enough password",
        "displayName": "Someone",
        "email": "",
        "role": "user",
    }
    return await client.post(f"{API}/users", headers=admin.headers, json=body)


async def usernames(kernel: Any) -> list[str]:
    async with kernel.db.session() as session:
        return sorted((await session.exec(select(User.username))).all())


@pytest.mark.parametrize(
    ("name", "status", "says"),
    [
        (FULLWIDTH, 409, "already exists"),
        ("ADMIN", 409, "already exists"),
        (CYRILLIC, 400, "scripts (Cyrillic, Latin)"),
        (ZERO_WIDTH, 400, "U+200B"),
        (RIGHT_TO_LEFT, 400, "U+202E"),
        ("adm\u00adin", 400, "U+00AD"),  # soft hyphen
        ("\u3164admin", 400, "U+3164"),  # Hangul filler: a blank letter
        ("admin\ufe0f", 400, "U+FE0F"),  # variation selector
    ],
)
async def test_lookalikes_of_an_existing_name_are_refused(
    client, kernel, admin, name, status, says
):
    response = await create_user(client, admin, name)
    assert response.status_code == status, name
    assert says in (await response.get_json())["error"]
    assert await usernames(kernel) == ["admin"]


@pytest.mark.parametrize("name", ["Jürgen", "Ελένη", "Влад-1", "山田たろう", "김민준", "o'brien.2"])
async def test_names_in_one_script_are_accepted(client, kernel, admin, name):
    response = await create_user(client, admin, name)
    assert response.status_code == 201, await response.get_json()
    async with kernel.db.session() as session:
        user = (await session.exec(select(User).where(User.username == name))).one()
    assert user.username_key == username_key(name)


async def test_the_key_is_nfkc_case_folded(client, admin):
    assert (await create_user(client, admin, "Straße")).status_code == 201
    for lookalike in ("STRASSE", "strasse", "Ｓtraße"):
        response = await create_user(client, admin, lookalike)
        assert response.status_code == 409, lookalike
        assert (await response.get_json())["code"] == "username_taken"


async def test_setup_refuses_a_lookalike_first_admin(client):
    body = {"username": RIGHT_TO_LEFT, "password": "a long enough password", "displayName": "X"}
    response = await client.post(f"{API}/auth/setup", json=body)
    assert response.status_code == 400
    assert (await (await client.get(f"{API}/auth/status")).get_json())["needsSetup"] is True


async def test_an_existing_account_keeps_signing_in(client, kernel):
    """Stored before this check, under the lower-cased name as key: no migration needed."""
    async with kernel.db.session() as session:
        role = (await session.exec(select(Role).where(Role.name == "user"))).one()
        user = User(
            username="Straße",
            username_key="straße",  # what older releases stored
            display_name="Old",
            password_hash=hash_password_sync(PASSWORD),
            role_id=role.id,
        )
        session.add(user)
        await session.commit()
    for typed in ("Straße", "straße"):
        response = await client.post(
            f"{API}/auth/login", json={"username": typed, "password": PASSWORD}
        )
        assert response.status_code == 200, (typed, await response.get_json())


@pytest.mark.parametrize("provider", ["ldap", "oidc"])
async def test_provisioned_names_lose_invisible_characters_and_never_mix_scripts(
    kernel, admin, provider
):
    made = {
        name: await kernel.logins.provision_external(provider, f"id-{n}", name, name, "")
        for n, name in enumerate([ZERO_WIDTH, RIGHT_TO_LEFT, CYRILLIC, FULLWIDTH])
    }
    assert made[ZERO_WIDTH].username == f"admin_{provider}"
    assert made[RIGHT_TO_LEFT].username == f"admin_{provider}2"
    assert made[CYRILLIC].username == f"{provider}_id-2"  # the provider's id instead
    assert username_key(made[FULLWIDTH].username) == f"admin_{provider}3"
    for user in made.values():
        assert problem(user.username) is None
        assert user.username_key == username_key(user.username)
    assert len({user.username_key for user in made.values()} | {"admin"}) == 5


def test_clean_external_keeps_inner_spaces_and_drops_the_rest():
    assert clean_external("  John\u200b  Smith\u202c ") == "John Smith"
    assert clean_external("\u0430dmin") == ""
