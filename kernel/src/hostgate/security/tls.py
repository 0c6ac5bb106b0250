"""Self-signed certificates: ``serve --tls-self-signed``, and the test suite's TLS peers."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from ..datadir import private_dir, private_open


def ensure_self_signed(directory: Path) -> tuple[Path, Path]:
    """``(cert, key)`` paths, generating a one-year certificate on first use."""
    cert_path, key_path = directory / "server.crt", directory / "server.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    private_dir(directory)
    write_self_signed(cert_path, key_path)
    return cert_path, key_path


def write_self_signed(
    cert_path: Path,
    key_path: Path,
    *,
    common_name: str = "hostgate",
    days: int = 365,
    rsa_key: bool = False,
    ca: bool = False,
) -> x509.Certificate:
    """Write a self-signed certificate for localhost / 127.0.0.1 and its key (mode 0600).

    An EC P-256 key unless ``rsa_key`` (2048 bits, for peers that take nothing else);
    ``ca`` marks it a CA, for clients that must be given it as their trust anchor.
    """
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
    if rsa_key:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    )
    if ca:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        )
    cert = builder.sign(key, hashes.SHA256())
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with private_open(key_path, "wb") as handle:
        handle.write(key_bytes)
    with private_open(cert_path, "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))
    return cert
