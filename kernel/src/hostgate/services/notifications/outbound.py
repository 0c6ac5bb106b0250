"""Outbound requests for channel packs: policy-checked, pinned to the checked address.

Every destination goes through the target network policy (``kernel.netpolicy``)
after DNS resolution, and the request connects to the very address that was
checked (the Host header and TLS server name stay the original host, so
certificates are verified against it). Redirects are not followed, proxies from
the environment are ignored, and every request has a timeout.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from ...errors import InvalidInput, RemoteError, RemoteTimeout, RemoteUnreachable

if TYPE_CHECKING:
    from ...kernel import Kernel

RESPONSE_LIMIT = 64 * 1024


@dataclass(frozen=True)
class OutboundResponse:
    """Status, headers and the first 64 KiB (or the caller's limit) of a response body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        """The body as text (invalid bytes replaced)."""
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""
        import json

        try:
            return json.loads(self.body)
        except ValueError:
            return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Outbound:
    """The one way channel packs reach the network."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.timeout = 15.0

    async def check(self, host: str, port: int, *, purpose: str) -> str:
        """Resolve ``host`` under the network policy; return the address to connect to."""
        policy = getattr(self.kernel, "netpolicy", None)
        if policy is None:
            return host
        address: str = await policy.resolve_allowed(host, port, purpose=purpose)
        return address

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        purpose: str = "webhook",
        timeout: float | None = None,
        limit: int = RESPONSE_LIMIT,
    ) -> OutboundResponse:
        """Send one HTTP(S) request to a policy-approved address; Remote* errors on failure.

        ``timeout`` (default ``self.timeout``) bounds each network step; ``limit`` is
        how much of the body is kept.
        """
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError, ValueError):
            raise InvalidInput(f"{url!r} is not a valid URL") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise InvalidInput(f"{purpose} URLs must be http:// or https:// with a host")
        host = parsed.host
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        address = await self.check(host, port, purpose=purpose)
        send_headers = {str(k): str(v) for k, v in (headers or {}).items()}
        extensions: dict[str, Any] = {}
        target = parsed
        if address != host:
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise RemoteUnreachable(f"cannot resolve {host}") from None
            target = parsed.copy_with(host=address)
            if not any(k.lower() == "host" for k in send_headers):
                send_headers["Host"] = parsed.netloc.decode("ascii")
            if parsed.scheme == "https":
                extensions["sni_hostname"] = host
        seconds = self.timeout if timeout is None else timeout
        timeout_config = httpx.Timeout(seconds)
        try:
            async with (
                httpx.AsyncClient(
                    timeout=timeout_config, verify=True, follow_redirects=False, trust_env=False
                ) as client,
                client.stream(
                    method,
                    target,
                    json=json,
                    content=content,
                    headers=send_headers,
                    extensions=extensions,
                ) as response,
            ):
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) >= limit:
                        break
                return OutboundResponse(
                    response.status_code, dict(response.headers), bytes(body[:limit])
                )
        except httpx.TimeoutException:
            raise RemoteTimeout(f"{host} did not answer within {seconds:g} s") from None
        except httpx.ConnectError as exc:
            raise RemoteUnreachable(
                f"cannot connect to {host}:{port}: {_short(str(exc)) or type(exc).__name__}"
            ) from None
        except httpx.HTTPError as exc:
            raise RemoteError(
                f"request to {host} failed: {_short(str(exc)) or type(exc).__name__}"
            ) from None

    @staticmethod
    def describe_failure(service: str, response: OutboundResponse) -> str:
        """``"<service> answered HTTP 500: <body excerpt>"`` for error messages."""
        excerpt = _short(response.text, 200)
        suffix = f": {excerpt}" if excerpt else ""
        return f"{service} answered HTTP {response.status}{suffix}"
