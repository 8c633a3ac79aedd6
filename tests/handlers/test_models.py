"""GET /models: the speech models the speech server serves (read from what is installed, its file's
size and quantisation once prepared, never by loading it) and the platform's language model
when an endpoint is configured; a page of them like any list."""
from __future__ import annotations

import pytest

from models.catalog import offered
from stt.ggml_convert import bundled_models
from tests.support import factories
from tests.support.client import owner

MULTILINGUAL = "base" in bundled_models()


def test_the_speech_models_are_listed_before_they_are_prepared(platform):
    result = owner(platform)("GET", "/models")
    default = result["models"][0]
    assert default == {"id": "svc-stt", "type": "speech", "default": True, "source": "speech-server",
                       "languages": ["en"], "sizeBytes": None, "quantisation": None,
                       "aliases": ["whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe"], "integrationId": None}
    assert [m["id"] for m in result["models"]] == ["svc-stt"] + (["svc-stt-multilingual"] if MULTILINGUAL else [])
    assert all(m["type"] == "speech" for m in result["models"])  # no endpoint: no language model
    assert result["pagination"] == {"total": len(result["models"]), "limit": 20, "offset": 0}


def test_a_prepared_model_shows_its_size_and_quantisation(platform, converted_model):
    # As the app's start would with STT_MODEL_PATH naming the converted file, and no aliases.
    offered.configure(offered.Configured(stt_model_path=str(converted_model), stt_model_aliases=""))
    default = owner(platform)("GET", "/models")["models"][0]
    assert default["sizeBytes"] == converted_model.stat().st_size
    assert default["quantisation"] == "q8_0" and default["aliases"] == []


def test_the_bundled_model_is_shown_in_the_weights_stt_weights_names(platform, converted_model):
    # The data directory holds the default (q8_0) conversion; f16 is another file, not made yet.
    data_dir = converted_model.parent.parent
    offered.configure(offered.Configured(data_dir=str(data_dir), stt_model_aliases=""))
    default = owner(platform)("GET", "/models")["models"][0]
    assert (default["quantisation"], default["sizeBytes"]) == ("q8_0", converted_model.stat().st_size)
    offered.configure(offered.Configured(data_dir=str(data_dir), stt_model_aliases="", stt_weights="f16"))
    default = owner(platform)("GET", "/models")["models"][0]
    assert (default["quantisation"], default["sizeBytes"]) == (None, None)


@pytest.mark.parametrize("settings_overrides", [{"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "gpt-4o"}])
def test_the_platforms_language_model_is_listed_when_an_endpoint_is_set(platform):
    api = owner(platform)
    result = api("GET", "/models")
    assert result["models"][-1] == {"id": "gpt-4o", "type": "llm", "default": True, "source": "platform",
                                    "languages": None, "sizeBytes": None, "quantisation": None, "aliases": [],
                                    "integrationId": None}
    total = result["pagination"]["total"]
    assert api("GET", "/models", limit=1, offset=total - 1)["models"] == [result["models"][-1]]
    assert api("GET", "/models", offset=total)["models"] == []


@pytest.mark.parametrize("settings_overrides", [{"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "gpt-4o"}])
def test_the_workspaces_llm_integrations_follow_and_the_newest_is_the_default(platform):
    api = owner(platform)
    first = factories.integration(api.actor, kind="llm", base_url="https://llm-a.example.com/v1", model="model-a")
    factories.integration(api.actor, kind="crm")  # not a language model
    second = factories.integration(api.actor, kind="llm", base_url="https://llm-b.example.com/v1", model="model-b")
    llms = [m for m in api("GET", "/models")["models"] if m["type"] == "llm"]
    assert [(m["id"], m["source"], m["default"], m["integrationId"]) for m in llms] == [
        ("gpt-4o", "platform", False, None), ("model-a", "integration", False, first),
        ("model-b", "integration", True, second)]
    # Another workspace sees the platform's alone, its default.
    other = owner(platform)
    assert [(m["id"], m["default"]) for m in other("GET", "/models")["models"] if m["type"] == "llm"] == [
        ("gpt-4o", True)]
    api("DELETE", f"/integrations/{second}")
    assert [m["default"] for m in api("GET", "/models")["models"] if m["type"] == "llm"] == [False, True]


def test_without_a_platform_endpoint_a_workspaces_integration_is_its_default(platform):
    api = owner(platform)
    made = factories.integration(api.actor, kind="llm", base_url="https://llm.example.com/v1", model="m")
    llms = [m for m in api("GET", "/models")["models"] if m["type"] == "llm"]
    assert llms == [{"id": "m", "type": "llm", "default": True, "source": "integration", "languages": None,
                     "sizeBytes": None, "quantisation": None, "aliases": [], "integrationId": made}]
