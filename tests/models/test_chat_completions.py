"""The chat-completions client against a local server that answers like one: structured output
asked for, and each way the endpoint fails turned into one sentence that names the endpoint, never
the key."""
from __future__ import annotations

import socket

import pytest

from models.kernel.chat_completions import ChatCompletionError, complete_json, shown

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
          "additionalProperties": False}
KEY = "sk-test-secret-key-1234"


def ask(base_url: str, timeout_s: float = 5.0) -> dict:
    return complete_json(base_url=base_url, api_key=KEY, model="test-model", timeout_s=timeout_s,
                         messages=[{"role": "user", "content": "hello"}], schema_name="answer", schema=SCHEMA)


def failure(base_url: str, timeout_s: float = 5.0) -> ChatCompletionError:
    with pytest.raises(ChatCompletionError) as caught:
        ask(base_url, timeout_s)
    assert KEY not in caught.value.message
    return caught.value


def test_the_answer_is_the_json_object_of_the_content_and_the_schema_is_asked_for(llm):
    llm.answer({"answer": "hi"})
    assert ask(llm.base_url) == {"answer": "hi"}
    request = llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == f"Bearer {KEY}"
    assert request["body"]["model"] == "test-model"
    assert request["body"]["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True}}


def test_a_refused_key_is_not_retryable_and_names_the_endpoint(llm):
    llm.fail(401, "Incorrect API key provided: sk-test-***")
    error = failure(llm.base_url)
    assert "refused the API key (401)" in error.message and llm.base_url in error.message
    assert not error.retryable


def test_rate_limiting_and_server_errors_are_retryable(llm):
    llm.fail(429)
    error = failure(llm.base_url)
    assert "rate limiting" in error.message and error.retryable
    llm.fail(503)
    error = failure(llm.base_url)
    assert "HTTP 503" in error.message and error.retryable


def test_a_wrong_address_says_so(llm):
    error = failure(llm.base_url.removesuffix("/v1") + "/nowhere")
    assert "404" in error.message and not error.retryable


def test_content_that_is_not_json_or_not_an_object_is_refused(llm):
    llm.answer("Sure! Here are some ideas: ...")
    assert "not valid JSON" in failure(llm.base_url).message
    llm.answer([1, 2])
    assert "not an object" in failure(llm.base_url).message


def test_a_body_that_is_no_chat_completion_is_refused(llm):
    llm.garbage()
    error = failure(llm.base_url)
    assert error.retryable and llm.base_url in error.message


def test_a_slow_endpoint_times_out(llm):
    llm.slow(2.0, {"answer": "late"})
    error = failure(llm.base_url, timeout_s=0.3)
    assert "did not answer within 0.3 s" in error.message and error.retryable


def test_an_unreachable_endpoint_says_so():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    error = failure(f"http://127.0.0.1:{port}/v1")
    assert "could not be reached" in error.message and error.retryable


def test_the_shown_address_keeps_no_credentials():
    assert shown("https://user:pass@llm.example.com:8443/v1?key=abc") == "https://llm.example.com:8443/v1"
