"""Operator commands. Each prints one JSON object on stdout and nothing else; an error goes to
stderr with exit status 2.

``bootstrap`` refuses a workspace name that is already taken (compared ignoring case and the
spaces around it), so that running it twice does not leave two workspaces nobody can tell apart:
the owner gets another token with ``token``; ``--force`` creates the second workspace anyway."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import timedelta
from pathlib import Path

from peewee import fn

from core.boot import boot
from core.settings import Settings
from models.identity.accounts import add_member, bootstrap_workspace, issue_access_token
from models.identity.passwords import set_password_by_email
from models.kernel.db import session
from models.kernel.errors import Conflict, DomainError
from models.kernel.scoping import Workspace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=_program(), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    bootstrap = commands.add_parser(
        "bootstrap", help="create a workspace, its owner and an access token",
        description="Create a workspace, make the user (created if new) its owner and issue an access token. "
                    "A name already taken (ignoring case) is refused unless --force is given.")
    bootstrap.add_argument("--workspace", required=True, help="workspace name")
    bootstrap.add_argument("--email", required=True, help="owner's email (created if new)")
    bootstrap.add_argument("--name", help="owner's display name")
    bootstrap.add_argument("--force", action="store_true",
                           help="create the workspace even if one of that name exists (by default: an error, exit 2)")
    token = commands.add_parser("token", help="issue a new access token for an existing user")
    token.add_argument("--email", required=True)
    token.add_argument("--days", type=int, default=30, help="validity in days (default 30; 0: never expires)")
    member = commands.add_parser("member", help="add a user to a workspace with a role")
    member.add_argument("--workspace-id", required=True)
    member.add_argument("--email", required=True)
    member.add_argument("--role", default="member", help="owner, admin, member or viewer")
    password = commands.add_parser(
        "password", help="set a user's password, read from standard input",
        description="Set (or replace) the password of an existing user, to sign in with at POST /auth/sign-in. "
                    "The password is the first line of standard input (12 to 256 characters), never an "
                    "argument: a command line is seen by every user of the host and kept in shell histories.")
    password.add_argument("--email", required=True)
    args = parser.parse_args(argv)

    # Only the JSON answer goes to stdout; warnings (nothing at INFO) to stderr.
    boot(Settings.from_env(), log_level=logging.WARNING)
    try:
        with session():
            output = _run(args)
    except DomainError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    print(json.dumps(output))
    return 0


def _run(args) -> dict:
    if args.command == "bootstrap":
        if not args.force:
            _refuse_a_taken_name(args.workspace)
        workspace, user = bootstrap_workspace(workspace_name=args.workspace, email=args.email, display_name=args.name)
        _, secret = issue_access_token(email=user.email)
        return {"workspaceId": workspace.id, "userId": user.id, "token": secret}
    if args.command == "token":
        row, secret = issue_access_token(email=args.email, valid_for=timedelta(days=args.days) if args.days else None)
        return {"userId": row.user_id, "token": secret}
    if args.command == "password":
        user_id = set_password_by_email(args.email, sys.stdin.readline().rstrip("\r\n"))
        return {"userId": user_id, "passwordSet": True}
    user = add_member(workspace_id=args.workspace_id, email=args.email, role=args.role)
    return {"workspaceId": args.workspace_id, "userId": user.id, "role": args.role}


def _program() -> str:
    """How the operator called us: voice-agent-admin (the installed command) or scripts/admin (a
    checkout, which runs ``python -m api.admin``)."""
    name = Path(sys.argv[0]).name
    return "scripts/admin" if name.endswith(".py") or not name else name


def _refuse_a_taken_name(name: str) -> None:
    # Both sides through the database's LOWER: SQLite's folds ASCII letters only, and the same
    # function on both sides still matches a name exactly as it was stored.
    taken = (Workspace.select(Workspace.id).where(fn.LOWER(Workspace.name) == fn.LOWER(name.strip()))
             .order_by(Workspace.created_at).first())
    if taken is not None:
        raise Conflict(f"a workspace named {name.strip()!r} already exists ({taken.id}); "
                       f"for a new token of its owner: {_program()} token --email EMAIL; "
                       "to create a second workspace of that name: add --force")


if __name__ == "__main__":
    sys.exit(main())
