"""The speech filter's preview over HTTP, and its settings as a workspace setting: every kind of
mask, the filter given merged onto the workspace's, and the settings' rules."""
from __future__ import annotations

import pytest

from models.kernel.db import session
from tests.support import factories
from tests.support.client import owner
from tests.support.reports import post_report


def preview(api, text: str, expect: int = 200, **body) -> dict:
    return api("POST", "/speech-filter/preview", expect, json={"text": text, **body})


def test_personal_data_and_profanity_are_masked_with_their_spans(platform):
    api = owner(platform)
    text = "Shit, call +44 20 7946 0958 or mail jo@example.com; card 4111 1111 1111 1111."
    result = preview(api, text)
    assert result["text"] == "****, call [phone] or mail [email]; card [card]."
    assert [(m["kind"], text[m["start"]:m["end"]]) for m in result["matches"]] == [
        ("profanity", "Shit"), ("phone", "+44 20 7946 0958"), ("email", "jo@example.com"),
        ("card", "4111 1111 1111 1111")]


def test_the_filter_given_is_merged_onto_the_workspaces(platform):
    api = owner(platform)
    factories.speech_filter(api.actor, words=["project falcon"], emails=False)
    text = "Project  Falcon ships; mail jo@example.com"
    assert preview(api, text)["text"] == "**** ships; mail jo@example.com"
    assert preview(api, text, filter={"emails": True})["text"] == "**** ships; mail [email]"
    assert preview(api, text, filter={"words": []})["text"] == "Project  Falcon ships; mail jo@example.com"


def test_the_settings_are_a_workspace_setting_with_their_rules(platform):
    api = owner(platform)
    settings = api("GET", "/workspace")["workspace"]["settings"]["speechFilter"]
    assert settings == {"enabled": False, "profanity": True, "phoneNumbers": True, "emails": True,
                        "cardNumbers": True, "phoneRegion": "US", "words": []}
    changed = api("PATCH", "/workspace",
                  json={"settings": {"speechFilter": {"enabled": True, "words": [" Falcon ", "falcon"],
                                                      "phoneRegion": "gb"}}})["workspace"]["settings"]
    assert changed["speechFilter"] == {**settings, "enabled": True, "words": ["falcon"], "phoneRegion": "GB"}
    assert api("PATCH", "/workspace", 400,
               json={"settings": {"speechFilter": {"phoneRegion": "ZZ"}}})["message"] == \
        "settings.speechFilter.phoneRegion must be a two-letter region code such as US or GB."
    assert preview(api, "x", 400, filter={"words": ["w" * 51]})["code"] == "validation_failed"
    # The preview's own object is named as it was given.
    assert preview(api, "x", 400, filter={"phoneRegion": "AA"})["message"] == \
        "filter.phoneRegion must be a two-letter region code such as US or GB."
    assert preview(api, "x", 400, filter={"words": ["ok", "--"]})["message"] == \
        "filter.words[1] must be 1 to 50 characters once trimmed, with a letter or digit."
    assert preview(api, "x" * 20_001, 400)["code"] == "validation_failed"


def test_a_reported_transcript_is_stored_masked_when_the_filter_is_on_and_as_sent_when_off(platform):
    api = owner(platform)
    said = "AI: Your email?\nUser: jo@example.com, damn it."
    off = factories.report(api.actor, transcript=said)
    post_report(platform, api.actor, off)
    factories.speech_filter(api.actor, enabled=True)
    on = factories.report(api.actor, transcript=said)
    post_report(platform, api.actor, on)
    assert api("GET", f"/call/{off['callId']}")["call"]["transcript"] == said
    assert api("GET", f"/call/{on['callId']}")["call"]["transcript"] == "AI: Your email?\nUser: [email], **** it."


@pytest.fixture
def settings_overrides():
    # A subscription to a receiver on 127.0.0.1 over http; no delivery worker: the event is read
    # where it waits.
    return {"webhook_allow_http": True, "webhook_allow_private_addresses": True, "webhook_workers": 0}


def test_the_outbound_report_carries_the_transcript_as_the_call_stores_it(platform):
    from models.webhooks.tables import WebhookEvent
    api = owner(platform)
    factories.webhook_subscription(api.actor, "http://127.0.0.1:9/hook")
    said = "User: call me on +1 415 555 0132 or jo@example.com"
    off = factories.report(api.actor, transcript=said)
    post_report(platform, api.actor, off)
    factories.speech_filter(api.actor, enabled=True)
    on = factories.report(api.actor, transcript=said)
    post_report(platform, api.actor, on)
    with session():
        sent = {row.call_id: row.payload["transcript"] for row in
                WebhookEvent.select().where(WebhookEvent.workspace == api.actor.workspace_id)}
    assert sent[off["callId"]] == said
    assert sent[on["callId"]] == "User: call me on [phone] or [email]"
    assert api("GET", f"/call/{on['callId']}")["call"]["transcript"] == sent[on["callId"]]
