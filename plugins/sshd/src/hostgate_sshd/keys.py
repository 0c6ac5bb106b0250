"""Host keys (made once, sealed in the database) and users' public keys (parsed, checked)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import asyncssh
from hostgate import InvalidInput, KernelAPI

HOST_KEY_ALGORITHMS = ("ssh-ed25519", "rsa-sha2-512")
"""What the gateway's host keys are (the RSA key signs with SHA-2)."""
_HOST_KEYS: tuple[tuple[str, str, int | None], ...] = (
    ("ssh-ed25519", "ed25519", None),
    ("ssh-rsa", "rsa", 3072),
)
MAX_PUBLIC_KEY_CHARS = 16 * 1024
MIN_RSA_BITS = 2048
ACCEPTED_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
"""Key types users may register: no DSA (withdrawn by OpenSSH), no certificates yet."""


async def load_host_keys(kernel: KernelAPI) -> list[asyncssh.SSHKey]:
    """The gateway's host keys: ed25519 and RSA, made at first start, the same on every node."""
    keys = []
    for algorithm, name, bits in _HOST_KEYS:

        async def make(algorithm: str = algorithm, bits: int | None = bits) -> str:
            key = await asyncio.to_thread(_generate, algorithm, bits)
            return key.export_private_key("openssh").decode()

        text = await kernel.sealed_values.get_or_create(f"sshd.host_key.{name}", make)
        keys.append(asyncssh.import_private_key(text))
    return keys


JUMP_KEY_NAME = "sshd.host_key.jump"


async def load_jump_host_key(kernel: KernelAPI) -> asyncssh.SSHKey:
    """The ed25519 key the gateway presents for every connection reached by ProxyJump.

    One key for all of them (the client files it under the connection's name): made
    once, sealed in the database like the door's own keys.
    """

    async def make() -> str:
        key = await asyncio.to_thread(_generate, "ssh-ed25519", None)
        return key.export_private_key("openssh").decode()

    return asyncssh.import_private_key(
        await kernel.sealed_values.get_or_create(JUMP_KEY_NAME, make)
    )


def _generate(algorithm: str, bits: int | None) -> asyncssh.SSHKey:
    if bits is None:
        return asyncssh.generate_private_key(algorithm)
    return asyncssh.generate_private_key(algorithm, key_size=bits)


@dataclass(frozen=True)
class HostKeyView:
    """A host key as users check it."""

    algorithm: str
    fingerprint: str
    public_key: str

    def to_json(self) -> dict[str, str]:
        """The API's shape."""
        return {
            "algorithm": self.algorithm,
            "fingerprint": self.fingerprint,
            "publicKey": self.public_key,
        }


def host_key_views(keys: list[asyncssh.SSHKey]) -> list[HostKeyView]:
    """Algorithm, ``SHA256:`` fingerprint and OpenSSH public line of each host key."""
    return [
        HostKeyView(
            algorithm=key.get_algorithm(),
            fingerprint=key.get_fingerprint("sha256"),
            public_key=key.export_public_key("openssh").decode().strip(),
        )
        for key in keys
    ]


@dataclass(frozen=True)
class UserKey:
    """A public key a user registers: its OpenSSH line, type, fingerprint and comment."""

    line: str
    algorithm: str
    fingerprint: str
    comment: str


def rsa_bits(blob: bytes) -> int:
    """The modulus size of an ``ssh-rsa`` public-key blob (string type, mpint e, mpint n)."""
    fields = []
    offset = 0
    for _ in range(3):
        length = int.from_bytes(blob[offset : offset + 4], "big")
        offset += 4
        fields.append(blob[offset : offset + length])
        offset += length
    return int.from_bytes(fields[2], "big").bit_length()


def parse_user_key(text: str) -> UserKey:
    """Parse one OpenSSH public-key line; InvalidInput (400) for anything else.

    The error never repeats the input (a private key pasted by mistake stays out of
    logs and answers).
    """
    text = text.strip()
    if not text:
        raise InvalidInput("publicKey: must not be blank", code="invalid_ssh_key")
    if len(text) > MAX_PUBLIC_KEY_CHARS or "\n" in text or "PRIVATE KEY" in text:
        raise InvalidInput(
            "publicKey: paste one public key line (ssh-ed25519 AAAA... comment), "
            "never a private key",
            code="invalid_ssh_key",
        )
    try:
        key = asyncssh.import_public_key(text)
    except (asyncssh.KeyImportError, ValueError, TypeError):
        raise InvalidInput(
            "publicKey: not an OpenSSH public key line", code="invalid_ssh_key"
        ) from None
    algorithm = key.get_algorithm()
    if algorithm not in ACCEPTED_KEY_TYPES:
        raise InvalidInput(
            f"publicKey: {algorithm} keys are not accepted (use ed25519, ECDSA or RSA)",
            code="invalid_ssh_key",
        )
    if algorithm == "ssh-rsa" and rsa_bits(key.public_data) < MIN_RSA_BITS:
        raise InvalidInput(
            f"publicKey: RSA keys need at least {MIN_RSA_BITS} bits", code="invalid_ssh_key"
        )
    line = key.export_public_key("openssh").decode().strip()
    comment = key.get_comment() or ""
    return UserKey(
        line=line.split(" ")[0] + " " + line.split(" ")[1],
        algorithm=algorithm,
        fingerprint=key.get_fingerprint("sha256"),
        comment="".join(ch for ch in comment if ch.isprintable())[:100],
    )
