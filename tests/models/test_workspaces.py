"""Deleting a workspace: of several deletions racing (two tabs, a retried request), one deletes
and the others are told the workspace is gone (on PostgreSQL with TEST_DATABASE_URL, as on SQLite)."""
from __future__ import annotations

from models.identity import workspaces
from models.identity.principal import Principal
from models.kernel.db import session
from models.kernel.errors import NotFound
from tests.support import factories
from tests.support.threads import run_threads


def test_of_concurrent_deletions_of_a_workspace_one_deletes_and_the_others_are_not_found(db):
    owner = factories.workspace("Doomed")
    kept = factories.workspace("Kept")
    principal = Principal(credential_id="c", kind="access_token", user_id=owner.user_id,
                          workspace_id=owner.workspace_id, permissions=frozenset({"workspace:delete"}))

    def delete(_index: int):
        with session():
            try:
                return workspaces.delete(principal, workspace_id=owner.workspace_id, confirm_name="Doomed")
            except NotFound as exc:
                return str(exc)

    results = run_threads(4, delete)
    assert sorted(results) == ["Doomed"] + [f"No workspace {owner.workspace_id}."] * 3
    with session():
        assert workspaces.get(kept.workspace_id).name == "Kept"
