"""``hostgate user create|invite|reset-password|unlock|suspend|resume|list``: no web UI."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import ApiError
from ..timefmt import iso
from .common import with_kernel

if TYPE_CHECKING:
    from ..kernel import Kernel
    from ..services.identity.accounts import UserWithRole
    from ..services.identity.invites import NewInvite

PASSWORD_ENV = "HOSTGATE_PASSWORD"


def register(subparsers: Any) -> None:
    """Add ``user``."""
    parser = subparsers.add_parser("user", help="manage users (recovery)")
    sub = parser.add_subparsers(dest="user_command", metavar="ACTION", required=True)

    create = sub.add_parser("create", help="create a local user")
    create.add_argument("username")
    create.add_argument("--role", default="user", help="role name or id (default: user)")
    create.add_argument("--display-name", default="", help="display name (default: username)")
    create.add_argument("--email", default="", help="e-mail address")
    add_password_options(create)
    add_must_change_option(create)
    create.set_defaults(handler=run_create)

    invite = sub.add_parser(
        "invite", help="create a local user who sets their own password; prints the link"
    )
    invite.add_argument("username")
    invite.add_argument("--role", default="user", help="role name or id (default: user)")
    invite.add_argument("--display-name", default="", help="display name (default: username)")
    invite.add_argument("--email", default="", help="e-mail address")
    invite.add_argument(
        "--hours",
        type=float,
        default=None,
        help="how long the link works, in hours (default 72, at most 720)",
    )
    invite.add_argument(
        "--url",
        default="",
        help="the gateway's address as people open it (https://gate.example.com): "
        "printed in front of the link's path",
    )
    invite.set_defaults(handler=run_invite)

    reset = sub.add_parser(
        "reset-password", help="set a new password; ends the user's sessions and API tokens"
    )
    reset.add_argument("username")
    add_password_options(reset)
    add_must_change_option(reset)
    reset.set_defaults(handler=run_reset)

    unlock = sub.add_parser("unlock", help="lift a lockout")
    unlock.add_argument("username")
    unlock.set_defaults(handler=run_unlock)

    for action, text in (
        ("suspend", "no sign-in by any method; ends the user's sessions and API tokens"),
        ("resume", "lift a suspension: the user can sign in again"),
    ):
        suspension = sub.add_parser(action, help=text)
        suspension.add_argument("username")
        suspension.set_defaults(handler=run_suspension, suspend=action == "suspend")

    listing = sub.add_parser("list", help="list users")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=run_list)


def add_password_options(parser: argparse.ArgumentParser, env_name: str = PASSWORD_ENV) -> None:
    """``--password`` / ``--password-file`` / ``--password-stdin`` (else $env, else a prompt)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--password", help=f"the password (visible to ps: prefer ${env_name})")
    group.add_argument("--password-file", help="read the password from the first line of FILE")
    group.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )


def add_must_change_option(parser: argparse.ArgumentParser) -> None:
    """``--must-change``: the user chooses a new password at the next sign-in."""
    parser.add_argument(
        "--must-change",
        action="store_true",
        help="the user must choose a new password at the next sign-in, before anything else",
    )


def read_password(args: argparse.Namespace, env_name: str = PASSWORD_ENV) -> str:
    """The password from the options, the environment, or an interactive prompt."""
    if getattr(args, "password", None):
        return str(args.password)
    if getattr(args, "password_file", None):
        try:
            with open(args.password_file, encoding="utf-8") as handle:
                return handle.readline().rstrip("\r\n")
        except OSError as exc:
            raise ApiError(f"cannot read {args.password_file}: {exc.strerror}") from None
    if getattr(args, "password_stdin", False):
        return sys.stdin.readline().rstrip("\r\n")
    if os.environ.get(env_name):
        return os.environ[env_name]
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Repeat password: "):
            raise ApiError("the passwords do not match")
        return first
    raise ApiError(f"no password given: use --password-stdin, ${env_name} or run interactively")


def fail(error: ApiError) -> int:
    """Print an error the way the API would phrase it; exit code 1."""
    print(f"hostgate: {error.message}", file=sys.stderr)
    return 1


async def _user_id(kernel: Kernel, username: str) -> str:
    from ..errors import NotFound

    user = await kernel.accounts.user_by_name(username)
    if user is None:
        raise NotFound(f"no user named {username!r}")
    return user.id


def run_create(args: argparse.Namespace) -> int:
    """Create a user."""
    try:
        password = read_password(args)

        async def work(kernel: Kernel) -> UserWithRole:
            return await kernel.accounts.create_user(
                username=args.username,
                password=password,
                display_name=args.display_name,
                email=args.email,
                role=args.role,
                actor=None,
                must_change_password=args.must_change,
            )

        created = with_kernel(args, work)
    except ApiError as error:
        return fail(error)
    print(f"created user {created.user.username} (role {created.role}, id {created.user.id})")
    if args.must_change:
        print("they choose a new password at their first sign-in")
    return 0


def run_invite(args: argparse.Namespace) -> int:
    """Create a user without a password and print their invite link."""
    from ..services.identity.invites import DEFAULT_HOURS

    async def work(kernel: Kernel) -> tuple[UserWithRole, NewInvite]:
        return await kernel.invites.invite_user(
            username=args.username,
            display_name=args.display_name,
            email=args.email,
            role=args.role,
            hours=DEFAULT_HOURS if args.hours is None else args.hours,
            actor=None,
        )

    try:
        created, invite = with_kernel(args, work)
    except ApiError as error:
        return fail(error)
    print(f"invited user {created.user.username} (role {created.role}, id {created.user.id})")
    print(f"the link works once, until {iso(invite.expires_at)}:")
    base = args.url.rstrip("/")
    print(f"{base}{invite.path}" if base else invite.path)
    if not base:
        print("(put the gateway's address in front, or pass --url)")
    return 0


def run_reset(args: argparse.Namespace) -> int:
    """Reset a password."""
    try:
        password = read_password(args)

        async def work(kernel: Kernel) -> None:
            user_id = await _user_id(kernel, args.username)
            await kernel.accounts.reset_password(
                user_id, password, actor=None, must_change_password=args.must_change
            )

        with_kernel(args, work, shared=True)
    except ApiError as error:
        return fail(error)
    print(f"password of {args.username} reset; their sessions have ended")
    if args.must_change:
        print("they choose a new password at their next sign-in")
    return 0


def run_unlock(args: argparse.Namespace) -> int:
    """Unlock a user."""

    async def work(kernel: Kernel) -> None:
        user_id = await _user_id(kernel, args.username)
        await kernel.accounts.unlock_user(user_id, actor=None)

    try:
        with_kernel(args, work)
    except ApiError as error:
        return fail(error)
    print(f"{args.username} unlocked")
    return 0


def run_suspension(args: argparse.Namespace) -> int:
    """Suspend or resume a user (``args.suspend``)."""

    async def work(kernel: Kernel) -> None:
        user_id = await _user_id(kernel, args.username)
        await kernel.accounts.set_suspended(user_id, args.suspend, actor=None)

    try:
        with_kernel(args, work)
    except ApiError as error:
        return fail(error)
    print(f"{args.username} {'suspended' if args.suspend else 'can sign in again'}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    """List users."""
    from ..api.users import user_json

    async def work(kernel: Kernel) -> list[UserWithRole]:
        return await kernel.accounts.list_users()

    users = [user_json(entry) for entry in with_kernel(args, work)]
    if args.json:
        print(json.dumps({"users": users}, indent=2))
        return 0
    if not users:
        print("no users yet: run `hostgate setup` or open the web UI")
        return 0
    print(
        f"{'USERNAME':<24} {'ROLE':<16} {'PROVIDER':<10} {'MFA':<4} "
        f"{'SUSPENDED/LOCKED UNTIL':<25} LAST LOGIN"
    )
    for user in users:
        print(
            f"{user['username']:<24} {user['role']:<16} {user['authProvider']:<10} "
            f"{'yes' if user['mfaEnabled'] else 'no':<4} "
            f"{'suspended' if user['suspended'] else user['lockedUntil'] or '-':<25} "
            f"{user['lastLoginAt'] or '-'}"
        )
    return 0
