"""Personas over HTTP: created, read, listed, changed and deleted; every field at its bounds and
just past them; names unique without regard to case (409 naming the holder, also for twenty
creations at once); PATCH (any subset, null clearing the optional fields); search and pages; another
workspace's personas (404); and the reads simulations use (``get_persona``, ``personas_by_id``)."""
from __future__ import annotations

import logging
import uuid

import pytest

from models.kernel.db import session
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads

GOAL = "Book a table for two tonight at 8 pm."
FIELDS = {"id", "workspaceId", "name", "goal", "traits", "language", "openingLine", "facts", "constraints",
          "endCondition", "metadata", "createdBy", "createdAt", "updatedAt"}
FULL = {"name": "Hard-of-hearing pensioner", "goal": "Move the appointment.\nAny morning next week.",
        "traits": ["hard of hearing", "polite"], "language": "en-GB", "openingLine": "Hello? Is this the dentist?",
        "facts": {"patientName": "Margaret Hill", "address": "1 High Street\nLeeds"},
        "constraints": ["never gives their date of birth"], "endCondition": "Hangs up once the date is confirmed.",
        "metadata": {"suite": "dentist", "weights": [1, 2], "nested": {"a": None}}}


def create(api: Api, expect: int = 200, **body) -> dict:
    body.setdefault("name", f"Caller {uuid.uuid4().hex[:8]}")
    body.setdefault("goal", GOAL)
    result = api("POST", "/personas", expect, json=body)
    return result["persona"] if expect == 200 else result


def patch(api: Api, persona_id: str, expect: int = 200, **body) -> dict:
    result = api("PATCH", f"/personas/{persona_id}", expect, json=body)
    return result["persona"] if expect == 200 else result


def test_a_persona_is_created_read_listed_changed_and_deleted(platform):
    api = owner(platform)
    made = create(api, name="Impatient caller")
    assert set(made) == FIELDS
    assert {k: made[k] for k in FIELDS - {"id", "createdAt", "updatedAt"}} == {
        "workspaceId": api.actor.workspace_id, "name": "Impatient caller", "goal": GOAL, "traits": [],
        "language": "en", "openingLine": None, "facts": {}, "constraints": [], "endCondition": None,
        "metadata": {}, "createdBy": api.actor.user_id}
    assert api("GET", f"/personas/{made['id']}")["persona"] == made
    assert api("GET", "/personas") == {"personas": [made], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    changed = patch(api, made["id"], goal="Book a table for four.")
    assert changed["goal"] == "Book a table for four." and changed["name"] == "Impatient caller"
    assert changed["createdAt"] == made["createdAt"] and changed["updatedAt"] >= made["updatedAt"]
    assert api("DELETE", f"/personas/{made['id']}") == {"id": made["id"], "deleted": True}
    api("GET", f"/personas/{made['id']}", 404)
    assert api("DELETE", f"/personas/{made['id']}", 404)["message"] == f"No persona {made['id']} in this workspace."
    patch(api, made["id"], 404, goal="Anything.")
    assert api("GET", "/personas")["personas"] == []


def test_every_field_is_kept_as_given_trimmed(platform):
    api = owner(platform)
    made = create(api, **FULL)
    assert {k: made[k] for k in FULL} == FULL
    padded = create(api, name="  Padded  ", goal="  Wants it.\n ", traits=[" rude "], openingLine=" Hi. ",
                    facts={" account ": " 12345 "}, constraints=[" never waits "], endCondition=" Hangs up. ")
    assert (padded["name"], padded["goal"], padded["traits"], padded["openingLine"], padded["facts"],
            padded["constraints"], padded["endCondition"]) == \
        ("Padded", "Wants it.", ["rude"], "Hi.", {"account": "12345"}, ["never waits"], "Hangs up.")


# --- each field at its bounds and just past them -------------------------------------------------

def test_the_name_is_1_to_100_characters_once_trimmed_on_one_line(platform):
    api = owner(platform)
    assert create(api, name="N" * 100)["name"] == "N" * 100
    assert create(api, name="N")["name"] == "N"
    assert create(api, 400, name="N" * 101)["message"].startswith("Invalid value for name")
    assert create(api, 400, name="")["message"].startswith("Invalid value for name")
    assert create(api, 400, name="   ")["message"] == "name must be 1 to 100 characters once trimmed; 0 given."
    assert "name" in create(api, 400, name="a\tb")["message"]
    assert "name" in create(api, 400, name=None)["message"]
    assert "name" in api("POST", "/personas", 400, json={"goal": GOAL})["message"]


def test_the_goal_is_1_to_2000_characters_once_trimmed_of_free_text(platform):
    api = owner(platform)
    assert create(api, goal="G" * 2000)["goal"] == "G" * 2000
    assert create(api, goal="G")["goal"] == "G"
    assert create(api, goal="First this.\n\tThen that.")["goal"] == "First this.\n\tThen that."
    assert create(api, 400, goal="G" * 2001)["message"].startswith("Invalid value for goal")
    assert create(api, 400, goal="")["message"].startswith("Invalid value for goal")
    assert create(api, 400, goal=" \n ")["message"] == "goal must be 1 to 2000 characters once trimmed; 0 given."
    assert "goal" in create(api, 400, goal="a\x01b")["message"]
    assert "goal" in api("POST", "/personas", 400, json={"name": "No goal"})["message"]


def test_traits_are_up_to_20_of_1_to_100_characters_each_listed_once(platform):
    api = owner(platform)
    twenty = [f"trait {i}" for i in range(20)]
    assert create(api, traits=twenty)["traits"] == twenty
    assert create(api, traits=["T" * 100])["traits"] == ["T" * 100]
    assert create(api, traits=[])["traits"] == []
    assert "traits" in create(api, 400, traits=[*twenty, "one more"])["message"]
    assert "traits" in create(api, 400, traits=["T" * 101])["message"]
    assert "traits" in create(api, 400, traits=[""])["message"]
    assert "traits" in create(api, 400, traits=["a\nb"])["message"]
    assert create(api, 400, traits=["ok", "  "])["message"] == \
        "traits[1] must be 1 to 100 characters once trimmed; 0 given."
    assert create(api, 400, traits=["impatient", "polite", " IMPATIENT "])["message"] == \
        "traits lists 'IMPATIENT' twice (traits[0] and traits[2]); each is listed once without regard to case."


def test_the_language_is_a_bcp_47_tag_of_2_to_35_characters_en_by_default(platform):
    api = owner(platform)
    longest = "abc" + "-abcdefgh" * 3 + "-abcd"
    assert len(longest) == 35
    for tag in ("en", "en-US", "zh-Hant-TW", "yue", "es-419", longest):
        assert create(api, language=tag)["language"] == tag
    for tag in (longest + "e", "e", "english", "en_US", "en-", "en-a", "en-abcdefghi", "1n", ""):
        assert "language" in create(api, 400, language=tag)["message"], tag


@pytest.mark.parametrize("field, wire", [("opening_line", "openingLine"), ("end_condition", "endCondition")])
def test_the_opening_line_and_end_condition_are_up_to_1000_characters_and_blank_is_none(platform, field, wire):
    api = owner(platform)
    assert create(api, **{wire: "L" * 1000})[wire] == "L" * 1000
    assert create(api, **{wire: "L"})[wire] == "L"
    assert create(api, **{wire: "Two\nlines."})[wire] == "Two\nlines."
    assert create(api, **{wire: ""})[wire] is None
    assert create(api, **{wire: " \n "})[wire] is None
    assert wire in create(api, 400, **{wire: None})["message"]  # null clears it in a PATCH; a new one leaves it out
    assert create(api, 400, **{wire: "L" * 1001})["message"].startswith(f"Invalid value for {wire}")
    assert wire in create(api, 400, **{wire: "a\x7fb"})["message"]


def test_facts_are_up_to_50_names_of_1_to_100_characters_to_texts_of_up_to_1000(platform):
    api = owner(platform)
    fifty = {f"fact{i}": str(i) for i in range(50)}
    assert create(api, facts=fifty)["facts"] == fifty
    assert create(api, facts={"K" * 100: "V" * 1000, "empty": ""})["facts"] == {"K" * 100: "V" * 1000, "empty": ""}
    assert "facts" in create(api, 400, facts={**fifty, "one more": "x"})["message"]
    assert "facts" in create(api, 400, facts={"k": "V" * 1001})["message"]
    assert "facts" in create(api, 400, facts={"k": 12345})["message"]
    assert "facts" in create(api, 400, facts={"k": "a\x00b"})["message"]
    assert "facts" in create(api, 400, facts={"a\nb": "v"})["message"]
    assert create(api, 400, facts={"K" * 101: "v"})["message"] == \
        f"Each name in facts must be 1 to 100 characters once trimmed; '{'K' * 32}... (101 characters)' has 101."
    assert create(api, 400, facts={"  ": "v"})["message"] == \
        "Each name in facts must be 1 to 100 characters once trimmed; '  ' has 0."
    assert create(api, 400, facts={"account": "1", " account ": "2"})["message"] == \
        "facts names 'account' twice once trimmed."
    assert "facts" in create(api, 400, facts=["account", "12345"])["message"]


def test_constraints_are_up_to_20_of_1_to_500_characters_each_listed_once(platform):
    api = owner(platform)
    twenty = [f"never does {i}" for i in range(20)]
    assert create(api, constraints=twenty)["constraints"] == twenty
    assert create(api, constraints=["C" * 500])["constraints"] == ["C" * 500]
    assert "constraints" in create(api, 400, constraints=[*twenty, "one more"])["message"]
    assert "constraints" in create(api, 400, constraints=["C" * 501])["message"]
    assert "constraints" in create(api, 400, constraints=[""])["message"]
    assert "constraints" in create(api, 400, constraints=["a\nb"])["message"]
    assert create(api, 400, constraints=["Never waits", "never WAITS"])["message"] == \
        "constraints lists 'never WAITS' twice (constraints[0] and constraints[1]); each is listed once without " \
        "regard to case."


def test_metadata_is_an_object_of_up_to_50_properties(platform):
    api = owner(platform)
    fifty = {f"k{i}": i for i in range(50)}
    assert create(api, metadata=fifty)["metadata"] == fifty
    assert create(api, metadata={"deep": {"list": [1, "two", None, True]}})["metadata"] == \
        {"deep": {"list": [1, "two", None, True]}}
    assert "metadata" in create(api, 400, metadata={**fifty, "k50": 50})["message"]
    assert "metadata" in create(api, 400, metadata=[1])["message"]
    assert "metadata" in create(api, 400, metadata={"k": "a\x1bb"})["message"]


def test_an_unknown_field_is_400_naming_it(platform):
    assert "voice" in create(owner(platform), 400, voice="alloy")["message"]


# --- names, PATCH -------------------------------------------------------------------------------

def test_a_name_is_unique_in_the_workspace_without_regard_to_case(platform):
    api = owner(platform)
    first = create(api, name="Impatient caller")
    data = create(api, 409, name=" IMPATIENT CALLER ")
    assert data["code"] == "conflict" and data["message"] == \
        f"A persona named 'Impatient caller' exists in this workspace already ({first['id']}); names are unique " \
        "without regard to case."
    other = create(api, name="Polite caller")
    assert patch(api, other["id"], 409, name="impatient Caller")["message"] == data["message"]
    # Its own name in another case is no conflict; a name freed is free again.
    assert patch(api, first["id"], name="IMPATIENT caller")["name"] == "IMPATIENT caller"
    api("DELETE", f"/personas/{first['id']}")
    assert create(api, name="Impatient caller")["name"] == "Impatient caller"
    # Another workspace's names are its own.
    assert create(owner(platform), name="Impatient caller")["name"] == "Impatient caller"


def test_twenty_creations_of_one_name_at_once_make_one_persona(platform):
    api = owner(platform)

    def post(index: int) -> int:
        return platform.client.post("/api/v2/personas", params={"workspaceId": api.actor.workspace_id},
                                    headers=api.actor.headers,
                                    json={"name": "Same" if index % 2 else "SAME", "goal": GOAL}).status_code

    statuses = run_threads(20, post)
    assert sorted(statuses) == [200] + [409] * 19, statuses
    assert api("GET", "/personas")["pagination"]["total"] == 1


def test_patch_changes_the_fields_given_and_leaves_the_others(platform):
    api = owner(platform)
    made = create(api, **FULL)
    for wire, value in [("name", "Renamed"), ("goal", "New goal."), ("traits", ["brief"]), ("language", "fr-CA"),
                        ("openingLine", "Bonjour."), ("facts", {"only": "this"}), ("constraints", ["never shouts"]),
                        ("endCondition", "Hangs up at once."), ("metadata", {"v": 2})]:
        before = api("GET", f"/personas/{made['id']}")["persona"]
        after = patch(api, made["id"], **{wire: value})
        assert after[wire] == value, wire
        assert {k: v for k, v in after.items() if k not in (wire, "updatedAt")} == \
            {k: v for k, v in before.items() if k not in (wire, "updatedAt")}, wire
    # A list or an object replaces the one it had, whole.
    assert patch(api, made["id"], facts={"other": "x"})["facts"] == {"other": "x"}


def test_null_clears_the_optional_fields_and_language_goes_back_to_en(platform):
    api = owner(platform)
    made = create(api, **FULL)
    cleared = patch(api, made["id"], traits=None, language=None, openingLine=None, facts=None, constraints=None,
                    endCondition=None, metadata=None)
    assert {k: cleared[k] for k in ("traits", "language", "openingLine", "facts", "constraints", "endCondition",
                                    "metadata")} == {"traits": [], "language": "en", "openingLine": None, "facts": {},
                                                     "constraints": [], "endCondition": None, "metadata": {}}
    assert (cleared["name"], cleared["goal"]) == (FULL["name"], FULL["goal"])
    # Blank clears the free texts too.
    again = patch(api, made["id"], openingLine="Hi.", endCondition="Bye.")
    assert (again["openingLine"], again["endCondition"]) == ("Hi.", "Bye.")
    assert patch(api, made["id"], openingLine="  ", endCondition="")["openingLine"] is None


def test_patch_needs_a_field_and_keeps_the_rules_of_a_new_persona(platform):
    api = owner(platform)
    made = create(api, name="Kept")
    assert "request body" in patch(api, made["id"], 400)["message"].lower()
    for body, field in [({"name": None}, "name"), ({"goal": None}, "goal"), ({"name": " "}, "name"),
                        ({"name": "N" * 101}, "name"), ({"goal": "G" * 2001}, "goal"),
                        ({"traits": ["a", "A"]}, "traits"), ({"language": "english"}, "language"),
                        ({"facts": {"": "v"}}, "facts"), ({"constraints": ["C" * 501]}, "constraints"),
                        ({"openingLine": "L" * 1001}, "openingLine"), ({"endCondition": "L" * 1001}, "endCondition"),
                        ({"metadata": {f"k{i}": i for i in range(51)}}, "metadata"), ({"id": made["id"]}, "id")]:
        assert field in patch(api, made["id"], 400, **body)["message"], body
    assert api("GET", f"/personas/{made['id']}")["persona"] == made


# --- the list -----------------------------------------------------------------------------------

def test_the_list_is_in_name_order_without_regard_to_case_and_paged(platform):
    api = owner(platform)
    names = ["bravo", "Alpha", "charlie", "Delta", "echo"]
    ids = {name: create(api, name=name)["id"] for name in names}

    def page(**params) -> tuple[list[str], dict]:
        result = api("GET", "/personas", **params)
        return [p["name"] for p in result["personas"]], result["pagination"]

    assert page() == (["Alpha", "bravo", "charlie", "Delta", "echo"], {"total": 5, "limit": 20, "offset": 0})
    assert page(limit=2) == (["Alpha", "bravo"], {"total": 5, "limit": 2, "offset": 0})
    assert page(limit=2, offset=4) == (["echo"], {"total": 5, "limit": 2, "offset": 4})
    assert page(limit=2, offset=5) == ([], {"total": 5, "limit": 2, "offset": 5})
    assert page(limit=100, offset=1)[0] == ["bravo", "charlie", "Delta", "echo"]
    assert page(limit=1)[0] == ["Alpha"]
    for params in ({"limit": 0}, {"limit": 101}, {"offset": -1}):
        api("GET", "/personas", 400, **params)
    assert len(ids) == 5


def test_q_searches_names_and_goals_without_regard_to_case(platform):
    api = owner(platform)
    booker = create(api, name="Table booker", goal="Book a TABLE for two.")["id"]
    mover = create(api, name="Mover", goal="Move the appointment to Tuesday.")["id"]
    odd = create(api, name="Odd_50%", goal="Asks about the 100% refund.")["id"]

    def found(q: str) -> list[str]:
        return [p["id"] for p in api("GET", "/personas", q=q)["personas"]]

    assert found("table") == [booker] and found("BOOKER") == [booker]
    assert found("tuesday") == [mover] and found("MOVE") == [mover]
    assert found("o") == [mover, odd, booker]
    assert found("%") == [odd] and found("_") == [odd] and found("nobody") == []
    assert api("GET", "/personas", q="t", limit=1)["pagination"] == {"total": 3, "limit": 1, "offset": 0}
    api("GET", "/personas", 400, q="")
    api("GET", "/personas", 400, q="x" * 101)
    assert found("x" * 100) == []


def test_another_workspaces_persona_is_not_found(platform):
    api, other = owner(platform), owner(platform)
    theirs = create(other, name="Theirs")["id"]
    api("GET", f"/personas/{theirs}", 404)
    patch(api, theirs, 404, name="Mine")
    api("DELETE", f"/personas/{theirs}", 404)
    assert api("GET", "/personas")["personas"] == [] and api("GET", "/personas", q="Theirs")["personas"] == []
    assert other("GET", f"/personas/{theirs}")["persona"]["name"] == "Theirs"


# --- the reads simulations use ------------------------------------------------------------------

class _Statements(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.name == "peewee"


def test_get_persona_and_personas_by_id_read_the_workspaces_own(platform):
    from models.kernel.errors import NotFound
    from models.personas import personas
    api, other = owner(platform), owner(platform)
    first = factories.persona(api.actor, "First", traits=["impatient"], facts={"account": "12345"},
                              opening_line="Hello.", end_condition="Hangs up.")
    second = factories.persona(api.actor, "Second")
    theirs = factories.persona(other.actor, "Theirs")
    missing = str(uuid.uuid4())
    logger = logging.getLogger("peewee")
    statements, level = _Statements(), logger.level
    with session():
        record = personas.get_persona(workspace_id=api.actor.workspace_id, persona_id=first)
        assert (record.id, record.workspace_id, record.name, record.goal, record.traits, record.language,
                record.opening_line, record.facts, record.constraints, record.end_condition, record.created_by,
                record.metadata) == (first, api.actor.workspace_id, "First", GOAL, ["impatient"],
                                     "en", "Hello.", {"account": "12345"}, [], "Hangs up.", api.actor.user_id, {})
        with pytest.raises(NotFound, match=f"No persona {theirs} in this workspace."):
            personas.get_persona(workspace_id=api.actor.workspace_id, persona_id=theirs)
        logger.addHandler(statements)
        logger.setLevel(logging.DEBUG)
        try:
            found = personas.personas_by_id(workspace_id=api.actor.workspace_id, ids=[second, first, second])
        finally:
            logger.removeHandler(statements)
            logger.setLevel(level)
        assert statements.count == 1
        assert list(found) == [second, first] and found[first] == record and found[second].name == "Second"
        for ids, named in [([first, theirs, missing], theirs), ([missing, first], missing), ([theirs], theirs)]:
            with pytest.raises(NotFound, match=f"^No persona {named} in this workspace.$"):
                personas.personas_by_id(workspace_id=api.actor.workspace_id, ids=ids)
        assert personas.personas_by_id(workspace_id=api.actor.workspace_id, ids=[]) == {}
