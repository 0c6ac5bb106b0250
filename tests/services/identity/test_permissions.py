"""The permission matrix over every identity route: 401 without a token, 403 without the
permission, success with it (or, for routes any user may call, with any session)."""

import itertools

import pyotp
from hostgate.guards import guard_of

from tests.services.identity.helpers import API

BLUEPRINTS = {"auth", "users", "roles", "profile", "audit", "api_tokens"}
NUMBERS = itertools.count()
PUBLIC = {
    ("GET", "/auth/status"),
    ("POST", "/auth/setup"),
    ("GET", "/auth/providers"),
    ("POST", "/auth/login"),
    ("POST", "/auth/login/mfa"),
    ("POST", "/auth/invite/check"),
    ("POST", "/auth/invite/accept"),
}


async def custom_role(ctx):
    admin = ctx["admin"]
    response = await ctx["client"].post(
        f"{API}/roles", headers=admin.headers, json={"name": f"r{next(NUMBERS)}"}
    )
    return (await response.get_json())["id"]


async def users_target(ctx):
    # holds nothing, so no permission holder is outranked by it (see test_privileges)
    return (await ctx["make_user"](permissions=[])).id


async def invited_target(ctx):
    """A user invited (no password yet) into a role that holds nothing."""
    role_id = await custom_role(ctx)
    response = await ctx["client"].post(
        f"{API}/users/invite",
        headers=ctx["admin"].headers,
        json={"username": f"invited{next(NUMBERS)}", "role": role_id},
    )
    return (await response.get_json())["user"]["id"]


async def session_id(ctx, user):
    body = await (
        await ctx["client"].get(f"{API}/profile/login-sessions", headers=user.headers)
    ).get_json()
    return body["sessions"][0]["id"]


async def mfa_code(ctx, user):
    response = await ctx["client"].post(f"{API}/profile/mfa/setup", headers=user.headers)
    return pyotp.TOTP((await response.get_json())["secret"]).now()


async def no_target(ctx, user=None):
    return None


async def api_token(ctx, user):
    """A personal API token of ``user`` holding all they hold: ``(id, secret)``."""
    response = await ctx["client"].post(
        f"{API}/profile/api-tokens", headers=user.headers, json={"name": "matrix"}
    )
    assert response.status_code == 201, await response.get_json()
    made = await response.get_json()
    return made["token"]["id"], made["secret"]


async def admins_token(ctx):
    return (await api_token(ctx, ctx["admin"]))[0]


class TokenUser:
    """A user calling with a personal API token instead of their login."""

    def __init__(self, user, secret):
        self.user = user
        self.headers = {"Authorization": f"Bearer {secret}"}

    def __getattr__(self, name):
        return getattr(self.user, name)


# (method, path) -> (permission or None, path builder, body builder)
ROUTES = {
    ("GET", "/users"): ("users.manage", None, None),
    ("POST", "/users"): (
        "users.manage",
        None,
        # the caller's own role: nobody may grant a role above their own
        lambda ctx, u, t: {
            "username": f"made{next(NUMBERS)}",
            "password": "long-enough",
            "role": u.role_id,
        },
    ),
    ("PUT", "/users/<user_id>"): ("users.manage", users_target, lambda *_: {"displayName": "N"}),
    ("DELETE", "/users/<user_id>"): ("users.manage", users_target, None),
    ("POST", "/users/<user_id>/reset-password"): (
        "users.manage",
        users_target,
        lambda *_: {"newPassword": "long-enough"},
    ),
    ("POST", "/users/<user_id>/unlock"): ("users.manage", users_target, None),
    ("POST", "/users/<user_id>/suspend"): ("users.manage", users_target, None),
    ("POST", "/users/<user_id>/resume"): ("users.manage", users_target, None),
    ("POST", "/users/invite"): (
        "users.manage",
        None,
        lambda ctx, u, t: {"username": f"inv{next(NUMBERS)}", "role": u.role_id},
    ),
    ("POST", "/users/<user_id>/invite"): ("users.manage", invited_target, lambda *_: {}),
    ("DELETE", "/users/<user_id>/invite"): ("users.manage", invited_target, None),
    ("GET", "/roles"): ("roles.manage", None, None),
    ("GET", "/roles/permissions"): ("roles.manage", None, None),
    ("POST", "/roles"): ("roles.manage", None, lambda *_: {"name": f"role{next(NUMBERS)}"}),
    ("PUT", "/roles/<role_id>"): ("roles.manage", custom_role, lambda *_: {"description": "d"}),
    ("POST", "/roles/<role_id>/reset"): ("roles.manage", lambda ctx: _value("user"), None),
    ("DELETE", "/roles/<role_id>"): ("roles.manage", custom_role, None),
    ("GET", "/audit/users"): ("audit.view_any", None, None),
    ("GET", "/audit"): (None, None, None),
    ("GET", "/audit/event-types"): (None, None, None),
    ("GET", "/audit/export"): (None, None, None),
    ("GET", "/audit/verify"): ("audit.view_any", None, None),
    ("GET", "/auth/me"): (None, None, None),
    ("POST", "/auth/logout"): (None, None, None),
    ("POST", "/auth/ws-ticket"): (None, None, None),
    ("GET", "/profile"): (None, None, None),
    ("PUT", "/profile"): (None, None, lambda *_: {"displayName": "Someone"}),
    ("PUT", "/profile/password"): (
        None,
        None,
        lambda ctx, u, t: {"currentPassword": u.password, "newPassword": "another-pass"},
    ),
    ("GET", "/profile/ssh-prefs"): (None, None, None),
    ("PUT", "/profile/ssh-prefs"): (None, None, lambda *_: {"theme": "nord"}),
    ("DELETE", "/profile/ssh-prefs"): (None, None, None),
    ("GET", "/profile/mfa/status"): (None, None, None),
    ("POST", "/profile/mfa/setup"): (None, None, None),
    ("POST", "/profile/mfa/verify"): (None, "mfa", None),
    ("POST", "/profile/mfa/disable"): (None, None, lambda ctx, u, t: {"password": u.password}),
    ("POST", "/profile/dismiss-warning"): (None, None, lambda *_: {"warning": "w"}),
    ("GET", "/profile/login-sessions"): (None, None, None),
    ("DELETE", "/profile/login-sessions"): (None, None, None),
    ("DELETE", "/profile/login-sessions/<session_id>"): (None, "session", None),
    ("GET", "/profile/api-tokens"): (None, None, None),
    ("POST", "/profile/api-tokens"): (None, None, lambda *_: {"name": "made"}),
    ("DELETE", "/profile/api-tokens/<token_id>"): (None, "api_token", None),
    ("GET", "/api-tokens"): ("users.manage", None, None),
    ("DELETE", "/api-tokens/<token_id>"): ("users.manage", admins_token, None),
}

# routes that need a person signed in: a personal API token is refused (403) there
INTERACTIVE = {
    ("POST", "/auth/logout"),
    ("PUT", "/profile/password"),
    ("POST", "/profile/mfa/setup"),
    ("POST", "/profile/mfa/verify"),
    ("POST", "/profile/mfa/disable"),
    ("DELETE", "/profile/login-sessions"),
    ("DELETE", "/profile/login-sessions/<session_id>"),
    ("POST", "/profile/api-tokens"),
}


# resetting a built-in role grants its defaults, which the caller must hold themselves
HOLDS_ALSO = {
    ("POST", "/roles/<role_id>/reset"): (
        "connections.create",
        "connections.edit_own",
        "connections.delete_own",
        "connections.share",
        "connections.import_export",
        "files.upload",
        "files.download",
        "files.delete",
        "clipboard.copy",
        "clipboard.paste",
    ),
}


async def _value(value):
    return value


def own_rules(app):
    found = {}
    for rule in app.url_map.iter_rules():
        if rule.endpoint.split(".")[0] not in BLUEPRINTS:
            continue
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            found[(method, rule.rule.removeprefix(API))] = guard_of(
                app.view_functions[rule.endpoint]
            )
    return found


def test_the_matrix_covers_every_identity_route(app):
    rules = own_rules(app)
    assert set(rules) == set(ROUTES) | PUBLIC
    for key, guard in rules.items():
        if key in PUBLIC:
            assert guard[0] == "public", key
            continue
        permission = ROUTES[key][0]
        if permission is None:
            kind = "interactive" if key in INTERACTIVE else "authenticated"
            assert guard == (kind, ()), key
        else:
            assert guard == ("permission", (permission,)), key


async def build(ctx, key, user):
    _, target, body = ROUTES[key]
    path = key[1]
    value = None
    if target == "session":
        value = await session_id(ctx, user)
    elif target == "api_token":
        value = (await api_token(ctx, user))[0]
    elif target == "mfa":
        value = await mfa_code(ctx, user)
    elif target is not None:
        value = await target(ctx)
    if value is not None and "<" in path:
        path = path[: path.index("<")] + value + path[path.index(">") + 1 :]
    if target == "mfa":
        return path, {"token": value}
    return path, (body(ctx, user, value) if body else None)


async def call(client, method, path, user=None, body=None):
    headers = user.headers if user is not None else {}
    return await client.open(f"{API}{path}", method=method, headers=headers, json=body)


async def test_permission_matrix(app, make_user, admin, kernel):
    client = app.test_client()
    ctx = {"make_user": make_user, "admin": admin, "client": client, "kernel": kernel}
    for key, (permission, _, _) in ROUTES.items():
        method = key[0]
        anonymous = app.test_client()  # no cookies at all
        path, body = await build(ctx, key, admin)
        response = await call(anonymous, method, path, None, body)
        assert response.status_code == 401, key

        if permission is not None:
            without = await make_user(
                permissions=[p for p in kernel.permission_names if p != permission]
            )
            path, body = await build(ctx, key, without)
            response = await call(client, method, path, without, body)
            assert response.status_code == 403, key
            holder = await make_user(permissions=[permission, *HOLDS_ALSO.get(key, ())])
        else:
            holder = await make_user(permissions=[])
        # made first: the login call below may end the holder's login session
        scripted = TokenUser(holder, (await api_token(ctx, holder))[1])
        path, body = await build(ctx, key, holder)
        response = await call(client, method, path, holder, body)
        assert 200 <= response.status_code < 300, (key, await response.get_json())

        # the same holder's API token: refused where a login is needed, allowed elsewhere
        if key not in INTERACTIVE:
            path, body = await build(ctx, key, holder)
        response = await call(client, method, path, scripted, body)
        if key in INTERACTIVE:
            assert response.status_code == 403, key
            assert (await response.get_json())["code"] == "api_token_not_allowed", key
        else:
            assert 200 <= response.status_code < 300, (key, await response.get_json())
