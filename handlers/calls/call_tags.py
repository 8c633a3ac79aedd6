"""Call tags: addCallTag, listCallTags, removeCallTag (DELETE /call/{callId}/tags, the call id and
the tag's name in the query, as the operation has always been documented)."""
from __future__ import annotations

from connexion import request

from api.envelope import ok
from models.calls import calls
from models.kernel.errors import InvalidInput


def add_call_tag(callId: str, body: dict, workspaceId: str):
    tags, added = calls.add_tag(workspace_id=workspaceId, call_id=callId, name=body["name"])
    return ok({"callId": callId, "tags": tags, "added": added}, "Tag added" if added else "The call has this tag already")


def list_call_tags(callId: str, workspaceId: str, limit: int = 20, offset: int = 0):
    # A call has a handful of tags, read whole and paged here, as every list is.
    tags = calls.list_tags(workspace_id=workspaceId, call_id=callId)
    return ok({"callId": callId, "tags": tags[offset:offset + limit],
               "pagination": {"total": len(tags), "limit": limit, "offset": offset}})


def remove_call_tag(callId: str, workspaceId: str, name: str):
    # The query names the call again, as documented, under the path's name: connexion hands the
    # handler the query's value, so the path's is read from the request. They must agree.
    path_call_id = request.path_params["callId"]
    if callId != path_call_id:
        raise InvalidInput(f"The query's callId {callId!r} must equal the path's {path_call_id!r}.")
    removed = calls.remove_tag(workspace_id=workspaceId, call_id=callId, name=name)
    message = f"Tag {removed!r} removed from the call."
    return ok({"success": True, "message": message}, message)
