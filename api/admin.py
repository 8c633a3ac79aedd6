"""Operator commands. ``bootstrap`` and ``token`` print one JSON object on stdout and nothing else."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import timedelta

from core.boot import boot
from core.settings import Settings
from models.db import session
from models.errors import DomainError
from models.identity import add_member, bootstrap_workspace, issue_access_token


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/admin", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    bootstrap = commands.add_parser("bootstrap", help="create a workspace, its owner and an access token")
    bootstrap.add_argument("--workspace", required=True, help="workspace name")
    bootstrap.add_argument("--email", required=True, help="owner's email (created if new)")
    bootstrap.add_argument("--name", help="owner's display name")
    token = commands.add_parser("token", help="issue a new access token for an existing user")
    token.add_argument("--email", required=True)
    token.add_argument("--days", type=int, default=30, help="validity in days (default 30; 0: never expires)")
    member = commands.add_parser("member", help="add a user to a workspace with a role")
    member.add_argument("--workspace-id", required=True)
    member.add_argument("--email", required=True)
    member.add_argument("--role", default="member", help="owner, admin, member or viewer")
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
        workspace, user = bootstrap_workspace(workspace_name=args.workspace, email=args.email, display_name=args.name)
        _, secret = issue_access_token(email=user.email)
        return {"workspaceId": workspace.id, "userId": user.id, "token": secret}
    if args.command == "token":
        row, secret = issue_access_token(email=args.email, valid_for=timedelta(days=args.days) if args.days else None)
        return {"userId": row.user_id, "token": secret}
    user = add_member(workspace_id=args.workspace_id, email=args.email, role=args.role)
    return {"workspaceId": args.workspace_id, "userId": user.id, "role": args.role}


if __name__ == "__main__":
    sys.exit(main())
