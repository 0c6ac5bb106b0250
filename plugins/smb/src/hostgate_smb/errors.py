"""SMB failures translated into hostgate's Remote* errors, each saying what failed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hostgate import (
    ApiError,
    Conflict,
    InvalidInput,
    RemoteAuthFailed,
    RemoteError,
    RemoteNotFound,
    RemotePermissionDenied,
    RemoteTimeout,
    RemoteUnreachable,
)
from smbprotocol.exceptions import (
    AccessDenied,
    BadNetworkName,
    CannotDelete,
    DeletePending,
    DirectoryNotEmpty,
    DiskFull,
    FileIsADirectory,
    LogonFailure,
    NoSuchFile,
    NotFound,
    ObjectNameCollision,
    ObjectNameInvalid,
    ObjectNameNotFound,
    ObjectPathInvalid,
    ObjectPathNotFound,
    ObjectPathSyntaxBad,
    PasswordExpired,
    PrivilegeNotHeld,
    SharingViolation,
    SMBAuthenticationError,
    SMBConnectionClosed,
    SMBException,
    SMBOSError,
    SMBResponseException,
    StatusNotADirectory,
    UserSessionDeleted,
    WrongPassword,
)

_NOT_FOUND = (ObjectNameNotFound, ObjectPathNotFound, NoSuchFile, NotFound, DeletePending)
_DENIED = (AccessDenied, PrivilegeNotHeld, CannotDelete)
_AUTH = (LogonFailure, WrongPassword, PasswordExpired, SMBAuthenticationError)
_BAD_NAME = (ObjectNameInvalid, ObjectPathInvalid, ObjectPathSyntaxBad)

# NTSTATUS codes smbprotocol has no class for.
_STATUS_ACCOUNT_DISABLED = 0xC0000072
_STATUS_ACCOUNT_LOCKED_OUT = 0xC0000234
_STATUS_ACCOUNT_RESTRICTION = 0xC000006E
_STATUS_NETWORK_NAME_DELETED = 0xC00000C9
_STATUS_MEDIA_WRITE_PROTECTED = 0xC00000A2
_STATUS_CANNOT_DELETE = 0xC0000121


@contextmanager
def mapped(what: str, *, connecting: bool = False, target: str | None = None) -> Iterator[None]:
    """Run a block; turn smbprotocol and socket errors into Remote* errors about ``what``."""
    try:
        yield
    except ApiError:
        raise
    except _NOT_FOUND:
        raise RemoteNotFound(f"No such file or directory: {what}") from None
    except BadNetworkName:
        raise RemoteNotFound(f"The SMB server does not offer {what}") from None
    except _DENIED:
        raise RemotePermissionDenied(f"Permission denied by the SMB server: {what}") from None
    except _AUTH as exc:
        raise RemoteAuthFailed(f"SMB authentication failed: {_reason(exc)}") from None
    except ObjectNameCollision:
        raise Conflict(f"Already exists: {target or what}") from None
    except DirectoryNotEmpty:
        raise Conflict(f"Directory not empty: {target or what}") from None
    except SharingViolation:
        raise Conflict(f"In use by another client: {what}") from None
    except StatusNotADirectory:
        raise InvalidInput(f"Not a directory: {what}") from None
    except FileIsADirectory:
        raise InvalidInput(f"Is a directory: {what}") from None
    except _BAD_NAME:
        raise InvalidInput(f"Invalid name: {target or what}") from None
    except DiskFull:
        raise RemoteError(f"The SMB share is full: {what}") from None
    except (SMBConnectionClosed, UserSessionDeleted):
        raise RemoteUnreachable(f"The SMB server closed the connection ({what})") from None
    except SMBResponseException as exc:
        status = exc.status
        if status in (
            _STATUS_ACCOUNT_DISABLED,
            _STATUS_ACCOUNT_LOCKED_OUT,
            _STATUS_ACCOUNT_RESTRICTION,
        ):
            raise RemoteAuthFailed(f"SMB authentication failed: {_reason(exc)}") from None
        if status in (_STATUS_MEDIA_WRITE_PROTECTED, _STATUS_CANNOT_DELETE):
            raise RemotePermissionDenied(f"The SMB share is read-only here: {what}") from None
        if status == _STATUS_NETWORK_NAME_DELETED:
            raise RemoteUnreachable(f"The SMB share went away ({what})") from None
        raise RemoteError(f"SMB error on {what}: {_reason(exc)}") from None
    except TimeoutError:
        raise RemoteTimeout(f"{what} did not answer in time") from None
    except ValueError as exc:
        # smbprotocol's transport reports a failed TCP connect as ValueError.
        text = str(exc)
        if not connecting or "Failed to connect" not in text:
            raise RemoteError(f"SMB error on {what}: {text}") from None
        if "timed out" in text:
            raise RemoteTimeout(f"{what} did not answer in time") from None
        raise RemoteUnreachable(f"Cannot reach {what}: {text.split(': ', 1)[-1]}") from None
    except (SMBOSError, SMBException) as exc:
        text = str(exc)
        if "authenticated as a guest" in text:
            raise RemoteAuthFailed(
                "SMB authentication failed: the server did not accept the user "
                "and offered only guest access"
            ) from None
        if "timeout" in text.lower():
            raise RemoteTimeout(f"{what} did not answer in time") from None
        raise RemoteError(f"SMB error on {what}: {text}") from None
    except OSError as exc:
        raise RemoteUnreachable(f"Cannot reach {what}: {exc.strerror or exc}") from None


def _reason(exc: Exception) -> str:
    """The NTSTATUS name when there is one, else the message."""
    status = getattr(exc, "status", None)
    if isinstance(exc, SMBResponseException) and status is not None:
        from smbprotocol.header import NtStatus

        for name, value in vars(NtStatus).items():
            if value == status and name.startswith("STATUS_"):
                return str(name)
        return f"NTSTATUS 0x{status:08x}"
    return str(exc)
