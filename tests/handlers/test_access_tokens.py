"""A user's own access tokens: listed, minted (at most 90 days), revoked at once."""
from __future__ import annotations

from datetime import datetime, timedelta

API = "/api/v2"


def test_mint_list_and_revoke(platform):
    owner = platform.workspace()
    r = platform.client.post(API + "/access-tokens", headers=owner.headers, json={"name": "laptop", "expiresInDays": 90})
    assert r.status_code == 200, r.text
    minted = r.json()["data"]["result"]["accessToken"]
    created = datetime.fromisoformat(minted["createdAt"].rstrip("Z"))
    assert datetime.fromisoformat(minted["expiresAt"].rstrip("Z")) - created == timedelta(days=90)
    new = {"Authorization": f"Bearer {minted['token']}"}
    listed = platform.client.get(API + "/access-tokens", headers=new).json()["data"]["result"]
    assert listed["pagination"]["total"] == 2 and minted["token"] not in str(listed)
    assert [t["current"] for t in listed["accessTokens"]] == [True, False]
    for days in (0, 91):
        r = platform.client.post(API + "/access-tokens", headers=owner.headers, json={"expiresInDays": days})
        assert r.status_code == 400 and "expiresInDays" in r.json()["data"]["message"]
    r = platform.client.delete(f"{API}/access-tokens/{minted['id']}", headers=owner.headers)
    assert r.status_code == 200
    assert platform.client.get(API + "/access-tokens", headers=new).status_code == 401
    assert platform.client.delete(f"{API}/access-tokens/{minted['id']}", headers=owner.headers).status_code == 404


def test_a_user_revokes_only_their_own_tokens(platform):
    owner = platform.workspace()
    other = platform.workspace("other")
    theirs = platform.client.get(API + "/access-tokens", headers=other.headers).json()["data"]["result"]["accessTokens"][0]
    assert platform.client.delete(f"{API}/access-tokens/{theirs['id']}", headers=owner.headers).status_code == 404
    assert platform.client.get(API + "/access-tokens", headers=other.headers).status_code == 200
    # The token in use may revoke itself; the next request is refused.
    mine = platform.client.get(API + "/access-tokens", headers=owner.headers).json()["data"]["result"]["accessTokens"][0]
    assert platform.client.delete(f"{API}/access-tokens/{mine['id']}", headers=owner.headers).status_code == 200
    assert platform.client.get(API + "/access-tokens", headers=owner.headers).status_code == 401
