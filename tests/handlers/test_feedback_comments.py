"""Comments on a feedback over HTTP: oldest first, paged; the body's bounds; edited by their author
alone, deleted by their author or a holder of feedbacks:delete; commentsCount exact, also under 20
adds and deletes at once."""
from __future__ import annotations

from models.feedback import comments
from models.feedback.tables import Feedback, FeedbackComment
from models.kernel.db import database, is_postgres, session, unit_of_work
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads

UNKNOWN = "0f0e0d0c-0b0a-4908-8706-050403020100"


def _feedback(api: Api) -> str:
    return factories.feedback(api.actor, agent_id=factories.agent(api.actor))


def count_of(api: Api, feedback_id: str) -> int:
    return api("GET", f"/feedbacks/{feedback_id}")["feedback"]["commentsCount"]


def test_comments_are_added_listed_oldest_first_edited_and_deleted(platform):
    api = owner(platform)
    feedback_id = _feedback(api)
    first = api("POST", f"/feedbacks/{feedback_id}/comments", json={"body": " Reproduced.\nTwice. "})["comment"]
    assert first["body"] == "Reproduced.\nTwice." and first["authorId"] == api.actor.user_id
    assert first["feedbackId"] == feedback_id and first["authorName"] == "Owner"  # the display name
    second = api("POST", f"/feedbacks/{feedback_id}/comments", json={"body": "Fixed on staging."})["comment"]
    assert count_of(api, feedback_id) == 2
    page = api("GET", f"/feedbacks/{feedback_id}/comments")
    assert page == {"comments": [first, second], "pagination": {"total": 2, "limit": 20, "offset": 0}}
    assert api("GET", f"/feedbacks/{feedback_id}/comments", limit=1, offset=1)["comments"] == [second]
    edited = api("PATCH", f"/feedbacks/{feedback_id}/comments/{first['id']}", json={"body": "Reproduced once."})
    assert edited["comment"]["body"] == "Reproduced once." and edited["comment"]["createdAt"] == first["createdAt"]
    assert api("DELETE", f"/feedbacks/{feedback_id}/comments/{first['id']}") == {"id": first["id"], "deleted": True}
    assert count_of(api, feedback_id) == 1
    api("DELETE", f"/feedbacks/{feedback_id}/comments/{first['id']}", 404)
    api("PATCH", f"/feedbacks/{feedback_id}/comments/{first['id']}", 404, json={"body": "x"})
    assert count_of(api, feedback_id) == 1
    assert api("GET", f"/feedbacks/{feedback_id}/comments")["comments"] == [second]


def test_the_body_is_1_to_10000_characters(platform):
    api = owner(platform)
    feedback_id = _feedback(api)
    assert api("POST", f"/feedbacks/{feedback_id}/comments", json={"body": "b" * 10_000})["comment"]["body"] == \
        "b" * 10_000
    assert "body" in api("POST", f"/feedbacks/{feedback_id}/comments", 400, json={"body": "b" * 10_001})["message"]
    assert "body" in api("POST", f"/feedbacks/{feedback_id}/comments", 400, json={"body": "a\x00b"})["message"]
    assert api("POST", f"/feedbacks/{feedback_id}/comments", 400, json={"body": "  "})["message"] == \
        "body must be 1 to 10000 characters once trimmed; 0 given."
    api("POST", f"/feedbacks/{feedback_id}/comments", 400, json={})
    assert count_of(api, feedback_id) == 1


def test_only_the_author_edits_and_the_author_or_a_holder_of_feedbacks_delete_deletes(platform):
    api = owner(platform)
    feedback_id = _feedback(api)
    colleague = Api(platform, platform.member(api.actor, "member"))
    commenter_key = factories.api_key(colleague.actor, permissions=["feedbacks:read", "feedbacks:comment"])
    commenter = Api(platform, commenter_key)
    mine = factories.comment(api.actor, feedback_id, "the owner's")
    theirs = commenter("POST", f"/feedbacks/{feedback_id}/comments", json={"body": "the colleague's"})["comment"]["id"]
    assert commenter("PATCH", f"/feedbacks/{feedback_id}/comments/{mine}", 403, json={"body": "x"})["message"] == \
        "Only a comment's author may edit it."
    assert commenter("DELETE", f"/feedbacks/{feedback_id}/comments/{mine}", 403)["message"] == \
        "Only a comment's author, or a holder of feedbacks:delete, may delete it."
    api("PATCH", f"/feedbacks/{feedback_id}/comments/{theirs}", 403, json={"body": "x"})
    edited = commenter("PATCH", f"/feedbacks/{feedback_id}/comments/{theirs}", json={"body": "y"})
    assert edited["comment"]["body"] == "y"
    # The owner holds feedbacks:delete: it may delete the colleague's comment.
    api("DELETE", f"/feedbacks/{feedback_id}/comments/{theirs}")
    assert count_of(api, feedback_id) == 1
    viewer = Api(platform, platform.member(api.actor, "viewer"))
    refused = viewer("POST", f"/feedbacks/{feedback_id}/comments", 403, json={"body": "x"})
    assert "feedbacks:comment" in refused["message"]


def test_another_workspace_s_feedback_and_comments_are_unknown(platform):
    api, other = owner(platform), owner(platform)
    mine, theirs = _feedback(api), _feedback(other)
    their_comment = factories.comment(other.actor, theirs)
    my_comment = factories.comment(api.actor, mine)
    api("GET", f"/feedbacks/{theirs}/comments", 404)
    api("POST", f"/feedbacks/{theirs}/comments", 404, json={"body": "x"})
    api("PATCH", f"/feedbacks/{theirs}/comments/{their_comment}", 404, json={"body": "x"})
    api("DELETE", f"/feedbacks/{theirs}/comments/{their_comment}", 404)
    # Their comment named under my feedback, and my comment under an unknown feedback.
    api("PATCH", f"/feedbacks/{mine}/comments/{their_comment}", 404, json={"body": "x"})
    api("DELETE", f"/feedbacks/{mine}/comments/{their_comment}", 404)
    api("DELETE", f"/feedbacks/{UNKNOWN}/comments/{my_comment}", 404)
    assert count_of(other, theirs) == 1 and count_of(api, mine) == 1


def test_comments_count_stays_exact_under_twenty_concurrent_adds_and_deletes(platform):
    actor = platform.workspace()
    feedback_id = factories.feedback(actor, agent_id=factories.agent(actor))
    doomed = [factories.comment(actor, feedback_id, f"old {i}") for i in range(10)]

    def work(index: int) -> None:
        with session(), unit_of_work():
            if index % 2:
                comments.add(factories.principal(actor), workspace_id=actor.workspace_id, feedback_id=feedback_id,
                             body=f"new {index}")
            else:
                comments.delete(factories.principal(actor), workspace_id=actor.workspace_id,
                                feedback_id=feedback_id, comment_id=doomed[index // 2])
        if not is_postgres():
            database.close()

    run_threads(20, work)
    with session():
        counted = Feedback.in_workspace(actor.workspace_id, Feedback.comments_count).where(
            Feedback.id == feedback_id).scalar()
        rows = FeedbackComment.in_workspace(actor.workspace_id, FeedbackComment.id).where(
            FeedbackComment.feedback == feedback_id).count()
    assert counted == rows == 10


def test_twenty_concurrent_deletes_of_one_comment_count_it_once(platform):
    actor = platform.workspace()
    feedback_id = factories.feedback(actor, agent_id=factories.agent(actor))
    kept = factories.comment(actor, feedback_id, "kept")
    doomed = factories.comment(actor, feedback_id, "doomed")

    def delete(_index: int) -> bool:
        try:
            with session(), unit_of_work():
                comments.delete(factories.principal(actor), workspace_id=actor.workspace_id,
                                feedback_id=feedback_id, comment_id=doomed)
            return True
        except comments.NotFound:
            return False
        finally:
            if not is_postgres():
                database.close()

    assert sum(run_threads(20, delete)) == 1
    with session():
        assert Feedback.in_workspace(actor.workspace_id, Feedback.comments_count).where(
            Feedback.id == feedback_id).scalar() == 1
    assert kept
