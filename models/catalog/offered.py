"""The models offered to a workspace (GET /models): read from what is installed and configured,
never by loading a model.

Speech models are those the speech server serves (stt.models.available_models: the bundled ones
installed, or STT_MODEL_PATH in place of the default), with their file's size and quantisation
read from the ggml file's header once the server has converted it (null before). Language models
are the platform's LLM_MODEL when LLM_BASE_URL is set, then the models of the workspace's llm
integrations (models.integrations.llm, which also says which one its requests use: the default).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from models.integrations import llm
from models.kernel.pagination import Page
from stt.models import DEFAULT_MODEL, DEFAULT_WEIGHTS, available_models, model_aliases

# Each model id's languages: an English-only model, or any language whisper detects ("*").
_LANGUAGES = {"svc-stt": ("en",), "svc-stt-multilingual": ("*",)}
# whisper.cpp's ftype (the header's last field, modulo its quantisation version factor).
_QUANTISATION = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 9: "q5_1", 10: "q2_k",
                 11: "q3_k", 12: "q4_k", 13: "q5_k", 14: "q6_k"}
_GGML_MAGIC = 0x67676D6C


@dataclass(frozen=True)
class Configured:
    data_dir: str = "data"
    stt_model_path: str | None = None
    stt_model_aliases: str = ""
    stt_weights: str = DEFAULT_WEIGHTS


_configured = Configured()


def configure(configured: Configured) -> None:
    global _configured
    _configured = configured


@dataclass(frozen=True)
class SpeechModel:
    id: str
    languages: tuple[str, ...]
    size_bytes: int | None
    quantisation: str | None
    default: bool
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class LanguageModel:
    id: str
    source: str  # "platform": the service's own endpoint (LLM_BASE_URL); "integration": the workspace's
    default: bool
    integration_id: str | None = None


def _header(path: Path) -> tuple[int | None, str | None]:
    """The ggml file's size and quantisation, or (None, None) while it is not there."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(48)
            size = path.stat().st_size
    except OSError:
        return None, None
    if len(head) < 48 or struct.unpack("<i", head[:4])[0] != _GGML_MAGIC:
        return size, None
    ftype = struct.unpack("<i", head[44:48])[0] % 1000
    return size, _QUANTISATION.get(ftype, f"ftype {ftype}")


def speech_models() -> list[SpeechModel]:
    c = _configured
    aliases = model_aliases(c.stt_model_aliases)
    found = []
    for model_id, source in available_models(c.data_dir, c.stt_model_path, c.stt_weights).items():
        size, quantisation = _header(source.path)
        default = model_id == DEFAULT_MODEL
        found.append(SpeechModel(model_id, _LANGUAGES.get(model_id, ("*",)), size, quantisation, default,
                                 tuple(a for a in aliases if a not in _LANGUAGES) if default else ()))
    return found


def llm_models(workspace_id: str) -> list[LanguageModel]:
    """The language models the workspace may use: the platform's, when an endpoint is configured,
    then its llm integrations' oldest first. The default is the one its requests use: the newest
    integration's, else the platform's (models.integrations.llm.endpoint_for). One statement."""
    found = llm.models_for(workspace_id)
    default = len(found) - 1
    return [LanguageModel(m.model, m.source, i == default, m.integration_id) for i, m in enumerate(found)]


def list_models(*, workspace_id: str, limit: int, offset: int) -> Page:
    """The speech models, then the language models: a page of them."""
    everything = [*speech_models(), *llm_models(workspace_id)]
    return Page(items=everything[offset:offset + limit], total=len(everything), limit=limit, offset=offset)
