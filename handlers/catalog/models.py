"""The models a workspace may use: listModels."""
from __future__ import annotations

from api.envelope import ok
from models.catalog import offered


def model_shape(model: offered.SpeechModel | offered.LanguageModel) -> dict:
    if isinstance(model, offered.SpeechModel):
        return {"id": model.id, "type": "speech", "default": model.default, "source": "speech-server",
                "languages": list(model.languages), "sizeBytes": model.size_bytes,
                "quantisation": model.quantisation, "aliases": list(model.aliases), "integrationId": None}
    return {"id": model.id, "type": "llm", "default": model.default, "source": model.source, "languages": None,
            "sizeBytes": None, "quantisation": None, "aliases": [], "integrationId": model.integration_id}


def list_models(workspaceId: str, limit: int = 20, offset: int = 0):
    page = offered.list_models(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"models": [model_shape(m) for m in page.items], "pagination": page.pagination()})
