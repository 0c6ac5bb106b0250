"""The second-step contract (``register_second_factors``): a pack built only from
``hostgate`` exports offers a second step that counts as the required set-up and answers
the pending sign-in with the kernel's state (single use, rate limit, audit)."""

import pytest
from hostgate import (
    NotAuthenticated,
    SecondFactor,
    current_kernel,
    hookimpl,
    public,
    request_client,
    signed_in_response,
)
from hostgate.services.identity.second_factors import SecondFactors
from quart import Blueprint, request

from tests.services.identity.helpers import API, audit_entries, bearer, login

HOLDERS: set[str] = set()  # usernames holding a card
BROKEN: set[str] = set()  # usernames whose check raises


def build_pack():
    """A toy second step: a "card" whose right answer is the word ``card``."""
    bp = Blueprint("card", __name__)

    async def holds(kernel, account):
        if account.username in BROKEN:
            raise RuntimeError("the card reader is broken")
        return account.username in HOLDERS

    @bp.post("/auth/login/card")
    @public
    async def card_step():
        kernel = current_kernel()
        client = request_client()
        body = await request.get_json()
        user = await kernel.logins.begin_second_step(body["mfaToken"], client, method="card")
        if body["answer"] != "card":
            await kernel.logins.second_step_failed(user, client, method="card", reason="no_card")
            raise NotAuthenticated("No card", code="no_card")
        signed = await kernel.logins.finish_second_step(
            body["mfaToken"], user, client, method="card", details={"slot": 1}
        )
        return signed_in_response(signed)

    class Pack:
        @hookimpl
        def register_blueprints(self):
            return [bp]

        @hookimpl
        def register_second_factors(self):
            return [SecondFactor(name="card", holds=holds)]

    return Pack()


@pytest.fixture
def plugins():
    HOLDERS.clear()
    BROKEN.clear()
    return [build_pack()]


async def require_for_users(kernel):
    await kernel.settings.update(
        {"security.require_mfa": "roles", "security.require_mfa_roles": "user"}
    )


async def test_a_pack_step_is_the_set_up_and_the_step_after_the_password(client, kernel, make_user):
    ivy = await make_user("ivy")
    await require_for_users(kernel)
    blocked = await client.get(f"{API}/connections", headers=ivy.headers)
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    HOLDERS.add("ivy")
    await kernel.settings.update({"app.name": "a commit empties the read cache"})
    assert (await client.get(f"{API}/connections", headers=ivy.headers)).status_code == 200
    assert await kernel.logins.second_factors(await kernel.logins.get_user(ivy.id)) == ["card"]

    pending = await (await login(client, "ivy", ivy.password)).get_json()
    assert pending["mfaRequired"] is True and pending["mfaMethods"] == ["card"]
    assert "token" not in pending
    # the TOTP route does not take a token that offered only the card
    totp = await client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": pending["mfaToken"], "code": "123456"}
    )
    assert (await totp.get_json())["code"] == "invalid_mfa_token"
    wrong = await client.post(
        f"{API}/auth/login/card", json={"mfaToken": pending["mfaToken"], "answer": "pin"}
    )
    assert wrong.status_code == 401
    failed = (await audit_entries(kernel, "auth.login_failed"))[-1].details
    assert failed["reason"] == "no_card" and failed["secondFactor"] == "card"
    right = await client.post(
        f"{API}/auth/login/card", json={"mfaToken": pending["mfaToken"], "answer": "card"}
    )
    assert right.status_code == 200
    token = (await right.get_json())["token"]
    assert (await client.get(f"{API}/connections", headers=bearer(token))).status_code == 200
    entry = (await audit_entries(kernel, "auth.login"))[-1].details
    assert entry == {"method": "local", "mfa": True, "secondFactor": "card", "slot": 1}
    again = await client.post(
        f"{API}/auth/login/card", json={"mfaToken": pending["mfaToken"], "answer": "card"}
    )
    assert (await again.get_json())["code"] == "invalid_mfa_token"

    # five attempts per five minutes per user, the TOTP budget (a sign-in starts it over)
    pending = await (await login(client, "ivy", ivy.password)).get_json()
    codes = []
    for _ in range(6):
        answer = await client.post(
            f"{API}/auth/login/card", json={"mfaToken": pending["mfaToken"], "answer": "pin"}
        )
        codes.append(answer.status_code)
    assert codes == [401, 401, 401, 401, 401, 429]


async def test_not_required_no_step_and_a_broken_check_holds_nothing(client, kernel, make_user):
    jay = await make_user("jay")
    HOLDERS.add("jay")
    signed = await (await login(client, "jay", jay.password)).get_json()
    assert "token" in signed  # the role requires nothing: the password is enough

    BROKEN.add("jay")
    await require_for_users(kernel)
    assert await kernel.logins.second_factors(await kernel.logins.get_user(jay.id)) == []
    blocked = await client.get(f"{API}/connections", headers=jay.headers)
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    onboarding = await (await login(client, "jay", jay.password)).get_json()
    assert "mfaRequired" not in onboarding
    me = await client.get(f"{API}/auth/me", headers=bearer(onboarding["token"]))
    assert (await me.get_json())["user"]["pendingStep"] == "mfa_enrollment"


def test_the_name_totp_is_the_kernels(kernel):
    taken = SecondFactor(name="totp", holds=lambda kernel, account: True)
    with pytest.raises(ValueError, match="totp"):
        SecondFactors({"totp": taken}, settings=kernel.settings, kernel=kernel)
