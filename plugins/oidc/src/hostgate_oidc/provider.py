"""Talking to the identity provider: discovery, authorization URL, code exchange, ID token.

The authorization code flow with ``state``, ``nonce`` and PKCE (S256). The ID token's
signature is checked against the provider's JWKS, then issuer, audience, expiry and
nonce. Outbound TLS is verified unless ``auth.oidc_tls_verify`` is turned off.

Every request (discovery, JWKS, token, userinfo) goes through the kernel's
policy-checked transport (``kernel.outbound.transport``): the
endpoints a discovery document names are checked like the issuer itself, so a
provider cannot send the gateway to an address the target network policy refuses.

authlib is imported where a flow first needs it (the authorize step, the code
exchange, the ID token check), not at start: it costs every start about 50 ms CPU.
"""

from __future__ import annotations

import hmac
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
from hostgate import ApiError, OutboundAPI

from .settings import parse_role_map

if TYPE_CHECKING:
    from authlib.jose import KeySet

SIGNING_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
CACHE_SECONDS = 600.0
FAILURE_SECONDS = 10.0
CLOCK_LEEWAY_SECONDS = 60
MAX_DOCUMENT_BYTES = 1_000_000


class OidcError(Exception):
    """The flow failed; ``str(error)`` is safe to show the user, ``reason`` goes to the audit."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class OidcSettings:
    """The provider and client configuration, read from the instance settings."""

    issuer: str
    client_id: str
    client_secret: str
    redirect_uri: str = ""
    scope: str = "openid email profile"
    username_claim: str = "preferred_username"
    display_name_claim: str = "name"
    email_claim: str = "email"
    token_auth_method: str = "client_secret_basic"
    tls_verify: bool = True
    ca_cert: str = ""
    timeout: float = 10.0
    role_claim: str = ""
    role_map: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, get: Any) -> OidcSettings:
        """Build from the instance settings (``get`` is ``kernel.settings.get``)."""
        return cls(
            issuer=str(get("auth.oidc_issuer") or "").strip(),
            client_id=str(get("auth.oidc_client_id") or "").strip(),
            client_secret=str(get("auth.oidc_client_secret") or ""),
            redirect_uri=str(get("auth.oidc_redirect_uri") or "").strip(),
            scope=str(get("auth.oidc_scope") or "openid email profile").strip(),
            username_claim=str(get("auth.oidc_username_claim") or "").strip(),
            display_name_claim=str(get("auth.oidc_display_name_claim") or "").strip(),
            email_claim="email",
            token_auth_method=str(get("auth.oidc_token_auth_method") or "client_secret_basic"),
            tls_verify=bool(get("auth.oidc_tls_verify")),
            ca_cert=str(get("auth.oidc_ca_cert") or "").strip(),
            timeout=float(get("auth.oidc_timeout_seconds") or 10),
            role_claim=str(get("auth.oidc_role_claim") or "").strip(),
            role_map=parse_role_map(str(get("auth.oidc_role_map") or "")),
        )

    @property
    def scopes(self) -> str:
        """The requested scopes, always including ``openid``."""
        parts = self.scope.split()
        return " ".join(parts if "openid" in parts else ["openid", *parts])

    def cache_key(self) -> tuple[str, bool, str]:
        """What the cached discovery document and keys depend on."""
        return (self.issuer.rstrip("/"), self.tls_verify, self.ca_cert)


@dataclass(frozen=True)
class ProviderMetadata:
    """The parts of the discovery document the flow uses."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str
    algorithms: tuple[str, ...]


@dataclass(frozen=True)
class LoginRequest:
    """What the authorize step creates: where to send the browser and what to remember."""

    url: str
    state: str
    nonce: str
    code_verifier: str
    redirect_uri: str


@dataclass
class _Cached:
    metadata: ProviderMetadata
    keys: KeySet | None
    fetched: float


def tls_verify_option(settings: OidcSettings) -> ssl.SSLContext | bool:
    """Httpx's ``verify``: the system store plus the configured CA, or off when opted out."""
    if not settings.tls_verify:
        return False
    context = ssl.create_default_context()
    if settings.ca_cert:
        try:
            context.load_verify_locations(cadata=settings.ca_cert)
        except (ssl.SSLError, ValueError) as exc:
            raise OidcError(
                f"The configured OIDC CA certificate cannot be loaded: {exc}", "oidc_misconfigured"
            ) from None
    return context


def _secure_url(url: str) -> bool:
    """True for an https:// URL (http:// on loopback names) that the HTTP client can send to.

    Issuer and discovery-document URLs are untrusted text: one that does not parse
    (an unclosed IPv6 bracket, a control character) is simply not usable.
    """
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        return False
    if parts.scheme == "https" and hostname:
        return True
    return parts.scheme == "http" and hostname in {"localhost", "127.0.0.1", "::1"}


def _describe_http_error(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return f"TLS certificate verification failed ({text})"
    if isinstance(exc, httpx.TimeoutException):
        return "the identity provider did not answer in time"
    return text


def _refused(exc: ApiError, what: str) -> OidcError:
    """The flow error for a request the network policy refused or could not resolve."""
    reason = "oidc_target_denied" if exc.code == "target_denied" else "oidc_unreachable"
    return OidcError(f"Cannot reach the identity provider for its {what}: {exc.message}", reason)


class OidcClient:
    """One relying party configuration; discovery and keys are cached across requests.

    ``outbound`` is the kernel's (requests obey the network policy); None only in
    tests that talk to a provider without a kernel.
    """

    def __init__(
        self, settings: OidcSettings, cache: dict[Any, Any], outbound: OutboundAPI | None = None
    ) -> None:
        self.settings = settings
        self._cache = cache
        self._outbound = outbound

    def check_configured(self) -> None:
        """Raise OidcError when the settings cannot work."""
        if not self.settings.issuer:
            raise OidcError("OIDC is not configured: no issuer URL", "oidc_misconfigured")
        if not self.settings.client_id:
            raise OidcError("OIDC is not configured: no client id", "oidc_misconfigured")
        if not _secure_url(self.settings.issuer):
            raise OidcError("The OIDC issuer must be an https:// URL", "oidc_misconfigured")

    def _client_options(self) -> dict[str, Any]:
        """Options of the httpx clients: the policy's transport, no proxies, no redirects."""
        verify = tls_verify_option(self.settings)
        transport: httpx.AsyncBaseTransport
        if self._outbound is not None:
            transport = self._outbound.transport(purpose="oidc", verify=verify)
        else:
            transport = httpx.AsyncHTTPTransport(verify=verify, trust_env=False)
        return {
            "transport": transport,
            "trust_env": False,
            "timeout": self.settings.timeout,
            "follow_redirects": False,
        }

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(headers={"Accept": "application/json"}, **self._client_options())

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with self._http() as http:
                answer = await http.get(url)
        except ApiError as exc:
            raise _refused(exc, what) from None
        except httpx.HTTPError as exc:
            raise OidcError(
                f"Cannot reach the identity provider for its {what}: {_describe_http_error(exc)}",
                "oidc_unreachable",
            ) from None
        if answer.status_code != 200:
            raise OidcError(
                f"The identity provider answered HTTP {answer.status_code} for its {what}",
                "oidc_provider_error",
            )
        if len(answer.content) > MAX_DOCUMENT_BYTES:
            raise OidcError(f"The identity provider's {what} is too large", "oidc_provider_error")
        try:
            body = answer.json()
        except ValueError:
            raise OidcError(
                f"The identity provider's {what} is not JSON", "oidc_provider_error"
            ) from None
        if not isinstance(body, dict):
            raise OidcError(
                f"The identity provider's {what} is not a JSON object", "oidc_provider_error"
            )
        return body

    async def metadata(self) -> ProviderMetadata:
        """The provider's discovery document (cached for ten minutes).

        A failed discovery is remembered for ``FAILURE_SECONDS``: the authorize route
        is public, and anonymous callers must not make the gateway call out (and
        audit a refusal by the network policy) once per request.
        """
        self.check_configured()
        key = self.settings.cache_key()
        cached = self._cache.get(key)
        now = time.monotonic()
        if cached is not None and now - cached.fetched < CACHE_SECONDS:
            return cached.metadata  # type: ignore[no-any-return]
        failed = self._cache.get(("failed", key))
        if failed is not None and now - failed[0] < FAILURE_SECONDS:
            raise OidcError(str(failed[1]), failed[1].reason)
        try:
            metadata = await self._discover()
        except OidcError as exc:
            self._cache[("failed", key)] = (time.monotonic(), exc)
            raise
        self._cache.pop(("failed", key), None)
        self._cache[key] = _Cached(metadata=metadata, keys=None, fetched=time.monotonic())
        return metadata

    async def _discover(self) -> ProviderMetadata:
        issuer = self.settings.issuer.rstrip("/")
        document = await self._get_json(
            f"{issuer}/.well-known/openid-configuration", "discovery document"
        )
        announced = str(document.get("issuer") or "")
        if announced.rstrip("/") != issuer:
            raise OidcError(
                f"The discovery document names issuer {announced!r}, not the configured one",
                "oidc_misconfigured",
            )
        endpoints = {}
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            value = document.get(name)
            if not isinstance(value, str) or not _secure_url(value):
                raise OidcError(
                    f"The discovery document has no usable {name}", "oidc_provider_error"
                )
            endpoints[name] = value
        userinfo = document.get("userinfo_endpoint")
        offered = document.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = tuple(a for a in SIGNING_ALGORITHMS if a in offered)
        if not algorithms:
            raise OidcError(
                "The identity provider offers no supported ID token signing algorithm "
                "(asymmetric ones such as RS256 or ES256 are required)",
                "oidc_misconfigured",
            )
        metadata = ProviderMetadata(
            issuer=announced,
            authorization_endpoint=endpoints["authorization_endpoint"],
            token_endpoint=endpoints["token_endpoint"],
            jwks_uri=endpoints["jwks_uri"],
            userinfo_endpoint=userinfo
            if isinstance(userinfo, str) and _secure_url(userinfo)
            else "",
            algorithms=algorithms,
        )
        return metadata

    async def _keys(self, metadata: ProviderMetadata, *, refresh: bool = False) -> KeySet:
        cached = self._cache.get(self.settings.cache_key())
        if cached is not None and cached.keys is not None and not refresh:
            return cached.keys  # type: ignore[no-any-return]
        from authlib.jose import JsonWebKey
        from authlib.jose.errors import JoseError

        document = await self._get_json(metadata.jwks_uri, "signing keys")
        try:
            keys = JsonWebKey.import_key_set(document)
        except (JoseError, ValueError, TypeError) as exc:
            raise OidcError(
                f"The identity provider's signing keys cannot be read: {exc}",
                "oidc_provider_error",
            ) from None
        if cached is not None:
            cached.keys = keys
        return keys

    def login_request(
        self,
        metadata: ProviderMetadata,
        redirect_uri: str,
        state: str,
        nonce: str,
        code_verifier: str,
    ) -> LoginRequest:
        """The authorization URL for a new flow (code flow, PKCE S256, state and nonce)."""
        from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        url = prepare_grant_uri(
            metadata.authorization_endpoint,
            client_id=self.settings.client_id,
            response_type="code",
            redirect_uri=redirect_uri,
            scope=self.settings.scopes,
            state=state,
            nonce=nonce,
            code_challenge=create_s256_code_challenge(code_verifier),
            code_challenge_method="S256",
        )
        return LoginRequest(
            url=url,
            state=state,
            nonce=nonce,
            code_verifier=code_verifier,
            redirect_uri=redirect_uri,
        )

    async def exchange_code(
        self, metadata: ProviderMetadata, code: str, code_verifier: str, redirect_uri: str
    ) -> dict[str, Any]:
        """Trade the authorization code for tokens at the token endpoint."""
        from authlib.integrations.httpx_client import AsyncOAuth2Client, OAuthError

        client = AsyncOAuth2Client(
            client_id=self.settings.client_id,
            client_secret=self.settings.client_secret or None,
            token_endpoint_auth_method=self.settings.token_auth_method,
            redirect_uri=redirect_uri,
            **self._client_options(),
        )
        try:
            async with client:
                token = await client.fetch_token(
                    metadata.token_endpoint,
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=code_verifier,
                )
        except ApiError as exc:
            raise _refused(exc, "token endpoint") from None
        except OAuthError as exc:
            description = exc.description or exc.error or "token request refused"
            raise OidcError(
                f"The identity provider refused the code exchange: {description}",
                "oidc_token_refused",
            ) from None
        except httpx.HTTPError as exc:
            raise OidcError(
                f"Cannot reach the identity provider's token endpoint: {_describe_http_error(exc)}",
                "oidc_unreachable",
            ) from None
        except ValueError as exc:
            raise OidcError(
                f"The token endpoint's answer is not usable: {exc}", "oidc_provider_error"
            ) from None
        if not isinstance(token, Mapping) or not token.get("id_token"):
            raise OidcError("The identity provider returned no ID token", "oidc_no_id_token")
        return dict(token)

    async def validate_id_token(
        self, metadata: ProviderMetadata, id_token: str, nonce: str, access_token: str = ""
    ) -> dict[str, Any]:
        """Check signature (JWKS), issuer, audience, expiry, nonce; return the claims."""
        from authlib.jose import JsonWebToken
        from authlib.jose.errors import JoseError
        from authlib.oidc.core import CodeIDToken

        keys = await self._keys(metadata)
        decoder = JsonWebToken(list(metadata.algorithms))
        options = {
            "iss": {"essential": True, "value": metadata.issuer},
            "aud": {"essential": True, "value": self.settings.client_id},
            "sub": {"essential": True},
            "exp": {"essential": True},
        }
        params = {"nonce": nonce, "client_id": self.settings.client_id}
        if access_token:
            params["access_token"] = access_token
        try:
            try:
                claims = decoder.decode(
                    id_token,
                    keys,
                    claims_cls=CodeIDToken,
                    claims_options=options,
                    claims_params=params,
                )
            except ValueError as exc:
                if "kid" not in str(exc).lower() and "key" not in str(exc).lower():
                    raise
                keys = await self._keys(metadata, refresh=True)
                claims = decoder.decode(
                    id_token,
                    keys,
                    claims_cls=CodeIDToken,
                    claims_options=options,
                    claims_params=params,
                )
            claims.validate(leeway=CLOCK_LEEWAY_SECONDS)
        except JoseError as exc:
            error = getattr(exc, "error", "") or ""
            description = getattr(exc, "description", "") or str(exc)
            if "nonce" in description:
                raise OidcError(
                    "The ID token's nonce does not match", "oidc_nonce_mismatch"
                ) from None
            if error == "expired_token":
                raise OidcError("The ID token has expired", "oidc_token_expired") from None
            raise OidcError(
                f"The ID token is not valid: {description}", "oidc_invalid_id_token"
            ) from None
        except ValueError as exc:
            raise OidcError(f"The ID token is not valid: {exc}", "oidc_invalid_id_token") from None
        result = dict(claims)
        # authlib accepts a missing nonce only when none was sent; we always send one.
        if not hmac.compare_digest(str(result.get("nonce", "")), nonce):
            raise OidcError("The ID token's nonce does not match", "oidc_nonce_mismatch")
        return result

    async def userinfo(self, metadata: ProviderMetadata, access_token: str) -> dict[str, Any]:
        """Claims from the userinfo endpoint ({} when the provider has none)."""
        if not metadata.userinfo_endpoint or not access_token:
            return {}
        try:
            async with self._http() as http:
                answer = await http.get(
                    metadata.userinfo_endpoint,
                    headers={"Authorization": f"Bearer {access_token}"},
                )
        except ApiError as exc:
            raise _refused(exc, "userinfo endpoint") from None
        except httpx.HTTPError:
            return {}
        if answer.status_code != 200:
            return {}
        try:
            body = answer.json()
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}
