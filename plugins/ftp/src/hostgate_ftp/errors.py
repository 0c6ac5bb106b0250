"""FTP failures translated into hostgate's Remote* errors, each saying what failed.

FTP reply codes are coarse (``550`` covers "no such file" and "no access"
alike), so the adapter probes the path after a refusal where it matters
(``files.py``); what cannot be told apart is reported with the server's text.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aioftp
from hostgate import (
    ApiError,
    InvalidInput,
    RemoteAuthFailed,
    RemoteError,
    RemoteNotFound,
    RemotePermissionDenied,
    RemoteTimeout,
    RemoteUnreachable,
)

_DENIED_WORDS = (
    "permission",
    "denied",
    "not allowed",
    "access",
    "forbidden",
    "read-only",
    "privilege",
)
_MISSING_WORDS = ("no such", "not found", "not exist", "does not exist", "doesn't exist")


def reply(error: aioftp.StatusCodeError) -> tuple[str, str]:
    """The last reply code and the server's text of a refused command."""
    codes = error.received_codes
    code = str(codes[-1] if isinstance(codes, tuple) else codes)
    info = error.info if isinstance(error.info, list) else [str(error.info)]
    text = " ".join(line.strip(" -") for line in info if line).strip()
    return code, text


def is_code(error: BaseException, prefix: str) -> bool:
    """True when ``error`` is a server reply whose code starts with ``prefix``."""
    return isinstance(error, aioftp.StatusCodeError) and reply(error)[0].startswith(prefix)


def refusal(error: aioftp.StatusCodeError, what: str, *, login: bool = False) -> ApiError:
    """The hostgate error for a refused FTP command."""
    code, text = reply(error)
    lowered = text.lower()
    detail = f"{code} {text}".strip()
    if code == "530" or (login and code.startswith("5")):
        return RemoteAuthFailed(f"FTP login failed: {detail}")
    if code == "421":
        return RemoteUnreachable(f"The FTP server closed the connection: {detail}")
    if code in ("500", "501", "502", "504"):
        return RemoteError(f"The FTP server does not support this on {what}: {detail}")
    if code == "553":
        return RemotePermissionDenied(f"The FTP server refused {what}: {detail}")
    if code.startswith("5"):
        if any(word in lowered for word in _DENIED_WORDS):
            return RemotePermissionDenied(f"Permission denied by the FTP server: {what}")
        if any(word in lowered for word in _MISSING_WORDS):
            return RemoteNotFound(f"No such file or directory: {what}")
    return RemoteError(f"The FTP server refused {what}: {detail}")


@asynccontextmanager
async def mapped(what: str, *, connecting: bool = False) -> AsyncIterator[None]:
    """Run a block; turn aioftp, TLS and socket errors into Remote* errors about ``what``."""
    try:
        yield
    except ApiError:
        raise
    except aioftp.StatusCodeError as exc:
        raise refusal(exc, what, login=connecting) from None
    except ssl.SSLCertVerificationError as exc:
        raise RemoteError(
            f"TLS certificate of {what} was not accepted: {exc.verify_message or exc.reason}"
        ) from None
    except ssl.SSLError as exc:
        raise RemoteError(f"TLS with {what} failed: {exc.reason or exc}") from None
    except TimeoutError:
        raise RemoteTimeout(f"{what} did not answer in time") from None
    except (ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError):
        if connecting:
            raise RemoteUnreachable(f"{what} closed the connection") from None
        raise RemoteUnreachable(f"The FTP server closed the connection during {what}") from None
    except aioftp.errors.InvalidCommand:
        raise InvalidInput("Paths must not contain line breaks") from None
    except UnicodeDecodeError:
        raise RemoteError(f"The FTP server sent text that is not UTF-8 ({what})") from None
    except OSError as exc:
        raise RemoteUnreachable(f"Cannot reach {what}: {exc.strerror or exc}") from None
    except (ValueError, IndexError) as exc:
        raise RemoteError(f"Unexpected reply from the FTP server ({what}): {exc}") from None
