"""The contract as served (api.served_contract): the resolved document, made once per base path,
not on every request (connexion's own way cost a second of the event loop per request)."""
from __future__ import annotations

import yaml
from connexion.spec import Specification

from api import contract


def test_the_served_document_is_the_bundled_contract_made_once(platform, monkeypatch):
    made = []
    original = Specification.with_base_path
    monkeypatch.setattr(Specification, "with_base_path", lambda self, base: made.append(base) or original(self, base))
    answers = [platform.client.get("/api/v2/openapi.json") for _ in range(3)]
    assert all(a.status_code == 200 and a.headers["content-type"] == "application/json" for a in answers)
    assert answers[0].content == answers[1].content == answers[2].content
    served = answers[0].json()
    assert served["paths"].keys() == contract.document()["paths"].keys()
    assert served["servers"] == [{"url": "/api/v2"}]
    assert "$ref" not in answers[0].text  # one bundled document
    as_yaml = [platform.client.get("/api/v2/openapi.yaml") for _ in range(2)]
    assert as_yaml[0].status_code == 200 and as_yaml[0].headers["content-type"].startswith("text/yaml")
    assert yaml.safe_load(as_yaml[1].text) == served
    assert len(made) == 2  # once for the JSON, once for the YAML


def test_what_connexion_writes_into_the_apps_contract_stays_out_of_the_document(platform):
    """Connexion adds the document's components to a body schema it validates with: the app's
    copy of the contract, never the one served and read by the tests (api.contract.document)."""
    owner = platform.workspace()
    response = platform.client.post("/api/v2/api-keys", params={"workspaceId": owner.workspace_id},
                                    json={"name": "k", "userId": owner.user_id}, headers=owner.headers)
    assert response.status_code == 200, response.text
    body = contract.document()["paths"]["/api-keys"]["post"]["requestBody"]["content"]["application/json"]
    assert "components" not in body["schema"]
    assert "components" not in platform.client.get("/api/v2/openapi.json").json()["paths"]["/api-keys"]["post"][
        "requestBody"]["content"]["application/json"]["schema"]
