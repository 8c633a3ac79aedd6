"""Workspace credits: getCreditBalance, listCreditEntries, grantCredits."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso, naive_utc
from models.billing import credits
from models.billing.credits import EntryRecord


def entry_shape(entry: EntryRecord) -> dict:
    return {"id": entry.id, "kind": entry.kind, "amount": entry.amount, "quantity": entry.quantity,
            "unit": entry.unit, "reference": entry.reference, "description": entry.description,
            "createdBy": entry.created_by, "createdAt": iso(entry.created_at)}


def get_credit_balance(workspaceId: str):
    return ok({"workspaceId": workspaceId, "balance": credits.balance(workspaceId),
               "enforced": credits.enforced()})


def list_credit_entries(workspaceId: str, limit: int = 20, offset: int = 0, kind: str | None = None,
                        since: str | None = None, until: str | None = None):
    page = credits.list_entries(workspace_id=workspaceId, limit=limit, offset=offset, kind=kind,
                                since=naive_utc(since, "since"), until=naive_utc(until, "until"))
    return ok({"entries": [entry_shape(e) for e in page.items], "pagination": page.pagination()})


def grant_credits(workspaceId: str, body: dict, principal):
    entry = credits.grant(workspace_id=workspaceId, credits=body["credits"], description=body.get("description"),
                          created_by=principal.user_id)
    return ok({"entry": entry_shape(entry), "balance": credits.balance(workspaceId)}, "Credits granted")
