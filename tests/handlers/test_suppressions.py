"""The do-not-call list over HTTP: adding one or many (each item checked on its own, the same list
twice harmless, concurrent adds of the same numbers leaving one row each), listing and searching,
expiry, the check (routed as itself, not as an id) and removal; and the condition campaigns put in
their own claim statement."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from peewee import SQL

from models.kernel.db import database, is_postgres, session, utcnow
from models.telephony import do_not_call
from models.telephony.tables import SuppressedNumber
from tests.support import factories
from tests.support.client import Api, api
from tests.support.threads import run_threads

NUMBER = "+14155550123"


def add(api: Api, *items, expect: int = 200, **body) -> dict:
    numbers = [{"number": item} if isinstance(item, str) else item for item in items]
    return api("POST", "/suppressions", expect, json={"numbers": numbers, **body})


def later(**delta) -> str:
    return (datetime.now(timezone.utc) + timedelta(**delta)).isoformat()


def expire(suppression_id: str) -> None:
    with session():
        SuppressedNumber.update(expires_at=utcnow() - timedelta(seconds=1)).where(
            SuppressedNumber.id == suppression_id).execute()


def test_a_number_is_added_read_checked_listed_and_removed(platform):
    owner = api(platform)
    made = add(owner, {"number": "+1 (415) 555-0123", "reason": "Asked not to be called"}, source="opt-out")
    assert (made["added"], made["alreadyListed"], made["failed"]) == (1, 0, [])
    listing = made["suppressions"][0]
    assert listing["number"] == NUMBER and listing["reason"] == "Asked not to be called"
    assert listing["source"] == "opt-out" and listing["addedBy"] == owner.actor.user_id
    assert listing["expiresAt"] is None and listing["expired"] is False
    assert owner("GET", f"/suppressions/{listing['id']}")["suppression"] == listing
    checked = owner("GET", "/suppressions/check", number="+1 415 555 0123")
    assert checked == {"number": NUMBER, "suppressed": True, "suppression": listing}
    assert owner("GET", "/suppressions")["suppressions"] == [listing]
    assert owner("DELETE", f"/suppressions/{listing['id']}") == {"id": listing["id"], "deleted": True}
    assert owner("GET", "/suppressions/check", number=NUMBER) == {"number": NUMBER, "suppressed": False,
                                                                  "suppression": None}
    owner("GET", f"/suppressions/{listing['id']}", 404)
    owner("DELETE", f"/suppressions/{listing['id']}", 404)


def test_the_check_path_is_not_read_as_an_id(platform):
    owner = api(platform)
    # Routed as an id, "check" would fail the id's format (400) or find nothing (404).
    assert owner("GET", "/suppressions/check", number=NUMBER)["suppressed"] is False
    assert "number" in owner("GET", "/suppressions/check", 400)["message"]
    assert "number" in owner("GET", "/suppressions/check", 400, number="12")["message"]


def test_one_to_a_thousand_numbers_at_once(platform):
    owner = api(platform)
    add(owner, expect=400)
    thousand = [f"+1415555{i:04d}" for i in range(1000)]
    made = add(owner, *thousand)
    assert made["added"] == 1000 and [s["number"] for s in made["suppressions"]] == thousand
    too_many = add(owner, *thousand, "+14155551000", expect=400)
    assert "numbers" in too_many["message"]
    assert owner("GET", "/suppressions", limit=1)["pagination"]["total"] == 1000


def test_each_item_is_checked_on_its_own(platform):
    owner = api(platform)
    made = add(owner, NUMBER, "12", {"number": "+14155550124", "expiresAt": later(seconds=-1)},
               {"number": "+14155550125", "expiresAt": later(minutes=1)}, "+1 415 555 0123", "not a number")
    assert made["added"] == 2 and made["alreadyListed"] == 0
    assert [(f["index"], f["number"]) for f in made["failed"]] == [(1, "12"), (2, "+14155550124"),
                                                                  (4, "+1 415 555 0123"), (5, "not a number")]
    reasons = [f["reason"] for f in made["failed"]]
    assert "numbers[1].number" in reasons[0] and "numbers[2].expiresAt must be in the future" in reasons[1]
    assert "numbers[0]" in reasons[2] and "numbers[5].number" in reasons[3]
    assert [s["number"] for s in made["suppressions"]] == [NUMBER, "+14155550125"]
    assert made["suppressions"][1]["expiresAt"] is not None
    nothing = add(owner, "12")
    assert (nothing["added"], nothing["alreadyListed"], len(nothing["failed"]), nothing["suppressions"]) == (0, 0, 1, [])


def test_bounds_of_the_body(platform):
    owner = api(platform)
    assert "reason" in add(owner, {"number": NUMBER, "reason": "x" * 501}, expect=400)["message"]
    assert add(owner, {"number": NUMBER, "reason": "x" * 500})["added"] == 1
    add(owner, {"number": NUMBER, "expiresAt": "2030-01-01T00:00:00"}, expect=400)  # no offset
    add(owner, {"number": NUMBER, "expiresAt": "9999-12-31T23:59:59-01:00"}, expect=400)  # past year 9999 in UTC
    add(owner, NUMBER, source="robot", expect=400)
    add(owner, {"number": NUMBER, "label": "x"}, expect=400)


def test_adding_the_same_numbers_again_is_harmless_and_takes_the_new_terms(platform):
    owner = api(platform)
    first = add(owner, {"number": NUMBER, "reason": "complained", "expiresAt": later(days=30)}, source="complaint")
    again = add(owner, NUMBER)
    assert (again["added"], again["alreadyListed"]) == (0, 1)
    listing = again["suppressions"][0]
    # The same listing, its reason kept when none is given, listed for good now.
    assert listing["id"] == first["suppressions"][0]["id"] and listing["source"] == "complaint"
    assert listing["reason"] == "complained" and listing["expiresAt"] is None
    renewed = add(owner, {"number": NUMBER, "reason": "asked again", "expiresAt": later(days=1)})
    assert renewed["suppressions"][0]["reason"] == "asked again" and renewed["suppressions"][0]["expiresAt"]
    assert owner("GET", "/suppressions")["pagination"]["total"] == 1


def test_an_expired_listing_no_longer_suppresses_and_is_listed_on_request(platform):
    owner = api(platform)
    suppression_id = add(owner, {"number": NUMBER, "expiresAt": later(days=1)}, "+14155550199")["suppressions"][0]["id"]
    expire(suppression_id)
    assert owner("GET", "/suppressions/check", number=NUMBER)["suppressed"] is False
    assert [s["number"] for s in owner("GET", "/suppressions")["suppressions"]] == ["+14155550199"]
    everything = owner("GET", "/suppressions", includeExpired="true")["suppressions"]
    assert {s["number"]: s["expired"] for s in everything} == {NUMBER: True, "+14155550199": False}
    assert owner("GET", f"/suppressions/{suppression_id}")["suppression"]["expired"] is True
    # Listed again: in force again, the same listing.
    again = add(owner, NUMBER)
    assert again["alreadyListed"] == 1 and again["suppressions"][0]["expired"] is False
    assert owner("GET", "/suppressions/check", number=NUMBER)["suppressed"] is True


def test_search_by_number_digits_or_reason_and_filter_by_source(platform):
    owner = api(platform)
    add(owner, {"number": NUMBER, "reason": "Rude caller"}, {"number": "+442079460958", "reason": "100% opted out"},
        source="complaint")
    add(owner, {"number": "+14155550199", "reason": "moved_away"}, source="import")

    def found(**query) -> list[str]:
        return sorted(s["number"] for s in owner("GET", "/suppressions", **query)["suppressions"])

    assert found(q="(415) 555-0123") == []  # a national number without its country code is digits only
    assert found(q="+1 (415) 555-0123") == [NUMBER]
    assert found(q="1415") == [NUMBER, "+14155550199"]
    assert found(q="+44 20") == ["+442079460958"]
    assert found(q="4420") == ["+442079460958"]
    assert found(q="rude") == [NUMBER]
    assert found(q="100%") == ["+442079460958"] and found(q="%") == ["+442079460958"]
    assert found(q="_") == ["+14155550199"]
    assert found(source="import") == ["+14155550199"]
    assert found(source="complaint", q="1415") == [NUMBER]
    owner("GET", "/suppressions", 400, source="robot")
    owner("GET", "/suppressions", 400, q="x" * 101)


def test_another_workspaces_listing_is_not_found(platform):
    mine, theirs = api(platform), api(platform)
    suppression_id = add(theirs, NUMBER)["suppressions"][0]["id"]
    mine("GET", f"/suppressions/{suppression_id}", 404)
    mine("DELETE", f"/suppressions/{suppression_id}", 404)
    assert mine("GET", "/suppressions/check", number=NUMBER)["suppressed"] is False
    assert mine("GET", "/suppressions")["suppressions"] == []
    # The same number is listed in each workspace on its own.
    assert add(mine, NUMBER)["added"] == 1
    assert theirs("GET", f"/suppressions/{suppression_id}")["suppression"]["number"] == NUMBER


def test_concurrent_adds_of_the_same_numbers_leave_one_listing_each(platform):
    owner = platform.workspace()
    numbers = [f"+1415555{i:04d}" for i in range(200)]

    def add_all(index: int) -> int:
        # Each thread in an order of its own: the statement sorts them, so no deadlock.
        mine = numbers[index:] + numbers[:index]
        with session():
            result = do_not_call.add(factories.principal(owner), workspace_id=owner.workspace_id,
                                     numbers=[{"number": n} for n in mine])
        if not is_postgres():
            database.close()
        return result.added

    added = run_threads(4, add_all)
    assert sum(added) == len(numbers)
    with session():
        rows = list(SuppressedNumber.in_workspace(owner.workspace_id, SuppressedNumber.number).tuples())
    assert sorted(n for (n,) in rows) == numbers


def test_the_claim_condition_and_the_checks_follow_the_expiry(platform):
    owner = platform.workspace()
    now = utcnow()
    factories.suppressed(owner, NUMBER, expires_at=now + timedelta(hours=1))
    factories.suppressed(owner, "+14155550199")
    other = platform.workspace()
    with session():
        assert do_not_call.is_suppressed(owner.workspace_id, NUMBER, now)
        assert do_not_call.is_suppressed(owner.workspace_id, NUMBER, now + timedelta(minutes=59, seconds=59))
        assert not do_not_call.is_suppressed(owner.workspace_id, NUMBER, now + timedelta(hours=1))
        assert not do_not_call.is_suppressed(other.workspace_id, NUMBER, now)
        aware = datetime.now(timezone(timedelta(hours=-5)))
        assert do_not_call.is_suppressed(owner.workspace_id, "+14155550199", aware)
        assert do_not_call.suppressed_among(owner.workspace_id, [NUMBER, "+14155550199", "+14155550100"],
                                            now + timedelta(hours=2)) == {"+14155550199"}
        # As a claim puts it: a condition on another table's columns.
        for at, expected in ((now, [NUMBER, "+14155550199"]), (now + timedelta(hours=1), ["+14155550199"])):
            candidates = SQL("(SELECT %s AS ws, %s AS number UNION ALL SELECT %s, %s UNION ALL SELECT %s, %s) AS c"
                             .replace("%s", database.param),
                             [owner.workspace_id, NUMBER, owner.workspace_id, "+14155550199",
                              other.workspace_id, NUMBER])
            cursor = database.execute(SuppressedNumber.select(SQL("c.number")).from_(candidates).where(
                do_not_call.listed(SQL("c.ws"), SQL("c.number"), at)).order_by(SQL("c.number")))
            assert sorted(row[0] for row in cursor.fetchall()) == sorted(expected)
