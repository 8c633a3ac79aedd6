"""The do-not-call list: listSuppressions, addSuppressions, checkSuppression, getSuppression,
deleteSuppression."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso, naive_utc
from models.kernel.db import utcnow
from models.telephony import do_not_call
from models.telephony.do_not_call import SuppressionRecord


def suppression_shape(record: SuppressionRecord, now) -> dict:
    return {"id": record.id, "number": record.number, "reason": record.reason, "source": record.source,
            "addedBy": record.added_by, "addedAt": iso(record.added_at), "expiresAt": iso(record.expires_at),
            "expired": record.expired(now)}


def list_suppressions(workspaceId: str, q: str | None = None, source: str | None = None,
                      includeExpired: bool = False, limit: int = 20, offset: int = 0):
    now = utcnow()
    page = do_not_call.list_suppressions(workspace_id=workspaceId, limit=limit, offset=offset, q=q, source=source,
                                         include_expired=includeExpired, now=now)
    return ok({"suppressions": [suppression_shape(s, now) for s in page.items], "pagination": page.pagination()})


def add_suppressions(workspaceId: str, body: dict, principal):
    now = utcnow()
    items = [{**item, "expiresAt": naive_utc(item.get("expiresAt"), f"numbers[{i}].expiresAt")}
             for i, item in enumerate(body["numbers"])]
    result = do_not_call.add(principal, workspace_id=workspaceId, numbers=items,
                             source=body.get("source", "manual"), now=now)
    message = f"{result.added} number{'' if result.added == 1 else 's'} added to the do-not-call list"
    if result.already_listed:
        message += f", {result.already_listed} already listed"
    if result.failed:
        message += f", {len(result.failed)} refused"
    return ok({"added": result.added, "alreadyListed": result.already_listed, "failed": result.failed,
               "suppressions": [suppression_shape(s, now) for s in result.suppressions]}, message)


def check_suppression(workspaceId: str, number: str):
    now = utcnow()
    number, record = do_not_call.check(workspace_id=workspaceId, number=number, now=now)
    listed = record is not None
    return ok({"number": number, "suppressed": listed,
               "suppression": suppression_shape(record, now) if listed else None},
              f"{number} is {'' if listed else 'not '}on the do-not-call list")


def get_suppression(workspaceId: str, suppressionId: str):
    record = do_not_call.get(workspace_id=workspaceId, suppression_id=suppressionId)
    return ok({"suppression": suppression_shape(record, utcnow())})


def delete_suppression(workspaceId: str, suppressionId: str):
    do_not_call.delete(workspace_id=workspaceId, suppression_id=suppressionId)
    return deleted(suppressionId, "Number removed from the do-not-call list")
