"""A TLS peer's whole certificate chain on Python 3.11 and 3.12 (ssl internals).

Python 3.13 has ``SSLObject.get_unverified_chain()``; 3.11 and 3.12 have the same
call only on the object's private ``_sslobj``. The RDP pack hands the browser the
server's chain (RDCleanPath), which needs more than the leaf when the server sends
intermediates.

Private name used: ``ssl.SSLObject._sslobj`` (below 3.13 only). Guarded by
``RANGES``; outside them, where no public call exists, the chain is the leaf alone.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from . import VersionRange, applies

RANGES = (VersionRange("python", "3.11", "3.13"),)
"""The versions that need the private call (3.13 has the public one)."""

log = logging.getLogger("hostgate.compat")


def _der(certificate: Any) -> bytes:
    if isinstance(certificate, bytes):
        return certificate
    # a certificate of ssl's chain gives PEM by default; ssl's public helper makes it DER
    return ssl.PEM_cert_to_DER_cert(certificate.public_bytes())


def _chain_getter(ssl_object: Any) -> Any:
    """``get_unverified_chain`` of ``ssl_object``: public on 3.13, else the guarded one."""
    getter = getattr(ssl_object, "get_unverified_chain", None)
    if getter is not None or not applies("ssl.unverified_chain", *RANGES):
        return getter
    return getattr(getattr(ssl_object, "_sslobj", None), "get_unverified_chain", None)


def peer_certificate_chain(ssl_object: Any) -> list[bytes]:
    """The TLS peer's certificate chain as DER, leaf first (at least the leaf, if it sent one).

    ``ssl_object`` is a connection's ``ssl.SSLObject`` (a stream writer's
    ``get_extra_info("ssl_object")``). The chain is as the peer sent it, unverified.
    """
    getter = _chain_getter(ssl_object)
    chain: list[bytes] = []
    if getter is not None:
        try:
            chain = [_der(certificate) for certificate in getter() or []]
        except Exception:
            log.debug("reading the peer's certificate chain failed", exc_info=True)
            chain = []
    if not chain:
        leaf = ssl_object.getpeercert(binary_form=True)
        if leaf:
            chain.append(leaf)
    return chain
