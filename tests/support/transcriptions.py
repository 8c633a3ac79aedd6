"""File transcriptions posted as OpenAI's clients post them, and the shape of their errors."""

from __future__ import annotations

import httpx

from tests.support.speech import FIXTURES

URL = "/v1/audio/transcriptions"


def post(stt, files=None, data=None, headers=None, timeout=120):
    return httpx.post(stt.url + URL, files=files, data=data, headers=stt.headers if headers is None else headers,
                      timeout=timeout)


def jfk(ext="wav"):
    return {"file": (f"jfk.{ext}", (FIXTURES / f"jfk.{ext}").read_bytes())}


def assert_openai_error(response, status, param=None, *words_in_message):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["param"] == param
    for word in words_in_message:
        assert word in error["message"], error["message"]
    return error
