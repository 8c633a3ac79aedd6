"""The workspace's feedback statuses over HTTP: the defaults, a replacement and its rules (names,
1 to 20, one resolved and one not, unique), a status some feedback holds cannot go (409 naming it
and how many), feedback following a status that changes side, and the new statuses checked on
create, update, resolve and the list's filter."""
from __future__ import annotations

import pytest

from tests.support import factories
from tests.support.client import Api, owner

DEFAULTS = [{"name": "open", "resolved": False}, {"name": "in_progress", "resolved": False},
            {"name": "resolved", "resolved": True}, {"name": "wont_fix", "resolved": True}]


def put(api: Api, statuses, expect: int = 200) -> dict:
    return api("PUT", "/feedback-statuses", expect, json={"statuses": statuses})


def test_a_workspace_has_the_defaults_until_it_sets_its_own(platform):
    api = owner(platform)
    assert api("GET", "/feedback-statuses") == {"statuses": DEFAULTS}
    mine = [{"name": "new", "resolved": False}, {"name": "fixed", "resolved": True}]
    assert put(api, mine) == {"statuses": mine}
    assert api("GET", "/feedback-statuses") == {"statuses": mine}
    assert owner(platform)("GET", "/feedback-statuses") == {"statuses": DEFAULTS}  # another workspace's


def test_the_new_statuses_are_what_feedback_takes_and_what_is_checked(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    put(api, [{"name": "triage", "resolved": False}, {"name": "doing", "resolved": False},
              {"name": "fixed", "resolved": True}, {"name": "dropped", "resolved": True}])
    made = api("POST", "/feedbacks", json={"title": "t", "agentId": agent_id})["feedback"]
    assert made["status"] == "triage"
    message = api("POST", "/feedbacks", 400, json={"title": "t", "agentId": agent_id, "status": "open"})["message"]
    assert message == ("status must be one of this workspace's feedback statuses: triage, doing, fixed, dropped; "
                       "'open' is not.")
    api("PATCH", f"/feedbacks/{made['id']}", 400, json={"status": "resolved"})
    assert "'open'" in api("GET", "/feedbacks", 400, status="open")["message"]
    assert api("POST", f"/feedbacks/{made['id']}/resolve")["feedback"]["status"] == "fixed"
    assert api("POST", f"/feedbacks/{made['id']}/reopen")["feedback"]["status"] == "triage"
    api("PATCH", f"/feedbacks/{made['id']}", json={"status": "dropped"})
    assert [f["status"] for f in api("GET", "/feedbacks", status="dropped,fixed")["feedbacks"]] == ["dropped"]


def test_a_status_some_feedback_holds_cannot_be_removed(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    for _ in range(2):
        factories.feedback(api.actor, agent_id=agent_id, status="in_progress")
    factories.feedback(api.actor, agent_id=agent_id, status="wont_fix")
    factories.feedback(api.actor, agent_id=agent_id)
    message = put(api, [{"name": "open", "resolved": False}, {"name": "resolved", "resolved": True}], 409)["message"]
    assert message == ("A status some feedback holds cannot be removed: 'in_progress' is held by 2 feedback; "
                       "'wont_fix' is held by 1 feedback. Move that feedback to another status first.")
    assert api("GET", "/feedback-statuses") == {"statuses": DEFAULTS}
    # Renaming is removing one and adding another: the same rule.
    put(api, [{"name": "todo", "resolved": False}, {"name": "in_progress", "resolved": False},
              {"name": "resolved", "resolved": True}, {"name": "wont_fix", "resolved": True}], 409)


def test_feedback_follows_a_status_that_changes_side(platform):
    api = owner(platform)
    agent_id = factories.agent(api.actor)
    doing = factories.feedback(api.actor, agent_id=agent_id, status="in_progress")
    dropped = factories.feedback(api.actor, agent_id=agent_id, status="wont_fix")
    put(api, [{"name": "open", "resolved": False}, {"name": "in_progress", "resolved": True},
              {"name": "resolved", "resolved": True}, {"name": "wont_fix", "resolved": False}])
    now_resolved = api("GET", f"/feedbacks/{doing}")["feedback"]
    assert now_resolved["resolved"] is True and now_resolved["resolvedBy"] == api.actor.user_id
    now_open = api("GET", f"/feedbacks/{dropped}")["feedback"]
    assert (now_open["resolved"], now_open["resolvedAt"], now_open["resolvedBy"]) == (False, None, None)
    assert [f["id"] for f in api("GET", "/feedbacks", resolved="true")["feedbacks"]] == [doing]


@pytest.mark.parametrize("statuses, expect, words", [
    ([{"name": "a", "resolved": False}, {"name": "b", "resolved": True}], 200, None),
    ([{"name": "a" * 32, "resolved": False}, {"name": "b", "resolved": True}], 200, None),
    ([{"name": "a" * 33, "resolved": False}, {"name": "b", "resolved": True}], 400, "name"),
    ([{"name": "Open", "resolved": False}, {"name": "b", "resolved": True}], 400, "name"),
    ([{"name": "1st", "resolved": False}, {"name": "b", "resolved": True}], 400, "name"),
    ([{"name": "a-b", "resolved": False}, {"name": "b", "resolved": True}], 400, "name"),
    ([{"name": "a\x00", "resolved": False}, {"name": "b", "resolved": True}], 400, "name"),
    ([{"name": "a", "resolved": False}, {"name": "a", "resolved": True}], 400, "listed twice"),
    ([{"name": "a", "resolved": False}, {"name": "b", "resolved": False}], 400, "at least one"),
    ([{"name": "a", "resolved": True}, {"name": "b", "resolved": True}], 400, "at least one"),
    ([{"name": "a", "resolved": True}], 400, "at least one"),
    ([], 400, "statuses"),
    ([{"name": f"s{i}", "resolved": i == 0} for i in range(20)], 200, None),
    ([{"name": f"s{i}", "resolved": i == 0} for i in range(21)], 400, "statuses"),
    ([{"name": "a", "resolved": "yes"}, {"name": "b", "resolved": True}], 400, "resolved"),
    ([{"name": "a"}, {"name": "b", "resolved": True}], 400, "resolved"),
])
def test_the_rules_of_a_configuration(platform, statuses, expect, words):
    api = owner(platform)
    answer = put(api, statuses, expect)
    if expect == 200:
        assert answer == {"statuses": statuses}
    else:
        assert words in answer["message"]
        assert api("GET", "/feedback-statuses") == {"statuses": DEFAULTS}


def test_reading_needs_feedbacks_read_and_replacing_feedbacks_config(platform):
    api = owner(platform)
    member = Api(platform, factories.api_key(api.actor, permissions=["feedbacks:read", "feedbacks:write"]))
    assert member("GET", "/feedback-statuses") == {"statuses": DEFAULTS}
    assert "feedbacks:config" in put(member, DEFAULTS, 403)["message"]
