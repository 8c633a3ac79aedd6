"""The vocabulary over HTTP (custom abbreviations): terms created, read, listed in written order,
changed and deleted; the written form and spoken forms at their bounds and just past them; written
forms unique per workspace without regard to case (409 naming the holder, also for twenty creations
at once); at most 500 terms per workspace; another workspace's terms."""
from __future__ import annotations

from tests.support import factories
from tests.support.client import owner
from tests.support.threads import run_threads

FIELDS = {"id", "workspaceId", "written", "spoken", "createdBy", "createdAt", "updatedAt"}


def create(api, expect: int = 200, **body) -> dict:
    body.setdefault("written", "Acme Pay")
    result = api("POST", "/custom/abbreviations", expect, json=body)
    return result["abbreviation"] if expect == 200 else result


def patch(api, term_id: str, expect: int = 200, **body) -> dict:
    result = api("PATCH", f"/custom/abbreviations/{term_id}", expect, json=body)
    return result["abbreviation"] if expect == 200 else result


def test_a_term_is_created_read_listed_changed_and_deleted(platform):
    api = owner(platform)
    made = create(api, spoken=["acme pay", "Acme  PAY plus"])
    assert set(made) == FIELDS
    assert (made["written"], made["spoken"], made["createdBy"], made["workspaceId"]) == (
        "Acme Pay", ["acme pay", "acme pay plus"], api.actor.user_id, api.actor.workspace_id)
    assert api("GET", f"/custom/abbreviations/{made['id']}")["abbreviation"] == made
    assert api("GET", "/custom/abbreviations") == {"abbreviations": [made],
                                                   "pagination": {"total": 1, "limit": 20, "offset": 0}}
    changed = patch(api, made["id"], written="ACME Pay")
    assert (changed["written"], changed["spoken"]) == ("ACME Pay", ["acme pay", "acme pay plus"])
    assert patch(api, made["id"], spoken=["apay"])["spoken"] == ["apay"]
    assert api("DELETE", f"/custom/abbreviations/{made['id']}") == {"id": made["id"], "deleted": True}
    for method in ("GET", "DELETE"):
        assert api(method, f"/custom/abbreviations/{made['id']}", 404)["message"] == \
            f"No vocabulary term {made['id']} in this workspace."
    patch(api, made["id"], 404, written="X")


def test_without_spoken_forms_the_written_form_in_lower_case_is_one(platform):
    assert create(owner(platform), written=" SIP ")["spoken"] == ["sip"]


def test_the_list_is_in_written_order_without_regard_to_case_and_paged(platform):
    api = owner(platform)
    for written in ("delta", "Bravo", "alpha", "Charlie"):
        factories.term(api.actor, written)
    page = api("GET", "/custom/abbreviations", limit=2, offset=1)
    assert [t["written"] for t in page["abbreviations"]] == ["Bravo", "Charlie"]
    assert page["pagination"] == {"total": 4, "limit": 2, "offset": 1}


def test_the_written_form_is_1_to_100_characters_once_trimmed(platform):
    api = owner(platform)
    assert create(api, written="W" * 100)["written"] == "W" * 100
    assert create(api, 400, written="W" * 101)["code"] == "validation_failed"
    assert create(api, 400, written="   ")["message"] == "written must be 1 to 100 characters once trimmed; 0 given."


def test_spoken_forms_are_1_to_10_each_1_to_100_characters_kept_once(platform):
    api = owner(platform)
    assert len(create(api, written="a", spoken=[f"form {i}" for i in range(10)])["spoken"]) == 10
    assert create(api, 400, written="b", spoken=[f"form {i}" for i in range(11)])["code"] == "validation_failed"
    assert create(api, 400, written="c", spoken=[])["code"] == "validation_failed"
    assert create(api, written="d", spoken=["s" * 100])["spoken"] == ["s" * 100]
    assert create(api, 400, written="e", spoken=["s" * 101])["code"] == "validation_failed"
    # The same form again, without regard to case and spacing, is the one form.
    assert create(api, written="f", spoken=["Acme Pay", "acme  pay", "pay"])["spoken"] == ["acme pay", "pay"]
    assert create(api, 400, written="g", spoken=["--"])["message"] == \
        "spoken[0] must be 1 to 100 characters once trimmed, with a letter or digit."


def test_written_forms_are_unique_per_workspace_without_regard_to_case(platform):
    api = owner(platform)
    first = create(api, written="Acme Pay")
    assert create(api, 409, written=" ACME pay ")["message"] == (
        f"The term 'Acme Pay' ({first['id']}) has this written form already; written forms are unique per "
        "workspace without regard to case.")
    other = create(api, written="Acme Card")
    assert patch(api, other["id"], 409, written="acme PAY")["code"] == "conflict"
    assert patch(api, first["id"], written="ACME PAY")["written"] == "ACME PAY"
    assert create(owner(platform), written="Acme Pay")["written"] == "Acme Pay"


def test_twenty_creations_of_one_written_form_at_once_make_one_term(platform):
    api = owner(platform)

    def post(index: int) -> int:
        return platform.client.post("/api/v2/custom/abbreviations", params={"workspaceId": api.actor.workspace_id},
                                    headers=api.actor.headers,
                                    json={"written": "Same" if index % 2 else "SAME"}).status_code

    statuses = run_threads(20, post)
    assert sorted(statuses) == [200] + [409] * 19, statuses
    assert api("GET", "/custom/abbreviations")["pagination"]["total"] == 1


def test_a_workspace_holds_at_most_500_terms(platform):
    api = owner(platform)
    ids = [factories.term(api.actor) for _ in range(499)]
    create(api, written="The five hundredth")
    assert create(api, 409, written="One more")["message"] == \
        "A workspace's vocabulary holds at most 500 terms; delete one first."
    api("DELETE", f"/custom/abbreviations/{ids[0]}")
    assert create(api, written="One more")["written"] == "One more"


def test_another_workspaces_term_is_not_found(platform):
    api, other = owner(platform), owner(platform)
    theirs = factories.term(other.actor, "Theirs")
    assert api("GET", f"/custom/abbreviations/{theirs}", 404)["code"] == "not_found"
    patch(api, theirs, 404, written="Mine")
    api("DELETE", f"/custom/abbreviations/{theirs}", 404)
    assert api("GET", "/custom/abbreviations")["abbreviations"] == []
    assert other("GET", f"/custom/abbreviations/{theirs}")["abbreviation"]["written"] == "Theirs"
