"""Outbound requests for packs: policy-checked, pinned to the checked address.

Every destination goes through the target network policy (``kernel.netpolicy``)
after DNS resolution, and the request connects to the very address that was
checked (the Host header and TLS server name stay the original host, so
certificates are verified against it). :class:`PolicyTransport` does that for
each request an httpx client sends: ``Outbound.request`` uses it, and packs with
an HTTP client of their own (the OIDC pack's OAuth client) get one from
``Outbound.transport``. Redirects are not followed, proxies from the environment
are ignored, and every request has a timeout.

Each request is logged once by ``hostgate.outbound`` with the method, the host and
the status (or the failure), never the path or query: webhook URLs, ``?token=``
values and Telegram bot tokens live there. httpx's own request lines are silenced
(``logging_setup.silence_libraries``), and failure texts are scrubbed of the URL.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import (
    ApiError,
    InvalidInput,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
    redact,
)

if TYPE_CHECKING:
    from .netpolicy import NetworkPolicy

RESPONSE_LIMIT = 64 * 1024

log = logging.getLogger("hostgate.outbound")


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


def _url_secrets(*urls: httpx.URL) -> list[str]:
    """The parts of a URL that may be secret: the whole URL, its path and its query."""
    parts: list[str] = []
    for url in urls:
        parts.extend([str(url), url.raw_path.decode("ascii", "replace"), url.path])
        if url.query:
            parts.append(url.query.decode("ascii", "replace"))
    return sorted({p for p in parts if len(p) > 1}, key=len, reverse=True)


def default_port(url: httpx.URL) -> int:
    """The URL's port, or its scheme's default."""
    return url.port or (443 if url.scheme == "https" else 80)


class PolicyTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends each request to the address the network policy approved.

    The request's host is resolved and checked before anything connects (every
    request the client sends passes here, a followed redirect too); the request
    then goes to the checked address, keeping the original Host header and, over
    TLS, the original server name, so certificates are checked against it.
    """

    def __init__(
        self, outbound: Outbound, purpose: str, verify: ssl.SSLContext | bool = True
    ) -> None:
        self.outbound = outbound
        self.purpose = purpose
        self.inner = httpx.AsyncHTTPTransport(verify=verify, trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check the destination, pin the request to the approved address, send it."""
        url = request.url
        if url.scheme not in ("http", "https") or not url.host:
            raise InvalidInput(f"{self.purpose} URLs must be http:// or https:// with a host")
        host = url.host
        address = await self.outbound.check(host, default_port(url), purpose=self.purpose)
        if address != host:
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise RemoteUnreachable(f"cannot resolve {host}") from None
            request.url = url.copy_with(host=address)
            if url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": host}
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self.inner.aclose()


class Outbound:
    """The one way packs reach the network over HTTP, and resolve a host under the policy."""

    def __init__(self, netpolicy: NetworkPolicy | None) -> None:
        self.netpolicy = netpolicy
        self.timeout = 15.0

    async def check(self, host: str, port: int, *, purpose: str) -> str:
        """Resolve ``host`` under the network policy; return the address to connect to."""
        policy = self.netpolicy
        if policy is None:
            return host
        address: str = await policy.resolve_allowed(host, port, purpose=purpose)
        return address

    def transport(
        self, *, purpose: str, verify: ssl.SSLContext | bool = True
    ) -> httpx.AsyncBaseTransport:
        """A :class:`PolicyTransport` for a pack's own httpx client."""
        return PolicyTransport(self, purpose, verify)

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
        port = default_port(parsed)
        send_headers = {str(k): str(v) for k, v in (headers or {}).items()}
        seconds = self.timeout if timeout is None else timeout
        where = f"{method} {parsed.netloc.decode('ascii', 'replace')}"
        started = time.monotonic()
        try:
            response = await self._send(
                PolicyTransport(self, purpose),
                method,
                parsed,
                json,
                content,
                send_headers,
                seconds,
                limit,
            )
        except httpx.TimeoutException:
            failure: ApiError = RemoteTimeout(f"{host} did not answer within {seconds:g} s")
        except httpx.ConnectError as exc:
            failure = RemoteUnreachable(
                f"cannot connect to {host}:{port}: {self._reason(exc, parsed)}"
            )
        except httpx.HTTPError as exc:
            failure = RemoteError(f"request to {host} failed: {self._reason(exc, parsed)}")
        else:
            log.info(
                "outbound %s -> HTTP %d (%s, %.0f ms)",
                where,
                response.status,
                purpose,
                (time.monotonic() - started) * 1000,
            )
            return response
        log.info("outbound %s failed (%s): %s", where, purpose, failure.message)
        raise failure

    @staticmethod
    async def _send(
        transport: PolicyTransport,
        method: str,
        target: httpx.URL,
        json: Any,
        content: bytes | None,
        headers: Mapping[str, str],
        seconds: float,
        limit: int,
    ) -> OutboundResponse:
        async with (
            httpx.AsyncClient(
                transport=transport,
                timeout=httpx.Timeout(seconds),
                follow_redirects=False,
                trust_env=False,
            ) as client,
            client.stream(method, target, json=json, content=content, headers=headers) as response,
        ):
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) >= limit:
                    break
            return OutboundResponse(
                response.status_code, dict(response.headers), bytes(body[:limit])
            )

    @staticmethod
    def _reason(exc: Exception, *urls: httpx.URL) -> str:
        """An exception's text, short, without the URL's path or query."""
        text = redact(str(exc), _url_secrets(*urls))
        return _short(text) or type(exc).__name__

    @staticmethod
    def describe_failure(service: str, response: OutboundResponse) -> str:
        """``"<service> answered HTTP 500: <body excerpt>"`` for error messages."""
        excerpt = _short(response.text, 200)
        suffix = f": {excerpt}" if excerpt else ""
        return f"{service} answered HTTP {response.status}{suffix}"


class DeprecatedNotifications:
    """``kernel.notifications`` for channel packs written before ``kernel.outbound``.

    The rules engine and delivery log are the ``hostgate-notifications`` pack; what
    is left here is the deprecated ``outbound`` alias.
    """

    def __init__(self, outbound: Outbound) -> None:
        self._outbound = outbound

    @property
    def outbound(self) -> Outbound:
        """Deprecated alias of ``kernel.outbound`` (outbound HTTP is not only for channels)."""
        warnings.warn(
            "kernel.notifications.outbound is deprecated: use kernel.outbound",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._outbound
