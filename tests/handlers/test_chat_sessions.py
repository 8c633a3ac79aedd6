"""Chat sessions over HTTP against a local chat-completions server: a session pinned to a version,
opened by the agent's first message; what the endpoint is sent for each reply (the version's prompt,
the whole conversation in order, its model settings); workflow sessions; the end-call phrase; the
bounds of a message and of a session, at the boundary and past it; no endpoint (503), a failing or
slow one (502, nothing written); two messages at once; pages; other workspaces' and other
entities' ids; who may start, send and read."""
from __future__ import annotations

import threading

import pytest

from models.chat.sessions import MAX_MESSAGES
from models.kernel.chat_completions import NOT_CONFIGURED
from tests.support import factories
from tests.support.chat_completions_server import words
from tests.support.client import Api
from tests.support.threads import run_threads
from tests.support.times import recent

KEY = "sk-test-chat-key"
PROMPT = "You book tables at Chez Test."
FIRST = "Chez Test, good evening! How can I help?"
MODEL = {"provider": "openai", "name": "gpt-4o-mini", "temperature": 0.2, "maxTokens": 150}
CONFIG = {"prompt": PROMPT, "firstMessage": FIRST, "endCallPhrases": ["Have a good  EVENING"], "model": MODEL}
UNKNOWN = "0f0e0d0c-0b0a-4908-8706-050403020100"


@pytest.fixture
def llm_timeout_s():
    return 10.0


@pytest.fixture
def settings_overrides(llm, llm_timeout_s):
    # Two handler threads, so that two messages sent at once wait on the endpoint together.
    return {"llm_base_url": llm.base_url, "llm_api_key": KEY, "llm_model": "chat-model",
            "llm_timeout_s": llm_timeout_s, "api_threads": 2}


@pytest.fixture
def world(platform):
    owner = platform.workspace()
    return Api(platform, owner), owner, factories.agent(owner, "Booker", config=CONFIG)


def sessions_path(agent: str, entity_type: str = "agent") -> str:
    return f"/chat/{entity_type}/{agent}/sessions"


def start(api: Api, agent: str, expect: int = 200, entity_type: str = "agent", **body):
    return api("POST", sessions_path(agent, entity_type), expect, json=body)


def send(api: Api, agent: str, session_id: str, text: str, expect: int = 200, entity_type: str = "agent"):
    return api("POST", f"{sessions_path(agent, entity_type)}/{session_id}/messages", expect, json={"text": text})


def messages(api: Api, agent: str, session_id: str, entity_type: str = "agent", **params) -> list[dict]:
    return api("GET", f"{sessions_path(agent, entity_type)}/{session_id}/messages", **params)["messages"]


def get(api: Api, agent: str, session_id: str, entity_type: str = "agent") -> dict:
    return api("GET", f"{sessions_path(agent, entity_type)}/{session_id}")["session"]


def head_of(api: Api, entity_id: str, entity_type: str = "agent") -> dict:
    return api("GET", f"/versions/{entity_type}/{entity_id}")["versions"][0]


def sent(request: dict) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request["body"]["messages"]]


# --- a conversation ------------------------------------------------------------------------------

def test_a_session_opens_with_the_first_message_and_each_reply_is_asked_with_the_whole_conversation(world, llm):
    api, owner, agent = world
    version = head_of(api, agent)
    started = start(api, agent)
    session = started["session"]
    assert {k: session[k] for k in ("entityType", "entityId", "versionId", "versionNumber", "agentId", "createdBy",
                                    "messageCount", "usage", "ended", "endedAt", "workspaceId")} == {
        "entityType": "agent", "entityId": agent, "versionId": version["id"], "versionNumber": 1, "agentId": agent,
        "createdBy": owner.user_id, "messageCount": 1, "usage": {"promptTokens": 0, "completionTokens": 0},
        "ended": False, "endedAt": None, "workspaceId": owner.workspace_id}
    assert recent(session["createdAt"]) and session["lastMessageAt"] == session["createdAt"]
    opening = started["messages"]
    assert [(m["role"], m["text"], m["usage"]) for m in opening] == [
        ("agent", FIRST, {"promptTokens": 0, "completionTokens": 0})]
    assert llm.requests == []  # the first message is said as configured

    llm.answer("For how many people?")
    first = send(api, agent, session["id"], "  A table for Friday, please.\n")
    user, reply = first["messages"]
    assert (user["role"], user["text"], user["usage"]) == ("user", "A table for Friday, please.", None)
    assert (reply["role"], reply["text"], first["endsCall"]) == ("agent", "For how many people?", False)
    # The local server counts words: the prompt's (every message sent) and the reply's.
    asked = words(PROMPT) + words(FIRST) + words("A table for Friday, please.")
    assert reply["usage"] == {"promptTokens": asked, "completionTokens": 4}
    assert user["createdAt"] <= reply["createdAt"] == first["session"]["lastMessageAt"]
    assert first["session"]["messageCount"] == 3 and first["session"]["usage"] == reply["usage"]

    llm.answer("Friday for two, at what time?")
    second = send(api, agent, session["id"], "Two people.")
    request = llm.requests[-1]
    assert sent(request) == [("system", PROMPT), ("assistant", FIRST), ("user", "A table for Friday, please."),
                             ("assistant", "For how many people?"), ("user", "Two people.")]
    body = request["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("chat-model", 0.2, 150)
    assert request["authorization"] == f"Bearer {KEY}"

    read = get(api, agent, session["id"])
    assert read == second["session"] and read["messageCount"] == 5
    replies = (reply, second["messages"][1])
    assert read["usage"]["promptTokens"] == sum(r["usage"]["promptTokens"] for r in replies)
    listed = messages(api, agent, session["id"])
    assert listed == [*opening, *first["messages"], *second["messages"]]
    assert [m["role"] for m in listed] == ["agent", "user", "agent", "user", "agent"]


def test_an_agent_without_a_first_message_waits_for_the_user(world, llm):
    api, owner, _ = world
    agent = factories.agent(owner, "Quiet", config={**CONFIG, "firstMessage": ""})
    started = start(api, agent)
    assert started["messages"] == [] and started["session"]["messageCount"] == 0
    assert started["session"]["lastMessageAt"] is None
    llm.answer("Chez Test, how can I help?")
    send(api, agent, started["session"]["id"], "Hello?")
    assert sent(llm.requests[-1]) == [("system", PROMPT), ("user", "Hello?")]


def test_a_session_keeps_the_version_it_started_with(world, llm):
    api, owner, agent = world
    v1 = head_of(api, agent)
    old = start(api, agent)["session"]
    v2 = api.save(agent, **{**CONFIG, "prompt": "You are the new booker."})
    # The live version is still version 1: a session starts there by default, or where it is pinned.
    assert start(api, agent)["session"]["versionId"] == v1["id"]
    pinned = start(api, agent, versionId=v2["id"])["session"]
    assert (pinned["versionId"], pinned["versionNumber"]) == (v2["id"], 2)
    llm.answer("Hello.")
    send(api, agent, pinned["id"], "Hi.")
    assert sent(llm.requests[-1])[0] == ("system", "You are the new booker.")
    # Published later: the new sessions take it, the old one does not.
    api("POST", f"/versions/agent/{agent}/{v2['id']}/publish")
    assert start(api, agent)["session"]["versionId"] == v2["id"]
    send(api, agent, old["id"], "Hi.")
    assert sent(llm.requests[-1])[0] == ("system", PROMPT)
    assert get(api, agent, old["id"])["versionId"] == v1["id"]


def test_a_language_other_than_english_is_asked_for(world, llm):
    api, owner, _ = world
    agent = factories.agent(owner, "Französisch", config={**CONFIG, "language": "de"})
    session = start(api, agent)["session"]
    llm.answer("Guten Abend.")
    send(api, agent, session["id"], "Hallo.")
    assert sent(llm.requests[-1])[0] == ("system", PROMPT + "\n\nSpeak in the language de.")


# --- workflows -----------------------------------------------------------------------------------

def test_a_workflow_session_is_held_by_the_live_version_of_its_first_agent(world, llm):
    api, owner, agent = world
    front = factories.agent(owner, "Front desk", config={**CONFIG, "prompt": "You answer for the front desk.",
                                                           "firstMessage": "Front desk, hello."})
    api.save(front, prompt="An unpublished prompt.")  # its head, not live
    workflow = factories.workflow(owner, [front, agent])
    version = head_of(api, workflow, "workflow")
    started = start(api, workflow, entity_type="workflow")
    session = started["session"]
    assert (session["entityType"], session["entityId"], session["versionId"], session["agentId"]) == (
        "workflow", workflow, version["id"], front)
    assert [m["text"] for m in started["messages"]] == ["Front desk, hello."]
    llm.answer("How can I help?")
    send(api, workflow, session["id"], "Hello.", entity_type="workflow")
    assert sent(llm.requests[-1]) == [("system", "You answer for the front desk."), ("assistant", "Front desk, hello."),
                                      ("user", "Hello.")]
    assert [s["id"] for s in api("GET", sessions_path(workflow, "workflow"))["sessions"]] == [session["id"]]
    # The workflow's session is not the agent's.
    api("GET", f"{sessions_path(front)}/{session['id']}", 404)


def test_a_workflow_that_reaches_no_agent_cannot_chat(world):
    api, owner, _ = world
    workflow = factories.workflow(owner, [])
    error = start(api, workflow, 400, entity_type="workflow")
    assert "reaches no agent" in error["message"]
    assert api("GET", sessions_path(workflow, "workflow"))["sessions"] == []


# --- the end of the call -------------------------------------------------------------------------

def test_an_end_call_phrase_ends_the_session_whatever_its_case_and_spacing(world, llm):
    api, owner, agent = world
    session = start(api, agent)["session"]
    llm.answer("Booked. Thank you, have   a good\nevening!")
    done = send(api, agent, session["id"], "Perfect, thanks.")
    assert done["endsCall"] is True and done["session"]["ended"] is True
    assert done["session"]["endedAt"] == done["messages"][1]["createdAt"]
    asked = len(llm.requests)
    error = send(api, agent, session["id"], "Hello?", 409)
    assert "ended the call" in error["message"] and error["code"] == "conflict"
    assert len(llm.requests) == asked  # refused before asking
    assert get(api, agent, session["id"])["messageCount"] == 3
    # A reply that merely comes close does not end it.
    other = start(api, agent)["session"]
    llm.answer("Have a good day.")
    assert send(api, agent, other["id"], "Bye.")["endsCall"] is False


def test_a_first_message_that_says_an_end_call_phrase_ends_the_session_at_once(world, llm):
    api, owner, _ = world
    agent = factories.agent(owner, "Closed", config={**CONFIG, "firstMessage": "We are closed. Have a good evening."})
    started = start(api, agent)["session"]
    assert started["ended"] is True and started["endedAt"] == started["createdAt"]
    send(api, agent, started["id"], "Oh.", 409)
    assert llm.requests == []


# --- bounds --------------------------------------------------------------------------------------

def test_a_message_is_1_to_4000_characters_once_trimmed(world, llm):
    api, owner, agent = world
    session = start(api, agent)["session"]
    llm.respond(lambda body: "Noted.")
    longest = "x" * 4000
    assert send(api, agent, session["id"], longest)["messages"][0]["text"] == longest
    assert send(api, agent, session["id"], f"  {'y' * 3997}\n")["messages"][0]["text"] == "y" * 3997
    assert "text" in send(api, agent, session["id"], "x" * 4001, 400)["message"]
    assert "text" in send(api, agent, session["id"], " \n\t ", 400)["message"]
    assert "text" in send(api, agent, session["id"], "", 400)["message"]
    assert "control character" in send(api, agent, session["id"], "a\x00b", 400)["message"]
    assert get(api, agent, session["id"])["messageCount"] == 5


def test_a_session_holds_200_messages_at_most(world, llm):
    api, owner, _ = world
    llm.respond(lambda body: "Yes.")
    # Without a first message: 198, then one message and its reply make 200, and no more.
    quiet = factories.agent(owner, "Quiet", config={**CONFIG, "firstMessage": ""})
    session = factories.chat_session(owner, quiet)
    factories.chat_messages(owner, session, MAX_MESSAGES - 2)
    assert send(api, quiet, session, "The last one.")["session"]["messageCount"] == 200
    asked = len(llm.requests)
    error = send(api, quiet, session, "One more.", 409)
    assert "at most 200 messages" in error["message"] and "would make 202" in error["message"]
    assert len(llm.requests) == asked and get(api, quiet, session)["messageCount"] == 200
    # With a first message the count is odd: 199 is as far as it goes.
    agent = factories.agent(owner, "Talker", config=CONFIG)
    session = factories.chat_session(owner, agent)
    factories.chat_messages(owner, session, MAX_MESSAGES - 4)  # 197 with the first message
    assert send(api, agent, session, "Nearly full.")["session"]["messageCount"] == 199
    assert "would make 201" in send(api, agent, session, "Full.", 409)["message"]
    page = messages(api, agent, session, limit=100, offset=100)
    assert [m["role"] for m in page[-3:]] == ["agent", "user", "agent"] and page[-2]["text"] == "Nearly full."


# --- the endpoint --------------------------------------------------------------------------------

@pytest.mark.parametrize("settings_overrides", [{}])
def test_without_an_endpoint_a_message_is_503_and_nothing_changes(world, platform):
    api, owner, agent = world
    session = start(api, agent)["session"]  # starting asks nothing
    response = platform.client.post(f"/api/v2{sessions_path(agent)}/{session['id']}/messages",
                                    params={"workspaceId": owner.workspace_id}, headers=owner.headers,
                                    json={"text": "Hello?"})
    assert response.status_code == 503 and response.headers["retry-after"] == "60"
    assert response.json()["data"] == {"message": NOT_CONFIGURED + " Or add an llm integration to the workspace.",
                                       "code": "unavailable", "result": None}
    assert get(api, agent, session["id"])["messageCount"] == 1 and len(messages(api, agent, session["id"])) == 1


def test_an_endpoint_that_fails_is_502_and_the_message_can_simply_be_sent_again(world, llm):
    api, owner, agent = world
    session = start(api, agent)["session"]
    for fail, why in ((lambda: llm.fail(500), "answered HTTP 500"), (llm.garbage, "not a chat completion"),
                      (lambda: llm.fail(401), "refused the API key"), (lambda: llm.answer("   "), "no content")):
        fail()
        error = send(api, agent, session["id"], "A table for Friday.", 502)
        assert error["code"] == "upstream_failed" and why in error["message"], error
        assert llm.base_url in error["message"] and KEY not in error["message"]
        assert get(api, agent, session["id"])["messageCount"] == 1
    llm.answer("For how many?")
    done = send(api, agent, session["id"], "A table for Friday.")
    assert done["session"]["messageCount"] == 3
    # Asked once with the message: none of the failed attempts stayed in the conversation.
    assert sent(llm.requests[-1])[1:] == [("assistant", FIRST), ("user", "A table for Friday.")]
    assert [m["text"] for m in messages(api, agent, session["id"])] == [FIRST, "A table for Friday.", "For how many?"]


@pytest.mark.parametrize("llm_timeout_s", [0.5])
def test_an_endpoint_that_does_not_answer_in_time_is_502_and_nothing_changes(world, llm):
    api, owner, agent = world
    session = start(api, agent)["session"]
    llm.slow(2, "Too late.")
    error = send(api, agent, session["id"], "Hello?", 502)
    assert "did not answer within 0.5 s" in error["message"]
    assert get(api, agent, session["id"])["messageCount"] == 1
    assert messages(api, agent, session["id"])[-1]["text"] == FIRST


# --- at once -------------------------------------------------------------------------------------

def _both_asking(llm) -> None:
    """Answers once two requests are waiting together, each with its own user message: both
    sends have read the session before either writes."""
    barrier = threading.Barrier(2)

    def answer(body):
        barrier.wait(timeout=20)
        return "Re: " + body["messages"][-1]["content"]
    llm.respond(answer)


def test_two_messages_at_once_each_get_their_reply_right_after_them(world, llm):
    api, owner, agent = world
    session = start(api, agent)["session"]["id"]
    _both_asking(llm)
    results = run_threads(2, lambda i: send(api, agent, session, f"Message {i}"))
    assert sorted(r["session"]["messageCount"] for r in results) == [3, 5]
    listed = messages(api, agent, session)
    assert len(listed) == 5 and listed[0]["text"] == FIRST
    for user, reply in (listed[1:3], listed[3:5]):
        assert (user["role"], reply["role"], reply["text"]) == ("user", "agent", "Re: " + user["text"])
    # Each was asked without the other's message: both read the conversation before either wrote.
    assert sorted(len(r["body"]["messages"]) for r in llm.requests) == [3, 3]
    assert get(api, agent, session)["usage"]["completionTokens"] == 2 * words("Re: Message 0")


def test_two_messages_at_once_cannot_take_a_session_past_200(world, llm):
    api, owner, _ = world
    quiet = factories.agent(owner, "Quiet", config={**CONFIG, "firstMessage": ""})
    session = factories.chat_session(owner, quiet)
    factories.chat_messages(owner, session, MAX_MESSAGES - 2)
    _both_asking(llm)
    statuses = run_threads(2, lambda i: api.client.post(
        f"/api/v2{sessions_path(quiet)}/{session}/messages", params={"workspaceId": owner.workspace_id},
        headers=owner.headers, json={"text": f"Message {i}"}).status_code)
    assert sorted(statuses) == [200, 409]
    assert get(api, quiet, session)["messageCount"] == 200
    assert [m["role"] for m in messages(api, quiet, session, limit=2, offset=198)] == ["user", "agent"]


# --- pages ---------------------------------------------------------------------------------------

def test_sessions_page_newest_first_and_messages_oldest_first(world):
    api, owner, agent = world
    ids = [factories.chat_session(owner, agent) for _ in range(3)]
    page = api("GET", sessions_path(agent), limit=2)
    assert [s["id"] for s in page["sessions"]] == ids[:0:-1]
    assert page["pagination"] == {"total": 3, "limit": 2, "offset": 0}
    assert [s["id"] for s in api("GET", sessions_path(agent), limit=2, offset=2)["sessions"]] == ids[:1]
    past = api("GET", sessions_path(agent), offset=3)
    assert past == {"sessions": [], "pagination": {"total": 3, "limit": 20, "offset": 3}}
    api("GET", sessions_path(agent), 400, limit=101)
    factories.chat_messages(owner, ids[0], 4)
    page = api("GET", f"{sessions_path(agent)}/{ids[0]}/messages", limit=2, offset=3)
    assert [m["text"] for m in page["messages"]] == ["Message 4", "Message 5"]
    assert page["pagination"] == {"total": 5, "limit": 2, "offset": 3}
    assert messages(api, agent, ids[0], offset=5) == []
    # An agent without sessions lists none; one the workspace lacks is 404.
    assert api("GET", sessions_path(factories.agent(owner)))["sessions"] == []
    api("GET", sessions_path(UNKNOWN), 404)
    api("GET", sessions_path(agent, "workflow"), 404)


# --- what is not the caller's --------------------------------------------------------------------

def test_another_workspaces_or_another_entitys_ids_find_nothing(world, platform, llm):
    api, owner, agent = world
    other_owner = platform.workspace("other")
    other = Api(platform, other_owner)
    their_agent = factories.agent(other_owner, "Theirs", config=CONFIG)
    their_session = factories.chat_session(other_owner, their_agent)
    their_version = head_of(other, their_agent)["id"]
    sibling = factories.agent(owner, "Sibling", config=CONFIG)
    mine = factories.chat_session(owner, agent)
    llm.respond(lambda body: "Hello.")
    # Entities and versions: another workspace's, another entity's, unknown.
    start(api, their_agent, 404)
    assert "No version" in start(api, agent, 404, versionId=their_version)["message"]
    start(api, agent, 404, versionId=head_of(api, sibling)["id"])
    start(api, agent, 404, versionId=UNKNOWN)
    start(api, UNKNOWN, 404)
    start(api, agent, 404, entity_type="workflow")
    api("GET", sessions_path(their_agent), 404)
    # Sessions: another workspace's (by its entity's path or by ours), ours by another entity's path.
    for path in (f"{sessions_path(their_agent)}/{their_session}", f"{sessions_path(agent)}/{their_session}",
                 f"{sessions_path(sibling)}/{mine}", f"{sessions_path(agent, 'workflow')}/{mine}",
                 f"{sessions_path(agent)}/{UNKNOWN}"):
        api("GET", path, 404)
        api("GET", f"{path}/messages", 404)
        api("POST", f"{path}/messages", 404, json={"text": "Hello?"})
    assert llm.requests == []
    assert get(other, their_agent, their_session)["messageCount"] == 1


# --- who may -------------------------------------------------------------------------------------

def test_chat_read_alone_reads_but_cannot_start_or_send(world, platform, llm):
    api, owner, agent = world
    session = factories.chat_session(owner, agent)
    workflow = factories.workflow(owner, [agent])
    viewer = Api(platform, platform.member(owner, "viewer"))  # chat:read, no agents:test
    reader = Api(platform, factories.api_key(owner, permissions=["chat:read"]))
    for caller in (viewer, reader):
        assert [s["id"] for s in caller("GET", sessions_path(agent))["sessions"]] == [session]
        assert get(caller, agent, session)["id"] == session and len(messages(caller, agent, session)) == 1
        assert "agents:test" in start(caller, agent, 403)["message"]
        assert "agents:test" in send(caller, agent, session, "Hello?", 403)["message"]
    # agents:test starts with an agent, not with a workflow; reading needs chat:read.
    tester = Api(platform, factories.api_key(owner, permissions=["agents:test"]))
    llm.answer("Hello.")
    assert start(tester, agent)["session"]["createdBy"] == owner.user_id
    assert "workflows:test" in start(tester, workflow, 403, entity_type="workflow")["message"]
    assert "chat:read" in tester("GET", sessions_path(agent), 403)["message"]
    assert send(tester, agent, session, "Hello?")["messages"][1]["text"] == "Hello."
    assert llm.requests and get(api, agent, session)["messageCount"] == 3
