"""Unit tests over HTTP: suites (a name unique without case, a description, search, the filter by
assignment, pagination), their assertions (each kind's parameters at their bounds and just past,
the 100 per suite, changes of parameters and kind), their assignments to agents and workflows
(once each, of the workspace's own, gone with the entity), and another workspace's ids (404)."""
from __future__ import annotations

import pytest

from tests.support import factories
from tests.support.client import Api, owner

SUITES = "/unit-tests/suites"


def add_suite(api: Api, name: str = "Refunds", expect: int = 200, **body) -> dict:
    result = api("POST", SUITES, expect, json={"name": name, **body})
    return result["suite"] if expect == 200 else result


def add(api: Api, suite_id: str, expect: int = 200, **body) -> dict:
    """An assertion of the suite (a contains assertion named "Says refund" unless said)."""
    body = {"name": "Says refund", "kind": "contains", **({} if "kind" in body else {"text": "refund"}), **body}
    result = api("POST", f"{SUITES}/{suite_id}/assertions", expect, json=body)
    return result["assertion"] if expect == 200 else result


def message(api: Api, suite_id: str, **body) -> str:
    return add(api, suite_id, 400, **body)["message"]


# --- suites -------------------------------------------------------------------------------------

def test_a_suite_is_created_read_listed_changed_and_deleted_with_its_assertions_and_assignments(platform):
    api = owner(platform)
    made = add_suite(api, "  Refunds ", description="How refunds go.\nLine two.")
    assert made["name"] == "Refunds" and made["description"] == "How refunds go.\nLine two."
    assert made["assertionCount"] == 0 and made["assignments"] == [] and made["createdBy"] == api.actor.user_id
    assert api("GET", f"{SUITES}/{made['id']}")["suite"] == made
    assert api("GET", SUITES) == {"suites": [made], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    renamed = api("PATCH", f"{SUITES}/{made['id']}", json={"name": "Refunds and returns"})["suite"]
    assert renamed["name"] == "Refunds and returns" and renamed["description"] == made["description"]
    assert api("PATCH", f"{SUITES}/{made['id']}", json={"description": None})["suite"]["description"] is None
    agent_id = factories.agent(api.actor)
    add(api, made["id"])
    api("POST", f"{SUITES}/{made['id']}/assignments", json={"entityType": "agent", "entityId": agent_id})
    assert api("DELETE", f"{SUITES}/{made['id']}") == {"id": made["id"], "deleted": True}
    api("GET", f"{SUITES}/{made['id']}", 404)
    api("DELETE", f"{SUITES}/{made['id']}", 404)
    api("GET", f"{SUITES}/{made['id']}/assertions", 404)
    assert api("GET", SUITES, entityType="agent", entityId=agent_id)["suites"] == []
    from models.assertions.tables import Assertion, SuiteAssignment
    from models.kernel.db import session
    with session():
        assert Assertion.in_workspace(api.actor.workspace_id).count() == 0
        assert SuiteAssignment.in_workspace(api.actor.workspace_id).count() == 0


def test_the_name_is_1_to_100_characters_once_trimmed_and_the_description_up_to_2000(platform):
    api = owner(platform)
    assert add_suite(api, "N" * 100)["name"] == "N" * 100
    assert add_suite(api, "N" * 101, 400)["message"].startswith("Invalid value for name")
    assert add_suite(api, "   ", 400)["message"] == "name must be 1 to 100 characters once trimmed; 0 given."
    assert add_suite(api, "", 400)["message"].startswith("Invalid value for name")
    assert "name" in add_suite(api, "a\nb", 400)["message"]
    assert add_suite(api, "S")["name"] == "S"
    assert add_suite(api, "D1", description="d" * 2000)["description"] == "d" * 2000
    assert "description" in add_suite(api, "D2", 400, description="d" * 2001)["message"]
    assert "description" in add_suite(api, "D3", 400, description="  ")["message"]
    suite_id = add_suite(api, "K")["id"]
    api("PATCH", f"{SUITES}/{suite_id}", 400, json={"name": " "})
    api("PATCH", f"{SUITES}/{suite_id}", 400, json={"name": "N" * 101})
    api("PATCH", f"{SUITES}/{suite_id}", 400, json={"description": "d" * 2001})
    api("PATCH", f"{SUITES}/{suite_id}", 400, json={})


def test_a_name_is_unique_in_the_workspace_without_regard_to_case(platform):
    api = owner(platform)
    refunds = add_suite(api, "Refunds")
    data = add_suite(api, "REFUNDS", 409)
    assert data["code"] == "conflict" and f"named 'REFUNDS' already ({refunds['id']})" in data["message"]
    other = add_suite(api, "Returns")
    assert f"({refunds['id']})" in api("PATCH", f"{SUITES}/{other['id']}", 409, json={"name": "refunds"})["message"]
    # Its own name in another case is no conflict; another workspace's suites are its own.
    assert api("PATCH", f"{SUITES}/{refunds['id']}", json={"name": "REFUNDS"})["suite"]["name"] == "REFUNDS"
    assert add_suite(owner(platform), "Refunds")["name"] == "Refunds"


def test_the_list_is_by_name_searched_paged_and_filtered_by_assignment(platform):
    api = owner(platform)
    agent_id, other_agent = factories.agent(api.actor), factories.agent(api.actor)
    workflow_id = factories.workflow(api.actor, [agent_id])
    names = ["beta", "Alpha", "gamma 100%", "delta_x", "Epsilon"]
    made = {name: add_suite(api, name) for name in names}
    for _ in range(3):
        add(api, made["Alpha"]["id"])
    api("POST", f"{SUITES}/{made['beta']['id']}/assignments", json={"entityType": "agent", "entityId": agent_id})
    api("POST", f"{SUITES}/{made['Alpha']['id']}/assignments", json={"entityType": "agent", "entityId": agent_id})
    api("POST", f"{SUITES}/{made['Alpha']['id']}/assignments", json={"entityType": "workflow", "entityId": workflow_id})
    listed = api("GET", SUITES)
    assert [s["name"] for s in listed["suites"]] == ["Alpha", "beta", "delta_x", "Epsilon", "gamma 100%"]
    alpha = listed["suites"][0]
    assert alpha["assertionCount"] == 3 and alpha == api("GET", f"{SUITES}/{alpha['id']}")["suite"]
    assert [(a["entityType"], a["entityId"], a["entityName"]) for a in alpha["assignments"]] == \
        [("agent", agent_id, "agent"), ("workflow", workflow_id, "workflow")]
    page = api("GET", SUITES, limit=2, offset=2)
    assert [s["name"] for s in page["suites"]] == ["delta_x", "Epsilon"]
    assert page["pagination"] == {"total": 5, "limit": 2, "offset": 2}
    assert api("GET", SUITES, offset=10) == {"suites": [], "pagination": {"total": 5, "limit": 20, "offset": 10}}
    # q: a part of the name, without case, % and _ as themselves.
    assert [s["name"] for s in api("GET", SUITES, q="A")["suites"]] == ["Alpha", "beta", "delta_x", "gamma 100%"]
    assert [s["name"] for s in api("GET", SUITES, q="0%")["suites"]] == ["gamma 100%"]
    assert [s["name"] for s in api("GET", SUITES, q="a_")["suites"]] == ["delta_x"]
    assert api("GET", SUITES, q="zzz")["pagination"]["total"] == 0
    # Assigned to an agent or a workflow: both parameters or neither.
    by_agent = api("GET", SUITES, entityType="agent", entityId=agent_id)
    assert [s["name"] for s in by_agent["suites"]] == ["Alpha", "beta"] and by_agent["pagination"]["total"] == 2
    assert [s["name"] for s in api("GET", SUITES, entityType="workflow", entityId=workflow_id)["suites"]] == ["Alpha"]
    assert [s["name"] for s in api("GET", SUITES, entityType="agent", entityId=agent_id, q="b")["suites"]] == ["beta"]
    assert api("GET", SUITES, entityType="agent", entityId=other_agent)["suites"] == []
    assert api("GET", SUITES, entityType="workflow", entityId=agent_id)["suites"] == []
    assert "entityType and entityId go together" in api("GET", SUITES, 400, entityType="agent")["message"]
    assert "entityType and entityId go together" in api("GET", SUITES, 400, entityId=agent_id)["message"]
    api("GET", SUITES, 400, entityType="persona", entityId=agent_id)
    api("GET", SUITES, 400, limit=101)


def test_another_workspaces_suite_is_not_found(platform):
    api, other = owner(platform), owner(platform)
    theirs = add_suite(other)["id"]
    assertion_id = add(other, theirs)["id"]
    agent_id = factories.agent(api.actor)
    their_agent = factories.agent(other.actor)
    api("POST", f"{SUITES}/{theirs}/assignments", 404, json={"entityType": "agent", "entityId": agent_id})
    other("POST", f"{SUITES}/{theirs}/assignments", json={"entityType": "agent", "entityId": their_agent})
    for method, path, body in [("GET", "", None), ("PATCH", "", {"name": "Mine"}), ("DELETE", "", None),
                               ("GET", "/assertions", None), ("POST", "/assertions", {"name": "n", "kind": "judge",
                                                                                       "rubric": "r"}),
                               ("GET", f"/assertions/{assertion_id}", None),
                               ("PATCH", f"/assertions/{assertion_id}", {"name": "Mine"}),
                               ("DELETE", f"/assertions/{assertion_id}", None),
                               ("GET", "/assignments", None),
                               ("DELETE", f"/assignments/agent/{their_agent}", None)]:
        assert "No suite" in api(method, f"{SUITES}/{theirs}{path}", 404, json=body)["message"], (method, path)
    # Nor does their suite show in a list, even filtered by their agent.
    assert api("GET", SUITES)["suites"] == []
    assert api("GET", SUITES, entityType="agent", entityId=their_agent)["suites"] == []
    # Their assertion is none of a suite of ours.
    mine = add_suite(api)["id"]
    api("GET", f"{SUITES}/{mine}/assertions/{assertion_id}", 404)
    api("PATCH", f"{SUITES}/{mine}/assertions/{assertion_id}", 404, json={"name": "Mine"})
    api("DELETE", f"{SUITES}/{mine}/assertions/{assertion_id}", 404)
    assert other("GET", f"{SUITES}/{theirs}/assertions/{assertion_id}")["assertion"]["name"] == "Says refund"


# --- assertions ---------------------------------------------------------------------------------

def test_each_kind_is_created_with_its_defaults_and_listed_oldest_first(platform):
    api = owner(platform)
    suite_id = add_suite(api)["id"]
    made = [
        add(api, suite_id, kind="contains", text="refund"),
        add(api, suite_id, kind="not-contains", pattern="by (monday|tomorrow)", speaker="any", caseSensitive=True),
        add(api, suite_id, kind="json-field", field="orderNumber", exists=True),
        add(api, suite_id, kind="json-field", field="refund", equals={"amount": 12.5, "approved": True}),
        add(api, suite_id, kind="json-field", field="note", equals=None),
        add(api, suite_id, kind="max-turns", max=12),
        add(api, suite_id, kind="ended-by", by="caller"),
        add(api, suite_id, name="  Polite ", kind="judge", rubric="  The agent stays polite.\nAlways.  "),
    ]
    params = [{key: value for key, value in a.items()
               if key not in ("id", "suiteId", "name", "kind", "createdBy", "createdAt", "updatedAt")} for a in made]
    assert params == [{"text": "refund", "speaker": "agent", "caseSensitive": False},
                      {"pattern": "by (monday|tomorrow)", "speaker": "any", "caseSensitive": True},
                      {"field": "orderNumber", "exists": True},
                      {"field": "refund", "equals": {"amount": 12.5, "approved": True}},
                      {"field": "note", "equals": None},
                      {"max": 12}, {"by": "caller"}, {"rubric": "The agent stays polite.\nAlways."}]
    assert made[-1]["name"] == "Polite" and all(a["suiteId"] == suite_id for a in made)
    listed = api("GET", f"{SUITES}/{suite_id}/assertions")
    assert listed == {"assertions": made, "pagination": {"total": 8, "limit": 20, "offset": 0}}
    page = api("GET", f"{SUITES}/{suite_id}/assertions", limit=3, offset=6)
    assert page["assertions"] == made[6:] and page["pagination"] == {"total": 8, "limit": 3, "offset": 6}
    assert api("GET", f"{SUITES}/{suite_id}/assertions/{made[3]['id']}")["assertion"] == made[3]
    assert api("GET", f"{SUITES}/{suite_id}")["suite"]["assertionCount"] == 8
    assert api("DELETE", f"{SUITES}/{suite_id}/assertions/{made[0]['id']}") == {"id": made[0]["id"], "deleted": True}
    api("GET", f"{SUITES}/{suite_id}/assertions/{made[0]['id']}", 404)
    api("DELETE", f"{SUITES}/{suite_id}/assertions/{made[0]['id']}", 404)
    assert api("GET", f"{SUITES}/{suite_id}")["suite"]["assertionCount"] == 7
    # An empty suite lists none; a page past the end still counts them.
    assert api("GET", f"{SUITES}/{add_suite(api, 'Empty')['id']}/assertions")["assertions"] == []
    assert api("GET", f"{SUITES}/{suite_id}/assertions", offset=50)["pagination"]["total"] == 7


def test_the_name_and_the_said_parameters_at_their_bounds(platform):
    api = owner(platform)
    suite_id = add_suite(api)["id"]
    assert add(api, suite_id, name="N" * 100)["name"] == "N" * 100
    assert message(api, suite_id, name="N" * 101).startswith("Invalid value for name")
    assert message(api, suite_id, name="  ") == "name must be 1 to 100 characters once trimmed; 0 given."
    # text: as given, 1 to 500 characters, not only spaces.
    assert add(api, suite_id, text=" a" * 250)["text"] == " a" * 250
    assert add(api, suite_id, text="x")["text"] == "x"
    assert message(api, suite_id, text="x" * 501).startswith("Invalid value for text")
    assert message(api, suite_id, text="   ").startswith("text must be 1 to 500 characters, not only spaces")
    api("POST", f"{SUITES}/{suite_id}/assertions", 400, json={"name": "n", "kind": "contains", "text": ""})
    # pattern: 1 to 500 characters that compile.
    assert add(api, suite_id, kind="contains", pattern="a" * 500)["pattern"] == "a" * 500
    assert message(api, suite_id, kind="contains", pattern="a" * 501).startswith("Invalid value for pattern")
    assert message(api, suite_id, kind="contains", pattern="refund(ed") == \
        "pattern is not a valid regular expression: missing ) at position 9."
    assert "not a valid regular expression" in message(api, suite_id, kind="contains", pattern="*")
    # Counted repetitions: 1000 each, 10,000 nested together.
    assert add(api, suite_id, kind="contains", pattern="a{1000}")["pattern"] == "a{1000}"
    assert "at most 1000 times; {1001} asks for 1001" in message(api, suite_id, kind="contains", pattern="a{1001}")
    assert add(api, suite_id, kind="contains", pattern="(?:a{100}){100}")["pattern"] == "(?:a{100}){100}"
    assert "10000 times together; {101} makes it 10100" in message(api, suite_id, kind="contains",
                                                                    pattern="(?:a{100}){101}")
    assert "10000 times together" in message(api, suite_id, kind="contains", pattern="(?#[)(?:a{1000}){1000}")
    # Exactly one of text and pattern; speaker and caseSensitive from their sets.
    assert message(api, suite_id, text="a", pattern="a") == \
        "A contains assertion takes exactly one of text and pattern; both given."
    assert message(api, suite_id, kind="not-contains") == \
        "A not-contains assertion takes exactly one of text and pattern; neither given."
    assert add(api, suite_id, speaker="caller")["speaker"] == "caller"
    assert message(api, suite_id, speaker="bot").startswith("Invalid value for speaker")
    assert message(api, suite_id, caseSensitive="yes").startswith("Invalid value for caseSensitive")
    # A parameter of another kind, named with the kind's own.
    assert message(api, suite_id, max=3) == \
        "A contains assertion has no parameter 'max'; its parameters: text, pattern, speaker, caseSensitive."
    assert message(api, suite_id, kind="unknown").startswith("Invalid value for kind")


def test_the_other_kinds_parameters_at_their_bounds(platform):
    api = owner(platform)
    suite_id = add_suite(api)["id"]
    # json-field: a field of 1 to 100 characters, and equals (any JSON, 2000 characters) or exists.
    assert add(api, suite_id, kind="json-field", field="f" * 100, exists=False)["field"] == "f" * 100
    assert message(api, suite_id, kind="json-field", field="f" * 101, exists=True).startswith("Invalid value for field")
    assert message(api, suite_id, kind="json-field", field=" ", exists=True).startswith("field must be 1 to 100")
    assert message(api, suite_id, kind="json-field", exists=True) == "field is required."
    assert add(api, suite_id, kind="json-field", field="f", equals="x" * 1998)["equals"] == "x" * 1998
    assert message(api, suite_id, kind="json-field", field="f", equals="x" * 1999) == \
        "equals must be at most 2000 characters as JSON; 2001 given."
    assert add(api, suite_id, kind="json-field", field="f", equals=[1, "two", None])["equals"] == [1, "two", None]
    assert message(api, suite_id, kind="json-field", field="f") == \
        "A json-field assertion takes exactly one of equals and exists; neither given."
    assert "both given" in message(api, suite_id, kind="json-field", field="f", equals=1, exists=True)
    assert message(api, suite_id, kind="json-field", field="f", exists="true").startswith("Invalid value for exists")
    # max-turns: 1 to 1000.
    assert add(api, suite_id, kind="max-turns", max=1)["max"] == 1
    assert add(api, suite_id, kind="max-turns", max=1000)["max"] == 1000
    for bad in (0, 1001, 2.5, "3"):
        assert message(api, suite_id, kind="max-turns", max=bad).startswith("Invalid value for max")
    assert message(api, suite_id, kind="max-turns") == "max must be an integer from 1 to 1000."
    # ended-by: agent or caller.
    assert add(api, suite_id, kind="ended-by", by="agent")["by"] == "agent"
    assert message(api, suite_id, kind="ended-by", by="max-turns").startswith("Invalid value for by")
    assert message(api, suite_id, kind="ended-by") == "by is required: agent or caller."
    # judge: a rubric of 1 to 4000 characters once trimmed.
    assert add(api, suite_id, kind="judge", rubric="r" * 4000)["rubric"] == "r" * 4000
    assert message(api, suite_id, kind="judge", rubric="r" * 4001).startswith("Invalid value for rubric")
    assert message(api, suite_id, kind="judge", rubric=" \n ") == \
        "rubric must be 1 to 4000 characters once trimmed; 0 given."
    assert message(api, suite_id, kind="judge") == "rubric is required."
    assert message(api, suite_id, kind="judge", rubric="r", text="t") == \
        "A judge assertion has no parameter 'text'; its parameters: rubric."


def test_a_suite_holds_at_most_100_assertions(platform):
    api = owner(platform)
    suite_id = add_suite(api)["id"]
    for _ in range(99):
        factories.assertion(api.actor, suite_id)
    last = add(api, suite_id)
    data = add(api, suite_id, 409)
    assert data["code"] == "conflict" and data["message"] == \
        "A suite holds at most 100 assertions; delete one or start another suite."
    assert api("GET", f"{SUITES}/{suite_id}")["suite"]["assertionCount"] == 100
    api("DELETE", f"{SUITES}/{suite_id}/assertions/{last['id']}")
    add(api, suite_id)
    # Another suite has its own hundred.
    add(api, add_suite(api, "Other")["id"])


def test_a_change_merges_parameters_of_the_same_kind_and_replaces_them_for_another(platform):
    api = owner(platform)
    suite_id = add_suite(api)["id"]
    made = add(api, suite_id, speaker="any")
    path = f"{SUITES}/{suite_id}/assertions/{made['id']}"
    changed = api("PATCH", path, json={"name": "Says refund, exactly", "caseSensitive": True})["assertion"]
    assert (changed["name"], changed["text"], changed["speaker"], changed["caseSensitive"]) == \
        ("Says refund, exactly", "refund", "any", True)
    assert changed["createdAt"] == made["createdAt"] and changed["updatedAt"] >= made["updatedAt"]
    # A pattern replaces the text (one of them), the rest kept.
    changed = api("PATCH", path, json={"pattern": "refund(ed)?"})["assertion"]
    assert "text" not in changed and changed["pattern"] == "refund(ed)?" and changed["caseSensitive"] is True
    assert "both given" in api("PATCH", path, 400, json={"text": "a", "pattern": "b"})["message"]
    assert "not a valid regular expression" in api("PATCH", path, 400, json={"pattern": "("})["message"]
    assert api("PATCH", path, 400, json={"max": 3})["message"].startswith("A contains assertion has no parameter 'max'")
    # Another kind takes the parameters given as all of its own.
    changed = api("PATCH", path, json={"kind": "not-contains", "text": "sorry"})["assertion"]
    assert {k: changed[k] for k in ("kind", "text", "speaker", "caseSensitive")} == \
        {"kind": "not-contains", "text": "sorry", "speaker": "agent", "caseSensitive": False}
    assert "pattern" not in changed
    assert api("PATCH", path, 400, json={"kind": "ended-by"})["message"] == "by is required: agent or caller."
    assert api("PATCH", path, 400, json={"kind": "judge", "text": "x"})["message"].startswith(
        "A judge assertion has no parameter 'text'")
    changed = api("PATCH", path, json={"kind": "json-field", "field": "total", "equals": 3})["assertion"]
    assert (changed["kind"], changed["field"], changed["equals"]) == ("json-field", "total", 3)
    changed = api("PATCH", path, json={"exists": False})["assertion"]
    assert "equals" not in changed and changed["exists"] is False and changed["field"] == "total"
    # The same kind named again merges as without it.
    assert api("PATCH", path, json={"kind": "json-field", "field": "sum"})["assertion"]["exists"] is False
    api("PATCH", path, 400, json={})
    api("PATCH", path, 400, json={"name": " "})
    assert api("GET", path)["assertion"]["field"] == "sum"


# --- assignments --------------------------------------------------------------------------------

def test_a_suite_is_assigned_once_to_an_agent_or_workflow_of_the_workspace(platform):
    api, other = owner(platform), owner(platform)
    suite_id = add_suite(api)["id"]
    agent_id = factories.agent(api.actor, name="Receptionist")
    workflow_id = factories.workflow(api.actor, [agent_id], name="Front desk")
    assignments = f"{SUITES}/{suite_id}/assignments"
    first = api("POST", assignments, json={"entityType": "agent", "entityId": agent_id})["assignment"]
    assert first["suiteId"] == suite_id and first["entityName"] == "Receptionist"
    assert first["assignedBy"] == api.actor.user_id
    # Twice changes nothing and answers the same.
    assert api("POST", assignments, json={"entityType": "agent", "entityId": agent_id})["assignment"] == first
    flow = api("POST", assignments, json={"entityType": "workflow", "entityId": workflow_id})["assignment"]
    assert flow["entityName"] == "Front desk"
    listed = api("GET", assignments)
    assert listed == {"assignments": [first, flow], "pagination": {"total": 2, "limit": 20, "offset": 0}}
    assert api("GET", assignments, limit=1, offset=1)["assignments"] == [flow]
    assert api("GET", f"{SUITES}/{suite_id}")["suite"]["assignments"] == [first, flow]
    # An entity of the wrong kind, unknown, or another workspace's: 404 naming it.
    their_agent = factories.agent(other.actor)
    for body in ({"entityType": "workflow", "entityId": agent_id}, {"entityType": "agent", "entityId": their_agent},
                 {"entityType": "agent", "entityId": "00000000-0000-4000-8000-000000000000"}):
        data = api("POST", assignments, 404, json=body)
        assert data["message"] == f"entityId: no {body['entityType']} {body['entityId']} in this workspace."
    api("POST", assignments, 400, json={"entityType": "persona", "entityId": agent_id})
    api("POST", assignments, 400, json={"entityType": "agent"})
    api("POST", assignments, 400, json={"entityType": "agent", "entityId": "not-a-uuid"})
    # Unassigned: then no more, and 404 when not assigned.
    assert api("DELETE", f"{assignments}/agent/{agent_id}") == {"id": agent_id, "deleted": True}
    assert api("DELETE", f"{assignments}/agent/{agent_id}", 404)["message"] == \
        f"Suite {suite_id} is not assigned to agent {agent_id}."
    api("DELETE", f"{assignments}/agent/{workflow_id}", 404)
    api("DELETE", f"{assignments}/robot/{workflow_id}", 400)
    assert api("GET", assignments)["assignments"] == [flow]
    # A suite without assignments lists none.
    assert api("GET", f"{SUITES}/{add_suite(api, 'Other')['id']}/assignments")["assignments"] == []


@pytest.mark.parametrize("kind", ["agent", "workflow"])
def test_deleting_the_entity_deletes_its_assignments_not_the_suite(platform, kind):
    api = owner(platform)
    suite_id, kept = add_suite(api)["id"], add_suite(api, "Kept")["id"]
    agent_id = factories.agent(api.actor)
    entity_id = agent_id if kind == "agent" else factories.workflow(api.actor, [agent_id])
    other_agent = factories.agent(api.actor)
    for suite in (suite_id, kept):
        api("POST", f"{SUITES}/{suite}/assignments", json={"entityType": kind, "entityId": entity_id})
    api("POST", f"{SUITES}/{kept}/assignments", json={"entityType": "agent", "entityId": other_agent})
    api("DELETE", f"/{kind}s/{entity_id}")
    assert api("GET", f"{SUITES}/{suite_id}/assignments")["assignments"] == []
    assert [a["entityId"] for a in api("GET", f"{SUITES}/{kept}")["suite"]["assignments"]] == [other_agent]
    assert api("GET", SUITES, entityType=kind, entityId=entity_id)["suites"] == []
    from models.assertions import suites
    from models.kernel.db import session
    with session():
        assert suites.suites_for(workspace_id=api.actor.workspace_id, entity_type=kind, entity_id=entity_id) == []
