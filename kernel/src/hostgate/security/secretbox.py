"""AES-256-GCM envelopes under the instance key, with a key id for rotation."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..datadir import private_dir, private_open

ENVELOPE_PREFIX = "hg1"
KEY_FILE_NAME = "encryption.key"
NONCE_SIZE = 12
TAG_SIZE = 16


class SecretKeyError(Exception):
    """The key is malformed or cannot open an envelope; the message says which."""


def key_id(key: bytes) -> str:
    """A short public identifier of a key (first 8 hex of its SHA-256)."""
    return hashlib.sha256(b"hostgate-key-id:" + key).hexdigest()[:8]


def parse_key(text: str) -> bytes:
    """Decode a 64-hex-character key."""
    cleaned = text.strip()
    try:
        raw = bytes.fromhex(cleaned)
    except ValueError:
        raise SecretKeyError("the encryption key must be 64 hexadecimal characters") from None
    if len(raw) != 32:
        raise SecretKeyError("the encryption key must be 64 hexadecimal characters (32 bytes)")
    return raw


def generate_key() -> str:
    """A new random key as 64 hex characters."""
    return secrets.token_hex(32)


@dataclass(frozen=True)
class LoadedKey:
    """The instance key and where it came from."""

    key: bytes
    from_file: bool
    path: Path | None = None


def load_or_create_key(env_key: str | None, data_dir: Path) -> LoadedKey:
    """The key from the environment, else the data dir's key file (created 0600)."""
    if env_key:
        return LoadedKey(parse_key(env_key), from_file=False)
    path = data_dir / KEY_FILE_NAME
    if path.exists():
        return LoadedKey(parse_key(path.read_text()), from_file=True, path=path)
    private_dir(data_dir)
    with private_open(path, "xb") as handle:
        handle.write((generate_key() + "\n").encode())
    return LoadedKey(parse_key(path.read_text()), from_file=True, path=path)


def write_key_file(path: Path, key_hex: str) -> None:
    """Replace a key file atomically, mode 0600."""
    tmp = path.with_suffix(".tmp")
    with private_open(tmp, "w") as handle:
        handle.write(key_hex + "\n")
    os.replace(tmp, path)


class SecretBox:
    """Seal and open secrets. Envelope: ``hg1:<keyid>:<base64(nonce || ciphertext)>``."""

    def __init__(self, key: bytes, *, insecure: bool = False) -> None:
        if len(key) != 32:
            raise SecretKeyError("the encryption key must be 32 bytes")
        self._aead = AESGCM(key)
        self._raw = key
        self.key_id = key_id(key)
        self.insecure = insecure

    @property
    def raw_key(self) -> bytes:
        """The key bytes (backup needs them; never log them)."""
        return self._raw

    def seal(self, plaintext: str | bytes) -> str:
        """Encrypt text or bytes into an envelope string."""
        data = plaintext.encode() if isinstance(plaintext, str) else plaintext
        nonce = os.urandom(NONCE_SIZE)
        sealed = self._aead.encrypt(nonce, data, self.key_id.encode())
        body = base64.b64encode(nonce + sealed).decode()
        return f"{ENVELOPE_PREFIX}:{self.key_id}:{body}"

    def open_bytes(self, envelope: str) -> bytes:
        """Decrypt an envelope; raise SecretKeyError with a clear message on any mismatch."""
        try:
            prefix, kid, body = envelope.split(":", 2)
        except ValueError:
            raise SecretKeyError("not a hostgate secret envelope") from None
        if prefix != ENVELOPE_PREFIX:
            raise SecretKeyError(f"unknown secret envelope version {prefix!r}")
        if kid != self.key_id:
            raise SecretKeyError(
                f"secret was encrypted with key {kid}, but the configured key is {self.key_id}"
            )
        try:
            raw = base64.b64decode(body, validate=True)
        except binascii.Error:
            raise SecretKeyError("secret envelope is malformed (not base64)") from None
        if len(raw) < NONCE_SIZE + TAG_SIZE:
            raise SecretKeyError("secret envelope is truncated")
        try:
            return self._aead.decrypt(raw[:NONCE_SIZE], raw[NONCE_SIZE:], kid.encode())
        except InvalidTag:
            raise SecretKeyError("secret envelope failed authentication (tampered?)") from None

    def open(self, envelope: str) -> str:
        """Decrypt an envelope to text."""
        return self.open_bytes(envelope).decode()

    def open_optional(self, envelope: str | None) -> str | None:
        """Decrypt, passing None through."""
        return None if envelope is None else self.open(envelope)

    def seal_optional(self, plaintext: str | None) -> str | None:
        """Encrypt, passing None (and empty) through as None."""
        return None if not plaintext else self.seal(plaintext)


def envelope_key_id(envelope: str) -> str | None:
    """The key id inside an envelope, or None when it is not one."""
    parts = envelope.split(":", 2)
    return parts[1] if len(parts) == 3 and parts[0] == ENVELOPE_PREFIX else None
