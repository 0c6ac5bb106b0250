"""Browser approval of an SSH sign-in, for users without a key or a password to type.

At the password prompt an empty answer asks for it: the door prints a short link
(``<sshd.web_url>/ssh-approve/ABCD-EFGH``), the user opens it in the browser app,
where they are signed in, sees what is asking (client address, key fingerprint if
one was offered, time) and approves or refuses. A request lives ``APPROVAL_SECONDS``
and is decided once; requests and decisions are kept in ``kernel.shared``, so the
browser may reach any node.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta

from hostgate import KernelAPI, iso, utcnow

APPROVAL_SECONDS = 120
"""How long a request may wait for the browser (2 minutes)."""
POLL_SECONDS = 0.5
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: read off a terminal and typed, they would be mixed up."""
CODE_LENGTH = 8
APPROVED = "approved"
REFUSED = "refused"
PATH = "/ssh-approve/"


@dataclass(frozen=True)
class ApprovalRequest:
    """What an SSH client asks the user to approve."""

    code: str
    user_id: str
    username: str
    client_address: str
    key_fingerprint: str
    created_at: str
    expires_at: str
    deadline: float  # time.time() at expiry

    def to_json(self) -> dict[str, str]:
        """The API's shape (what the browser shows)."""
        return {
            "code": self.code,
            "username": self.username,
            "clientAddress": self.client_address,
            "keyFingerprint": self.key_fingerprint,
            "createdAt": self.created_at,
            "expiresAt": self.expires_at,
        }


def new_code() -> str:
    """``ABCD-EFGH``: 40 random bits, plenty for a code that lives two minutes."""
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return f"{raw[:4]}-{raw[4:]}"


def normal_code(text: str) -> str | None:
    """The code as stored (upper case, one dash), None when it cannot be one."""
    raw = text.replace("-", "").replace(" ", "").upper()
    if len(raw) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in raw):
        return None
    return f"{raw[:4]}-{raw[4:]}"


def _request_key(code: str) -> str:
    return f"sshd.approval.{code}"


def _decision_key(code: str) -> str:
    return f"sshd.approval.{code}.decision"


class Approvals:
    """Requests made by the door and decided in the browser, on any node."""

    def __init__(self, kernel: KernelAPI) -> None:
        self.kernel = kernel

    async def create(self, user_id: str, username: str, client_address: str, key: str) -> str:
        """A new request; its code.

        ``user_id`` is empty for a name no account has: nobody can approve it, it runs
        out like any other, and the client learns nothing about which names exist.
        """
        code = new_code()
        now = utcnow()
        request = ApprovalRequest(
            code=code,
            user_id=user_id,
            username=username,
            client_address=client_address,
            key_fingerprint=key,
            created_at=iso(now),
            expires_at=iso(now + timedelta(seconds=APPROVAL_SECONDS)),
            deadline=time.time() + APPROVAL_SECONDS,
        )
        await self.kernel.shared.put(
            _request_key(code), json.dumps(asdict(request)), ttl=APPROVAL_SECONDS
        )
        return code

    async def view(self, code: str, user_id: str) -> ApprovalRequest | None:
        """The pending request ``code`` names, when it is this user's; None otherwise."""
        normal = normal_code(code)
        if normal is None or not user_id:
            return None
        raw = await self.kernel.shared.get(_request_key(normal))
        if raw is None:
            return None
        try:
            request = ApprovalRequest(**json.loads(raw))
        except (TypeError, ValueError):
            return None
        return request if request.user_id == user_id else None

    async def decide(self, code: str, user_id: str, approve: bool) -> ApprovalRequest | None:
        """Approve or refuse this user's pending request, once; None when there is none."""
        request = await self.view(code, user_id)
        if request is None:
            return None
        # of two tabs deciding at once, one takes the request; the other finds none
        if await self.kernel.shared.take(_request_key(request.code)) is None:
            return None
        left = request.deadline - time.time()
        if left <= 0:
            return None
        await self.kernel.shared.put(
            _decision_key(request.code), APPROVED if approve else REFUSED, ttl=left
        )
        return request

    async def wait(self, code: str, deadline: float, gone: Callable[[], bool]) -> str | None:
        """The decision on ``code``: ``approved``/``refused``, None when it ran out first.

        Polled (every half second) so a decision made on any node is seen; ``gone``
        stops the wait when the client hung up.
        """
        while time.time() < deadline and not gone():
            decision = await self.kernel.shared.take(_decision_key(code))
            if decision is not None:
                return decision
            await asyncio.sleep(POLL_SECONDS)
        return None


def approval_link(web_url: str, code: str) -> str:
    """What the client prints: the browser app's address and the code's page."""
    return f"{web_url.rstrip('/')}{PATH}{code}" if web_url else f"{PATH}{code}"
