"""The phone book over HTTP: a name for a number, its bounds, the two unique rules (409 naming the
entry holding each), search by name or number prefix, another workspace's ids (404); and the
customer's phone book name on the calls list, a call and the export, shown only with calls:pii."""
from __future__ import annotations

import csv
import io

import orjson
import pytest

from tests.support import factories
from tests.support.client import Api, owner

NUMBER = "+14155550123"


def add(api: Api, name: str = "Jane Doe", number: str = NUMBER, expect: int = 200) -> dict:
    result = api("POST", "/phone-aliases", expect, json={"name": name, "number": number})
    return result["alias"] if expect == 200 else result


def test_an_entry_is_added_read_listed_renamed_and_deleted(platform):
    api = owner(platform)
    made = add(api, "  Jane Doe ", "+1 (415) 555-0123")
    assert made["name"] == "Jane Doe" and made["number"] == NUMBER and made["createdBy"] == api.actor.user_id
    assert api("GET", f"/phone-aliases/{made['id']}")["alias"] == made
    listed = api("GET", "/phone-aliases")
    assert listed == {"aliases": [made], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    renamed = api("PATCH", f"/phone-aliases/{made['id']}", json={"name": "Jane Doe (Acme)"})["alias"]
    assert renamed["name"] == "Jane Doe (Acme)" and renamed["number"] == NUMBER
    renumbered = api("PATCH", f"/phone-aliases/{made['id']}", json={"number": "+1 415 555 0124"})["alias"]
    assert renumbered["number"] == "+14155550124" and renumbered["name"] == "Jane Doe (Acme)"
    assert api("DELETE", f"/phone-aliases/{made['id']}") == {"id": made["id"], "deleted": True}
    api("GET", f"/phone-aliases/{made['id']}", 404)
    api("DELETE", f"/phone-aliases/{made['id']}", 404)


def test_the_name_is_1_to_100_characters_once_trimmed(platform):
    api = owner(platform)
    assert add(api, "N" * 100)["name"] == "N" * 100
    assert add(api, "N" * 101, "+14155550124", 400)["message"].startswith("Invalid value for name")
    assert add(api, "   ", "+14155550124", 400)["message"] == "name must be 1 to 100 characters once trimmed; 0 given."
    assert add(api, "", "+14155550124", 400)["message"].startswith("Invalid value for name")
    assert "name" in add(api, "a\tb", "+14155550124", 400)["message"]
    assert add(api, "J", "+14155550124")["name"] == "J"
    alias_id = add(api, "K", "+14155550125")["id"]
    api("PATCH", f"/phone-aliases/{alias_id}", 400, json={"name": " "})
    api("PATCH", f"/phone-aliases/{alias_id}", 400, json={"name": "N" * 101})
    api("PATCH", f"/phone-aliases/{alias_id}", 400, json={})


@pytest.mark.parametrize("number", ["(415) 555-0123", "+1415", "phone", ""])
def test_the_number_must_be_a_valid_international_one(platform, number):
    assert "number" in add(owner(platform), "Jane", number, 400)["message"]


def test_a_name_without_case_and_a_number_have_one_entry_each(platform):
    api = owner(platform)
    jane = add(api, "Jane Doe")
    data = add(api, "JANE DOE", "+14155550124", 409)
    assert data["code"] == "conflict" and f"named 'JANE DOE' already ({jane['id']})" in data["message"]
    data = add(api, "John", "+1 415 555 0123", 409)
    assert f"has a name in the phone book already: 'Jane Doe' ({jane['id']})" in data["message"]
    john = add(api, "John", "+14155550124")
    assert f"({jane['id']})" in api("PATCH", f"/phone-aliases/{john['id']}", 409, json={"name": "jane doe"})["message"]
    assert "'Jane Doe'" in api("PATCH", f"/phone-aliases/{john['id']}", 409, json={"number": NUMBER})["message"]
    # An entry's own name in another case, or its own number, is no conflict.
    assert api("PATCH", f"/phone-aliases/{jane['id']}", json={"name": "JANE DOE", "number": NUMBER})["alias"]["name"] \
        == "JANE DOE"
    # Another workspace's phone book is its own.
    assert add(owner(platform), "Jane Doe")["number"] == NUMBER


def test_another_workspaces_entry_is_not_found(platform):
    api, other = owner(platform), owner(platform)
    theirs = add(other)["id"]
    api("GET", f"/phone-aliases/{theirs}", 404)
    api("PATCH", f"/phone-aliases/{theirs}", 404, json={"name": "Mine"})
    api("DELETE", f"/phone-aliases/{theirs}", 404)
    assert api("GET", "/phone-aliases")["aliases"] == []
    assert other("GET", f"/phone-aliases/{theirs}")["alias"]["name"] == "Jane Doe"


def test_the_book_is_in_name_order_and_searched_by_name_or_number_prefix(platform):
    api = owner(platform)
    zoe = add(api, "zoe", "+14155550123")["id"]
    adam = add(api, "Adam Smith", "+12125550123")["id"]
    mary = add(api, "Mary_50%", "+442071838750")["id"]

    def ids(**params):
        return [a["id"] for a in api("GET", "/phone-aliases", **params)["aliases"]]

    assert ids() == [adam, mary, zoe]
    assert ids(q="SMITH") == [adam] and ids(q="o") == [zoe] and ids(q="a") == [adam, mary]
    assert ids(q="+1") == [adam, zoe] and ids(q="+1 (415)") == [zoe] and ids(q="+44") == [mary]
    assert ids(q="%") == [mary] and ids(q="_") == [mary] and ids(q="nobody") == [] and ids(q="-") == []
    page = api("GET", "/phone-aliases", limit=2, offset=1)
    assert [a["id"] for a in page["aliases"]] == [mary, zoe] and page["pagination"]["total"] == 3
    api("GET", "/phone-aliases", 400, q="x" * 101)
    api("GET", "/phone-aliases", 400, q="")


# --- the alias on calls ---------------------------------------------------------------------------

def _export(platform, actor, format: str) -> list[dict]:
    response = platform.client.get("/api/v2/call/export", headers=actor.headers,
                                   params={"workspaceId": actor.workspace_id, "format": format})
    assert response.status_code == 200, response.text
    if format == "ndjson":
        return [orjson.loads(line) for line in response.text.splitlines()]
    return list(csv.DictReader(io.StringIO(response.text)))


def test_calls_show_the_customers_phone_book_name_to_callers_holding_calls_pii(platform):
    api = owner(platform)
    known = factories.call(api.actor, customer=NUMBER)
    unknown = factories.call(api.actor, customer="+14155550199")
    as_reported = factories.call(api.actor, customer="+1 415 555 0123")  # matched as stored: no E.164, no name
    nobody = factories.call(api.actor, customer=None)
    factories.phone_alias(api.actor, "Jane Doe", NUMBER)
    factories.phone_alias(owner(platform).actor, "Someone else's name", "+14155550199")  # another workspace's
    expected = {known: "Jane Doe", unknown: None, as_reported: None, nobody: None}
    assert {c["id"]: c["customerAlias"] for c in api("GET", "/call")["calls"]} == expected
    assert api("GET", f"/call/{known}")["call"]["customerAlias"] == "Jane Doe"
    assert api("GET", f"/call/{unknown}")["call"]["customerAlias"] is None
    for format in ("csv", "ndjson"):
        rows = {row["id"]: row["customerAlias"] for row in _export(platform, api.actor, format)}
        assert rows == ({k: v or "" for k, v in expected.items()} if format == "csv" else expected), format
    # Without calls:pii the number is masked, and the name, which says as much, is not shown.
    reader = Api(platform, factories.api_key(api.actor, permissions=["calls:read", "calls:export"]))
    listed = {c["id"]: c for c in reader("GET", "/call")["calls"]}
    assert listed[known]["customer"] == "+*******0123" and listed[known]["customerAlias"] is None
    assert reader("GET", f"/call/{known}")["call"]["customerAlias"] is None
    for format in ("csv", "ndjson"):
        assert {row["customerAlias"] or None for row in _export(platform, reader.actor, format)} == {None}, format
    # Renamed or removed, the calls follow the phone book.
    alias_id = api("GET", "/phone-aliases")["aliases"][0]["id"]
    api("PATCH", f"/phone-aliases/{alias_id}", json={"name": "Jane Doe (Acme)"})
    assert api("GET", f"/call/{known}")["call"]["customerAlias"] == "Jane Doe (Acme)"
    api("DELETE", f"/phone-aliases/{alias_id}")
    assert api("GET", f"/call/{known}")["call"]["customerAlias"] is None
