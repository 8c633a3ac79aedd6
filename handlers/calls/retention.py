"""Data retention on demand: purgeRetention."""
from __future__ import annotations

from api.audit_trail import note
from api.envelope import ok
from handlers.wire import iso
from models.calls import retention


def purge_retention(workspaceId: str, body: dict):
    outcome = retention.purge(workspace_id=workspaceId, dry_run=body.get("dryRun", False),
                              older_than_days=body.get("olderThanDays"))
    counts = outcome.deleted._asdict()
    if not outcome.dry_run:
        note(deleted=counts, cutoff=iso(outcome.cutoff))
    verb = "would be deleted" if outcome.dry_run else "deleted"
    return ok({"dryRun": outcome.dry_run, "olderThanDays": outcome.days, "cutoff": iso(outcome.cutoff),
               ("wouldDelete" if outcome.dry_run else "deleted"): counts},
              f"{outcome.deleted.calls} call{'' if outcome.deleted.calls == 1 else 's'} {verb}")
