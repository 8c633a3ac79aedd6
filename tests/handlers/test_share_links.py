"""Share links over HTTP: made for a call of the workspace, shown once and stored hashed; what the
link shows without a credential (the customer's number masked, always); the recording only when
the link includes it; revoked, expired, unknown and malformed links refused alike; deleted with
their call; another workspace's calls and links out of reach; limited per client address."""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest

from models.call_access import share_links
from models.call_access.tables import CallShareLink
from models.kernel.db import session, utcnow
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads
from tests.support.uploads import WAV, upload

LINK_FIELDS = {"id", "workspaceId", "callId", "includeRecording", "createdBy", "createdAt", "expiresAt", "revokedAt",
               "status"}
REFUSAL = {"message": "No shared call at this link: it is unknown, revoked or expired.", "code": "not_found",
           "result": None}


def share(api: Api, call_id: str, expect: int = 200, **body) -> dict:
    return api("POST", f"/call/{call_id}/share-links", expect, json=body)


def shared(client, token: str, suffix: str = "", **headers):
    return client.get(f"/api/v2/shared/calls/{token}{suffix}", headers=headers)


def refused(response) -> bool:
    return response.status_code == 404 and response.json()["data"] == REFUSAL


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.rstrip("Z"))


@pytest.fixture
def api(platform):
    return owner(platform)


def test_a_link_shows_the_call_with_the_number_masked_to_anyone_holding_it(api, platform):
    agent = factories.agent(api.actor, name="Front desk")
    call = factories.call(api.actor, agent_id=agent, customer="+14155550123", summary="Booked a cleaning.",
                          transcript="AI: Hello.\nUser: A cleaning, please.", duration_ms=200_000.0)
    made = share(api, call)
    token, link = made["token"], made["shareLink"]
    assert set(link) == LINK_FIELDS and token.startswith("vas_") and len(token) == 47
    assert made["path"] == f"/api/v2/shared/calls/{token}"
    assert {k: link[k] for k in ("workspaceId", "callId", "includeRecording", "createdBy", "revokedAt", "status")} == {
        "workspaceId": api.actor.workspace_id, "callId": call, "includeRecording": False,
        "createdBy": api.actor.user_id, "revokedAt": None, "status": "active"}
    with session():
        row = CallShareLink.get_by_id(link["id"])
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest() and token[4:] not in str(row.__data__)
    detail = api("GET", f"/call/{call}")
    response = shared(platform.client, token)  # no credential
    assert response.status_code == 200, response.text
    shown = response.json()["data"]["result"]["call"]
    assert shown == {"agentName": "Front desk", "customer": "+*******0123", "startedAt": shown["startedAt"],
                     "endedAt": shown["endedAt"], "durationMs": 200000, "status": "completed",
                     "summary": "Booked a cleaning.", "transcript": "AI: Hello.\nUser: A cleaning, please.",
                     "recording": False}
    assert _at(shown["endedAt"]) - _at(shown["startedAt"]) == timedelta(seconds=200)
    # Nothing else of the workspace: no id, no whole number, even to a caller who holds calls:pii.
    assert [s for s in (call, agent, api.actor.workspace_id, "4155550123") if s in response.text] == []
    assert shared(platform.client, token, **api.actor.headers).json()["data"]["result"]["call"]["customer"] \
        == "+*******0123"
    assert response.headers["cache-control"] == "no-store" and detail["call"]["id"] == call


def test_a_call_without_an_agent_or_number_shows_them_as_null(api, platform):
    call = factories.call(api.actor, agent_id=None, customer=None)
    shown = shared(platform.client, share(api, call)["token"]).json()["data"]["result"]["call"]
    assert shown["agentName"] is None and shown["customer"] is None


def test_expires_in_hours_is_1_to_720_and_72_by_default(api):
    call = factories.call(api.actor)
    for hours, expected in ((None, 72), (1, 1), (720, 720)):
        link = share(api, call, **({} if hours is None else {"expiresInHours": hours}))["shareLink"]
        assert _at(link["expiresAt"]) - _at(link["createdAt"]) == timedelta(hours=expected)
    for hours in (0, 721, -1):
        assert "expiresInHours" in share(api, call, 400, expiresInHours=hours)["message"]
    assert "includeRecording" in share(api, call, 400, includeRecording="yes")["message"]
    assert "token" in share(api, call, 400, token="mine")["message"]


def test_a_link_works_until_its_expiry_exactly(api, platform):
    call = factories.call(api.actor)
    made_at = datetime(2030, 1, 1, 12, 0, 0)
    _, token = factories.share_link(api.actor, call, expires_in_hours=1, now=made_at)
    with session():
        assert share_links.shared_call(token, now=made_at + timedelta(hours=1, microseconds=-1)).summary == "A call."
        with pytest.raises(share_links.LinkRefused):
            share_links.shared_call(token, now=made_at + timedelta(hours=1))
    _, expired = factories.share_link(api.actor, call, expires_in_hours=1,
                                      now=utcnow() - timedelta(hours=1, milliseconds=1))
    assert refused(shared(platform.client, expired))
    # Newest first: the one made in 2030, then the one made now.
    assert [link["status"] for link in api("GET", f"/call/{call}/share-links")["shareLinks"]] == ["active", "expired"]


def test_revoked_expired_unknown_and_malformed_links_are_refused_alike(api, platform):
    call = factories.call(api.actor)
    revoked, live = share(api, call), share(api, call)
    answer = api("DELETE", f"/call/{call}/share-links/{revoked['shareLink']['id']}")
    assert answer["id"] == revoked["shareLink"]["id"] and answer["deleted"] is True
    assert answer["shareLink"]["status"] == "revoked" and answer["shareLink"]["revokedAt"] is not None
    # Revoking again changes nothing.
    again = api("DELETE", f"/call/{call}/share-links/{revoked['shareLink']['id']}")
    assert again["shareLink"]["revokedAt"] == answer["shareLink"]["revokedAt"]
    _, expired = factories.share_link(api.actor, call, expires_in_hours=1, now=utcnow() - timedelta(hours=2))
    token = live["token"]
    for tried in (revoked["token"], expired, "vas_" + "A" * 43, token[:-1], token + "A", token.upper(), "vas_", "x",
                  token.replace("vas_", "vaw_"), api.actor.secret):
        assert refused(shared(platform.client, tried)), tried
        assert refused(shared(platform.client, tried, "/recording")), tried
    assert shared(platform.client, token).status_code == 200
    statuses = {link["id"]: link["status"] for link in api("GET", f"/call/{call}/share-links")["shareLinks"]}
    assert statuses[revoked["shareLink"]["id"]] == "revoked" and statuses[live["shareLink"]["id"]] == "active"


def test_the_recording_comes_through_the_link_only_when_it_includes_it(api, platform):
    call = factories.call(api.actor)
    without, with_recording = share(api, call)["token"], share(api, call, includeRecording=True)["token"]
    # Included, but nothing uploaded yet.
    assert shared(platform.client, with_recording).json()["data"]["result"]["call"]["recording"] is False
    assert refused(shared(platform.client, with_recording, "/recording"))
    upload(api, call, WAV)
    assert shared(platform.client, with_recording).json()["data"]["result"]["call"]["recording"] is True
    whole = shared(platform.client, with_recording, "/recording")
    assert whole.status_code == 200 and whole.content == WAV and whole.headers["content-type"] == "audio/wav"
    part = shared(platform.client, with_recording, "/recording", Range="bytes=0-99")
    assert part.status_code == 206 and part.content == WAV[:100]
    assert part.headers["content-range"] == f"bytes 0-99/{len(WAV)}"
    past = shared(platform.client, with_recording, "/recording", Range=f"bytes={len(WAV)}-")
    assert past.status_code == 416 and past.json()["data"]["code"] == "range_not_satisfiable"
    malformed = shared(platform.client, with_recording, "/recording", Range="pages=1-2")
    assert malformed.status_code == 400 and "Range" in malformed.json()["data"]["message"]
    # Not included: the same refusal as an unknown link, and the call says there is none to fetch.
    assert shared(platform.client, without).json()["data"]["result"]["call"]["recording"] is False
    assert refused(shared(platform.client, without, "/recording"))


def test_deleting_the_call_deletes_its_links(api, platform):
    call, other = factories.call(api.actor), factories.call(api.actor)
    token = share(api, call, includeRecording=True)["token"]
    kept = share(api, other)["token"]
    api("DELETE", f"/call/{call}")
    with session():
        assert CallShareLink.in_workspace(api.actor.workspace_id).where(CallShareLink.call == call).count() == 0
    assert refused(shared(platform.client, token)) and refused(shared(platform.client, token, "/recording"))
    assert shared(platform.client, kept).status_code == 200
    assert api("GET", f"/call/{call}/share-links", 404)["code"] == "not_found"


def test_another_workspaces_calls_and_links_are_out_of_reach(api, platform):
    call = factories.call(api.actor)
    link = share(api, call)
    stranger = Api(platform, platform.workspace("other"))
    own_call = factories.call(stranger.actor)
    assert share(stranger, call, 404)["message"] == f"No call {call} in this workspace."
    assert stranger("GET", f"/call/{call}/share-links", 404)["code"] == "not_found"
    stranger("DELETE", f"/call/{call}/share-links/{link['shareLink']['id']}", 404)
    stranger("DELETE", f"/call/{own_call}/share-links/{link['shareLink']['id']}", 404)
    # Nor through another call of the owner's workspace.
    api("DELETE", f"/call/{factories.call(api.actor)}/share-links/{link['shareLink']['id']}", 404)
    assert shared(platform.client, link["token"]).status_code == 200
    assert api("GET", f"/call/{call}/share-links")["shareLinks"][0]["status"] == "active"
    assert stranger("GET", f"/call/{own_call}/share-links")["shareLinks"] == []


def test_the_list_pages_newest_first_without_tokens(api):
    call = factories.call(api.actor)
    start = utcnow() - timedelta(seconds=10)
    made = [factories.share_link(api.actor, call, now=start + timedelta(seconds=i)) for i in range(3)]
    listed = api("GET", f"/call/{call}/share-links")
    assert [link["id"] for link in listed["shareLinks"]] == [link_id for link_id, _ in made[::-1]]
    assert not any(token in str(listed) or token[4:] in str(listed) for _, token in made)
    page = api("GET", f"/call/{call}/share-links", limit=1, offset=1)
    assert [link["id"] for link in page["shareLinks"]] == [made[1][0]]
    assert page["pagination"] == {"total": 3, "limit": 1, "offset": 1}
    assert api("GET", f"/call/{call}/share-links", offset=9)["pagination"]["total"] == 3
    assert api("GET", f"/call/{factories.call(api.actor)}/share-links")["shareLinks"] == []


def test_a_call_has_at_most_100_open_links(api):
    call = factories.call(api.actor)
    for _ in range(99):
        factories.share_link(api.actor, call)
    _, _ = factories.share_link(api.actor, call, expires_in_hours=1, now=utcnow() - timedelta(hours=2))  # expired
    last = share(api, call)["shareLink"]  # the 100th open one
    assert "at most 100" in share(api, call, 409)["message"]
    api("DELETE", f"/call/{call}/share-links/{last['id']}")
    assert share(api, call)["shareLink"]["status"] == "active"


def test_links_made_at_once_stop_at_the_bound(api, platform):
    call = factories.call(api.actor)
    for _ in range(95):
        factories.share_link(api.actor, call)

    def post(index: int) -> int:
        return platform.client.post(f"/api/v2/call/{call}/share-links", params={"workspaceId": api.actor.workspace_id},
                                    headers=api.actor.headers, json={}).status_code

    statuses = run_threads(10, post)
    assert sorted(statuses) == [200] * 5 + [409] * 5, statuses
    assert api("GET", f"/call/{call}/share-links")["pagination"]["total"] == 100


def test_sharing_needs_calls_share(api, platform):
    call = factories.call(api.actor)
    link = share(api, call)["shareLink"]
    viewer = Api(platform, platform.member(api.actor, "viewer"))
    assert "calls:share" in share(viewer, call, 403)["message"]
    assert "calls:share" in viewer("GET", f"/call/{call}/share-links", 403)["message"]
    assert "calls:share" in viewer("DELETE", f"/call/{call}/share-links/{link['id']}", 403)["message"]
    member = Api(platform, platform.member(api.actor, "member"))
    assert share(member, call)["shareLink"]["createdBy"] == member.actor.user_id


@pytest.mark.parametrize("settings_overrides", [{"anonymous_requests_per_minute": 3}])
def test_shared_calls_are_limited_per_client_address_refused_ones_included(api, platform):
    token = share(api, factories.call(api.actor), includeRecording=True)["token"]
    guesser, other = platform.client_at("198.51.100.7"), platform.client_at("198.51.100.8")
    assert [shared(guesser, f"vas_{i:043d}").status_code for i in range(2)] == [404, 404]
    assert shared(guesser, f"vas_{2:043d}", "/recording").status_code == 404
    limited = shared(guesser, token)
    assert limited.status_code == 429 and limited.json()["data"]["code"] == "rate_limited"
    assert shared(guesser, token, "/recording").status_code == 429
    assert shared(other, token).status_code == 200
