"""Invitations over HTTP: a one-time token, shown once, stored hashed, good for 7 days."""
from __future__ import annotations

import threading
from datetime import timedelta

API = "/api/v2"


def _invite(platform, actor, email="grace@example.com", role="member"):
    return platform.client.post(API + "/invitations", params={"workspaceId": actor.workspace_id}, headers=actor.headers,
                                json={"email": email, "role": role})


def _accept(platform, token, **body):
    return platform.client.post(API + "/invitations/accept", json={"token": token, **body})


def _set_expiry(invitation_id, when):
    from models.identity.tables import Invitation
    from models.kernel.db import session
    with session():
        Invitation.update(expires_at=when).where(Invitation.id == invitation_id).execute()


def test_accepting_creates_the_user_the_membership_and_a_token(platform):
    owner = platform.workspace()
    r = _invite(platform, owner, email="Grace@Example.COM")
    assert r.status_code == 200, r.text
    created = r.json()["data"]["result"]
    token, invitation = created["token"], created["invitation"]
    assert token.startswith("vai_") and invitation["status"] == "pending" and invitation["email"] == "grace@example.com"
    listed = platform.client.get(API + "/invitations", params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert token not in listed.text and listed.json()["data"]["result"]["invitations"][0]["id"] == invitation["id"]
    from models.identity.tables import Invitation
    from models.kernel.db import session
    with session():
        assert token not in str(list(Invitation.select().tuples()))  # stored hashed
    accepted = _accept(platform, token, displayName="Grace Hopper")
    assert accepted.status_code == 200, accepted.text
    result = accepted.json()["data"]["result"]
    assert result["workspaceId"] == owner.workspace_id and result["role"] == "member" and result["user"]["created"]
    headers = {"Authorization": f"Bearer {result['accessToken']['token']}"}
    r = platform.client.get(API + "/members", params={"workspaceId": owner.workspace_id}, headers=headers)
    assert r.status_code == 200 and any(m["email"] == "grace@example.com" and m["displayName"] == "Grace Hopper"
                                        for m in r.json()["data"]["result"]["members"])
    # Once only.
    again = _accept(platform, token)
    assert again.status_code == 410 and "accepted" in again.json()["data"]["message"]
    listed = platform.client.get(API + "/invitations", params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert listed.json()["data"]["result"]["invitations"][0]["status"] == "accepted"
    # The log names the acceptance by the new user and token, never the secret.
    logs = platform.client.get(API + "/workspace/logs", params={"workspaceId": owner.workspace_id,
                                                                "operationId": "acceptInvitation"}, headers=owner.headers)
    entry = logs.json()["data"]["result"]["logs"][0]
    assert entry["actor"] == {"userId": result["user"]["id"], "credentialId": result["accessToken"]["id"], "kind": "invitation"}
    assert entry["changes"]["token"] == "[redacted]" and token not in logs.text


def test_an_existing_user_joins_with_the_invited_role(platform):
    owner = platform.workspace()
    elsewhere = platform.workspace("elsewhere")
    token = _invite(platform, owner, email=elsewhere.email, role="viewer").json()["data"]["result"]["token"]
    result = _accept(platform, token).json()["data"]["result"]
    assert result["user"] == {"id": elsewhere.user_id, "email": elsewhere.email, "created": False}
    assert result["role"] == "viewer"
    r = _invite(platform, owner, email=elsewhere.email)
    assert r.status_code == 409 and "already a member" in r.json()["data"]["message"]


def test_revoked_expired_and_unknown_tokens_are_refused_saying_which(platform):
    from models.kernel.db import utcnow
    owner = platform.workspace()
    revoked = _invite(platform, owner, email="a@example.com").json()["data"]["result"]
    r = platform.client.delete(f"{API}/invitations/{revoked['invitation']['id']}", params={"workspaceId": owner.workspace_id},
                               headers=owner.headers)
    assert r.json()["data"]["result"]["invitation"]["status"] == "revoked"
    r = _accept(platform, revoked["token"])
    assert r.status_code == 410 and "revoked" in r.json()["data"]["message"]
    # At its expiry exactly, an invitation has expired; a moment before, it has not.
    later = _invite(platform, owner, email="b@example.com").json()["data"]["result"]
    _set_expiry(later["invitation"]["id"], utcnow() - timedelta(microseconds=1))
    r = _accept(platform, later["token"])
    assert r.status_code == 410 and "expired" in r.json()["data"]["message"]
    fresh = _invite(platform, owner, email="c@example.com").json()["data"]["result"]
    _set_expiry(fresh["invitation"]["id"], utcnow() + timedelta(seconds=30))
    assert _accept(platform, fresh["token"]).status_code == 200
    for token in ("vai_unknown", "vat_not-an-invitation"):
        r = _accept(platform, token)
        assert r.status_code == 400 and "token" in r.json()["data"]["message"]


def test_the_list_filters_by_status(platform):
    from models.kernel.db import utcnow
    owner = platform.workspace()
    made = {email: _invite(platform, owner, email=email).json()["data"]["result"]
            for email in ("p@example.com", "e@example.com", "r@example.com", "a@example.com")}
    _set_expiry(made["e@example.com"]["invitation"]["id"], utcnow() - timedelta(seconds=1))
    platform.client.delete(f"{API}/invitations/{made['r@example.com']['invitation']['id']}",
                           params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert _accept(platform, made["a@example.com"]["token"]).status_code == 200

    def listed(**params):
        r = platform.client.get(API + "/invitations", params={"workspaceId": owner.workspace_id, **params},
                                headers=owner.headers)
        assert r.status_code == 200, r.text
        result = r.json()["data"]["result"]
        return [i["email"] for i in result["invitations"]], result["pagination"]["total"]

    assert listed(status="pending") == (["p@example.com"], 1)
    assert listed(status="expired") == (["e@example.com"], 1)
    assert listed(status="revoked") == (["r@example.com"], 1)
    assert listed(status="accepted") == (["a@example.com"], 1)
    assert listed()[1] == 4
    r = platform.client.get(API + "/invitations", params={"workspaceId": owner.workspace_id, "status": "open"},
                            headers=owner.headers)
    assert r.status_code == 400 and "status" in r.json()["data"]["message"]


def test_an_invitation_expires_seven_days_after_it_is_made(platform):
    from datetime import datetime
    owner = platform.workspace()
    invitation = _invite(platform, owner).json()["data"]["result"]["invitation"]
    made = datetime.fromisoformat(invitation["createdAt"].rstrip("Z"))
    assert datetime.fromisoformat(invitation["expiresAt"].rstrip("Z")) - made == timedelta(days=7)


def test_resending_gives_a_new_token_and_stops_the_old(platform):
    owner = platform.workspace()
    first = _invite(platform, owner).json()["data"]["result"]
    r = platform.client.post(f"{API}/invitations/{first['invitation']['id']}/resend",
                             params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    second = r.json()["data"]["result"]["token"]
    assert second != first["token"]
    assert _accept(platform, first["token"]).status_code == 400
    assert _accept(platform, second).status_code == 200
    r = platform.client.post(f"{API}/invitations/{first['invitation']['id']}/resend",
                             params={"workspaceId": owner.workspace_id}, headers=owner.headers)
    assert r.status_code == 409 and "accepted" in r.json()["data"]["message"]
    r = platform.client.delete(f"{API}/invitations/{first['invitation']['id']}", params={"workspaceId": owner.workspace_id},
                               headers=owner.headers)
    assert r.status_code == 409


def test_invitation_rules(platform):
    owner = platform.workspace()
    admin = platform.member(owner, "admin")
    r = _invite(platform, admin, role="owner")
    assert r.status_code == 403 and "billing:manage" in r.json()["data"]["message"]
    viewer = platform.member(owner, "viewer")
    r = _invite(platform, viewer)
    assert r.status_code == 403 and "members:invite" in r.json()["data"]["message"]
    assert _invite(platform, owner, email="dup@example.com").status_code == 200
    r = _invite(platform, owner, email="DUP@example.com")
    assert r.status_code == 409 and "pending" in r.json()["data"]["message"]
    for email in ("not-an-email", "a@b", "a b@example.com"):
        assert _invite(platform, owner, email=email).status_code == 400, email


def test_two_acceptances_at_once_make_one_member(platform):
    owner = platform.workspace()
    token = _invite(platform, owner).json()["data"]["result"]["token"]
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(_accept(platform, token).status_code)) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(answers) == [200, 410, 410, 410]
