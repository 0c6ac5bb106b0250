"""The suite-wide secret scan: no GET response may hold a secret written earlier in the test.

Secrets come from two places, both recorded in the test's :class:`SecretLedger`:

* every plaintext the kernel's secret box seals (connection passwords, private keys,
  passphrases, pack-declared secret fields, secret settings, channel secrets, MFA
  secrets), whoever wrote it: a route, ``make_connection`` or a service call;
* string values under secret-looking keys (``password``, ``privateKey``, ``token``...)
  of any request body a test client sends, so values the kernel hashes or refuses
  (login passwords, rejected writes) are covered too.

:class:`ScanningClient` is installed as every Quart app's ``test_client_class`` by the
``secret_scan`` fixture (``testsupport.fixtures``), so ``client``, ``app.test_client()``
and clients of apps a test builds itself all check each GET body against the ledger.
Streamed requests (``client.request(...)``) and real HTTP clients on a live server are
not scanned.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hostgate.security.secretbox import SecretBox
from hostgate.services.audit.audit import REDACTED
from hostgate.services.settings import SECRET_MASK
from quart import Response
from quart.testing import QuartClient

SECRET_KEY_WORDS = ("password", "passphrase", "secret", "token", "privatekey", "private_key")
"""A request-body key holding any of these (case-insensitive) carries a secret value."""

MIN_SECRET_LENGTH = 6
"""Shorter values (``"x"``, ``"wrong"``) would match ordinary text by chance."""

PLACEHOLDERS = frozenset({REDACTED, SECRET_MASK})
"""Values a test may send back that stand for a secret without being one."""

CREDENTIAL_ROUTE = re.compile(r"/connections/[^/]+/session$")
"""The one GET that hands out a secret: the connection's ``password`` (SPEC §4.4)."""

PEM_LINE = re.compile(r"^[A-Za-z0-9+/=]{20,}$")


def is_secret_key(name: str) -> bool:
    """True for request-body keys whose values are secrets."""
    lowered = name.lower()
    return any(word in lowered for word in SECRET_KEY_WORDS)


def secret_strings(value: Any, *, secret: bool = False) -> Iterator[str]:
    """String leaves of ``value`` under a secret-looking key (all of them if ``secret``)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from secret_strings(item, secret=secret or is_secret_key(str(key)))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from secret_strings(item, secret=secret)
    elif secret and isinstance(value, str):
        yield value


def needles(value: str) -> tuple[bytes, ...]:
    """The byte strings that betray ``value`` in a response body.

    The value as UTF-8 and JSON-escaped; for a multi-line value (a PEM private key) each
    base64 line but the first, which is the same for every key of a type.
    """
    if len(value) < MIN_SECRET_LENGTH or value in PLACEHOLDERS or value.isdigit():
        return ()
    if "\n" in value:
        lines = [line.strip() for line in value.splitlines()]
        body = [line for line in lines if PEM_LINE.match(line)]
        if len(body) > 1:
            return tuple(line.encode() for line in body[1:])
    forms = {value.encode(), json.dumps(value)[1:-1].encode()}
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1].encode())
    return tuple(forms)


def without_handed_out_password(path: str, body: bytes) -> bytes:
    """The body minus the ``password`` the credential route may return; others unchanged."""
    if not CREDENTIAL_ROUTE.search(path.split("?")[0]):
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if isinstance(data, dict):
        data.pop("password", None)
    return json.dumps(data).encode()


class SecretLedger:
    """One test's secret values and the GET responses found holding one."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.found: list[str] = []
        self._needles: dict[str, tuple[bytes, ...]] = {}

    def add(self, values: Iterable[str]) -> None:
        """Record secret values."""
        self.values.update(values)

    def add_sealed(self, plaintext: str | bytes) -> None:
        """Record what the secret box sealed: the text, or the strings of a sealed JSON object."""
        if isinstance(plaintext, bytes):
            try:
                plaintext = plaintext.decode()
            except UnicodeDecodeError:
                return  # random key material: never text in a response
        if plaintext.startswith(("{", "[")):
            try:
                self.add(secret_strings(json.loads(plaintext), secret=True))
                return
            except ValueError:
                pass
        self.values.add(plaintext)

    def add_request(self, json_body: Any, form: Mapping[str, Any] | None, data: Any) -> None:
        """Record secret-keyed strings of a request body (JSON, form or JSON text)."""
        if isinstance(data, bytes | str) and data[:1] in ("{", "[", b"{", b"["):
            with contextlib.suppress(ValueError, RecursionError):  # hostile bodies too
                json_body = json.loads(data)
        self.add(secret_strings(json_body))
        if form:
            self.add(secret_strings(dict(form)))

    def leaked(self, path: str, body: bytes) -> list[str]:
        """The secret values ``body`` (a GET response to ``path``) contains."""
        if not body:
            return []
        body = without_handed_out_password(path, body)
        hits = []
        for value in list(self.values):
            forms = self._needles.get(value)
            if forms is None:
                forms = self._needles[value] = needles(value)
            if any(form in body for form in forms):
                hits.append(value)
        return hits

    def check(self, path: str, body: bytes) -> None:
        """Note a GET response that holds a secret (the test fails at teardown)."""
        for value in self.leaked(path, body):
            self.found.append(f"GET {path} holds {value[:40]!r}: {body[:200]!r}")

    def assert_clean(self) -> None:
        """Fail if any GET response held a secret."""
        assert not self.found, "GET responses returned secrets:\n" + "\n".join(self.found)


class _Current:
    """The running test's ledger (None outside a test)."""

    ledger: SecretLedger | None = None


def current_ledger() -> SecretLedger | None:
    """The ledger of the test running now."""
    return _Current.ledger


def set_current_ledger(ledger: SecretLedger | None) -> None:
    """Make ``ledger`` the one clients and the secret box record into."""
    _Current.ledger = ledger


_original_seal = SecretBox.seal


def recording_seal(box: SecretBox, plaintext: str | bytes) -> str:
    """``SecretBox.seal`` that also records the plaintext in the current ledger."""
    ledger = _Current.ledger
    if ledger is not None:
        ledger.add_sealed(plaintext)
    return _original_seal(box, plaintext)


class ScanningClient(QuartClient):
    """A Quart test client that records secrets it sends and scans every GET response."""

    async def open(self, path: str, *args: Any, **kwargs: Any) -> Response:
        """Send the request; a secret in a GET response body is noted in the ledger."""
        ledger = _Current.ledger
        if ledger is not None:
            ledger.add_request(kwargs.get("json"), kwargs.get("form"), kwargs.get("data"))
        response = await super().open(path, *args, **kwargs)
        if ledger is not None and kwargs.get("method", "GET").upper() == "GET":
            ledger.check(path, await response.get_data(as_text=False))
        return response
