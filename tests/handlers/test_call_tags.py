"""Call tags over HTTP: add (trimmed, idempotent without regard to case, 1 to 64 characters), list,
and remove as documented (the call id and the name in the query)."""
from __future__ import annotations

import uuid

from tests.support import factories
from tests.support.client import Api


def setup(platform):
    api = Api(platform, platform.workspace())
    return api, factories.call(api.actor)


def remove(api: Api, call_id: str, name: str, expect: int = 200, query_call_id: str | None = None):
    return api("DELETE", f"/call/{call_id}/tags", expect, callId=query_call_id or call_id, name=name)


def test_add_trims_keeps_the_first_spelling_and_is_idempotent_without_regard_to_case(platform):
    api, call_id = setup(platform)
    first = api("POST", f"/call/{call_id}/tags", json={"name": "  Follow-up "})
    assert first == {"callId": call_id, "tags": ["Follow-up"], "added": True}
    again = api("POST", f"/call/{call_id}/tags", json={"name": "FOLLOW-UP"})
    assert again["added"] is False and again["tags"] == ["Follow-up"]
    api("POST", f"/call/{call_id}/tags", json={"name": "vip"})
    assert api("GET", f"/call/{call_id}/tags")["tags"] == ["Follow-up", "vip"]


def test_a_name_is_1_to_64_characters_once_trimmed(platform):
    api, call_id = setup(platform)
    assert api("POST", f"/call/{call_id}/tags", json={"name": "x" * 64})["added"] is True
    assert "64" in api("POST", f"/call/{call_id}/tags", 400, json={"name": "x" * 65})["message"]
    assert "name" in api("POST", f"/call/{call_id}/tags", 400, json={"name": "   "})["message"]
    api("POST", f"/call/{call_id}/tags", 400, json={"name": ""})
    api("POST", f"/call/{call_id}/tags", 400, json={"name": "a\x00b"})
    api("POST", f"/call/{call_id}/tags", 400, json={})
    assert api("POST", f"/call/{call_id}/tags", json={"name": " " + "y" * 62 + " "})["tags"][-1] == "y" * 62


def test_remove_as_spec_writes_it_answers_success_and_message(platform):
    api, call_id = setup(platform)
    api("POST", f"/call/{call_id}/tags", json={"name": "Billing"})
    result = remove(api, call_id, "billing")
    assert result["success"] is True and "Billing" in result["message"]
    assert api("GET", f"/call/{call_id}/tags")["tags"] == []
    assert "no tag" in remove(api, call_id, "billing", 404)["message"]


def test_the_query_call_id_must_equal_the_paths(platform):
    api, call_id = setup(platform)
    api("POST", f"/call/{call_id}/tags", json={"name": "a"})
    other = factories.call(api.actor)
    error = remove(api, call_id, "a", 400, query_call_id=other)
    assert "must equal the path's" in error["message"]
    assert api("GET", f"/call/{call_id}/tags")["tags"] == ["a"]
    api("DELETE", f"/call/{call_id}/tags", 400, name="a")  # the query's callId is required


def test_unknown_and_foreign_calls_are_404(platform):
    api, _ = setup(platform)
    other = Api(platform, platform.workspace())
    foreign = factories.call(other.actor)
    for call_id in (foreign, str(uuid.uuid4())):
        api("POST", f"/call/{call_id}/tags", 404, json={"name": "a"})
        api("GET", f"/call/{call_id}/tags", 404)
        remove(api, call_id, "a", 404)


def test_tags_need_calls_write_to_change_and_calls_read_to_list(platform):
    api, call_id = setup(platform)
    viewer = Api(platform, factories.member(api.actor, "viewer"))
    viewer("POST", f"/call/{call_id}/tags", 403, json={"name": "a"})
    api("POST", f"/call/{call_id}/tags", json={"name": "a"})
    assert viewer("GET", f"/call/{call_id}/tags")["tags"] == ["a"]
    remove(viewer, call_id, "a", 403)
