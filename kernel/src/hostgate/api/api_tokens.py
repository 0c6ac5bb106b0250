"""Personal API tokens: ``/profile/api-tokens`` and ``/api-tokens``.

``/profile/api-tokens`` is one's own; ``/api-tokens`` is everyone's (``users.manage``).
The secret is in the answer to its creation and nowhere else.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, request
from quart_schema import tag, validate_request
from typing_extensions import TypedDict

from ..db.models.identity import ApiToken, User
from ..guards import app_kernel, authenticated, current_caller, interactive, requires
from ..openapi import Ok, answers
from ..services.identity.api_tokens import MAX_LIFETIME_DAYS
from ..timefmt import as_utc, iso, utcnow

blueprint = Blueprint("api_tokens", __name__)

MANAGE = "users.manage"


class CreateTokenBody(BaseModel):
    """A name, a lifetime in days, and the permissions (default: all the caller holds)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    expiresInDays: int = Field(default=90, ge=1, le=MAX_LIFETIME_DAYS)
    permissions: list[str] | None = Field(default=None, max_length=500)


class TokenQuery(BaseModel):
    """Optionally one user's tokens."""

    userId: str | None = Field(default=None, max_length=64)


class TokenOwner(TypedDict):
    """Who holds a token (in the administrators' list)."""

    id: str
    username: str
    displayName: str


class TokenRecord(TypedDict):
    """A token as its owner and administrators see it (never the secret)."""

    id: str
    name: str
    prefix: str
    permissions: list[str]
    createdAt: str
    expiresAt: str
    lastUsedAt: str | None
    lastUsedIp: str
    revokedAt: str | None
    state: str


class OwnedTokenRecord(TokenRecord):
    """A token with its owner."""

    user: TokenOwner


class CreatedToken(TypedDict):
    """A new token: its record and the secret, shown this once."""

    token: TokenRecord
    secret: str


class TokenList(TypedDict):
    """The caller's tokens, newest first."""

    tokens: list[TokenRecord]


class AllTokens(TypedDict):
    """Every user's tokens (or one user's), newest first."""

    tokens: list[OwnedTokenRecord]


def token_json(token: ApiToken) -> TokenRecord:
    """The wire form of a token; ``state`` is ``active``, ``expired`` or ``revoked``."""
    if token.revoked_at is not None:
        state = "revoked"
    elif as_utc(token.expires_at) <= utcnow():
        state = "expired"
    else:
        state = "active"
    return {
        "id": token.id,
        "name": token.name,
        "prefix": token.prefix,
        "permissions": list(token.permissions),
        "createdAt": iso(token.created_at),
        "expiresAt": iso(token.expires_at),
        "lastUsedAt": iso(token.last_used_at),
        "lastUsedIp": token.last_used_ip,
        "revokedAt": iso(token.revoked_at),
        "state": state,
    }


def owned_token_json(token: ApiToken, user: User) -> OwnedTokenRecord:
    """A token with its owner, for administrators."""
    owner: TokenOwner = {
        "id": user.id,
        "username": user.username,
        "displayName": user.display_name,
    }
    return {**token_json(token), "user": owner}


@blueprint.get("/profile/api-tokens")
@authenticated
@tag(["profile"])
@answers(TokenList)
async def list_own_tokens() -> TokenList:
    """The caller's tokens: live, expired and revoked, with their last use."""
    tokens = await app_kernel().api_tokens.owned(current_caller().user_id)
    return {"tokens": [token_json(token) for token in tokens]}


@blueprint.post("/profile/api-tokens")
@interactive
@tag(["profile"])
@validate_request(CreateTokenBody)
@answers(CreatedToken, status=201)
async def create_token(data: CreateTokenBody) -> tuple[CreatedToken, int]:
    """A new token for scripts: the answer holds its secret, which is never shown again.

    Only a signed-in person can make one (not another token); its permissions must be
    ones the caller holds.
    """
    made = await app_kernel().api_tokens.create(
        current_caller(), data.name, data.expiresInDays, data.permissions
    )
    return {"token": token_json(made.token), "secret": made.secret}, 201


@blueprint.delete("/profile/api-tokens/<token_id>")
@authenticated
@tag(["profile"])
@answers(Ok)
async def revoke_own_token(token_id: str) -> Ok:
    """Revoke one of the caller's tokens; sockets it opened close."""
    await app_kernel().api_tokens.revoke(current_caller(), token_id, any_owner=False)
    return {"ok": True}


@blueprint.get("/api-tokens")
@requires(MANAGE)
@tag(["users"])
@answers(AllTokens, query=TokenQuery)
async def list_all_tokens() -> AllTokens:
    """Every user's tokens, or one user's with ``?userId=``."""
    user_id = request.args.get("userId", "").strip() or None
    rows = await app_kernel().api_tokens.everyone(user_id)
    return {"tokens": [owned_token_json(token, user) for token, user in rows]}


@blueprint.delete("/api-tokens/<token_id>")
@requires(MANAGE)
@tag(["users"])
@answers(Ok)
async def revoke_any_token(token_id: str) -> Ok:
    """Revoke anyone's token; sockets it opened close."""
    await app_kernel().api_tokens.revoke(current_caller(), token_id, any_owner=True)
    return {"ok": True}
