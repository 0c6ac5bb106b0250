"""The identity flow on PostgreSQL: setup race, login, lockout, last manager, audit search."""

import asyncio

from hostgate.app import create_app

from tests.services.identity.helpers import API, bearer


async def test_identity_on_postgres(config, postgres_url):
    app = create_app(config.with_overrides(database_url=postgres_url))
    async with app.test_app() as test_app:
        client = test_app.test_client()
        kernel = app.extensions["hostgate"]

        async def setup(name):
            return await client.post(
                f"{API}/auth/setup", json={"username": name, "password": "long-enough"}
            )

        results = await asyncio.gather(*(setup(f"root{i}") for i in range(3)))
        assert sorted(r.status_code for r in results) == [200, 409, 409]
        token = [await r.get_json() for r in results if r.status_code == 200][0]["token"]
        admin = bearer(token)
        me = await (await client.get(f"{API}/auth/me", headers=admin)).get_json()

        await kernel.settings.update({"security.max_login_attempts": 2})
        created = await client.post(
            f"{API}/users",
            headers=admin,
            json={"username": "pg-user", "password": "long-enough", "displayName": "Mixed Case"},
        )
        assert created.status_code == 201
        for _ in range(2):
            wrong = await client.post(
                f"{API}/auth/login", json={"username": "pg-user", "password": "nope-nope"}
            )
            assert wrong.status_code == 401
        locked = await client.post(
            f"{API}/auth/login", json={"username": "pg-user", "password": "long-enough"}
        )
        assert locked.status_code == 429

        demote = await client.put(
            f"{API}/users/{me['user']['id']}", headers=admin, json={"role": "user"}
        )
        assert demote.status_code == 409

        found = await client.get(f"{API}/audit?search=MIXED%20case", headers=admin)
        body = await found.get_json()
        assert body["pagination"]["total"] == 1
        assert body["entries"][0]["eventType"] == "user.created"
        beyond = await (
            await client.get(f"{API}/audit?search=mixed&page=3", headers=admin)
        ).get_json()
        assert beyond["entries"] == [] and beyond["pagination"]["total"] == 1
