"""GET /health of the management API, which a container's health check and load balancers ask:
200 in the envelope while the database answers, 503 with Retry-After when it does not; no
credential, outside the versioned contract."""
from __future__ import annotations

from starlette.testclient import TestClient

from tests.support.servers import free_port


def test_healthy_without_a_credential_and_in_the_envelope(platform):
    response = platform.client.get("/health")
    assert response.status_code == 200 and response.headers["cache-control"] == "no-store"
    assert response.json() == {"success": True, "data": {"message": "The API and its database are serving.",
                                                         "result": {"status": "ok"}}}
    head = platform.client.head("/health")
    assert head.status_code == 200 and head.content == b""
    # Only GET and HEAD: anything else is the API's, which has no such path.
    assert platform.client.unchecked.post("/health").status_code == 404
    assert platform.client.get("/api/v2/health").status_code == 404


def test_unhealthy_with_retry_after_when_the_database_is_unreachable(tmp_path, caplog):
    from api.app import create_app
    from core.settings import Settings
    from models.kernel.db import database
    # A free port: nothing listens there.
    settings = Settings(database_url=f"postgresql://postgres@127.0.0.1:{free_port()}/gone", data_dir=str(tmp_path),
                        db_pool_timeout_s=1)
    app = create_app(settings, migrate_schema=False)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            response = client.get("/health")
        assert response.status_code == 503 and int(response.headers["retry-after"]) > 0
        body = response.json()
        assert body["success"] is False and body["data"]["code"] == "unavailable"
        assert body["data"]["result"] == {"status": "unavailable"} and "retry" in body["data"]["message"]
        for leak in ("127.0.0.1", "psycopg2", "Traceback", "connection to server"):
            assert leak not in response.text
        # The operator is told why.
        assert any("health check failed" in record.getMessage() for record in caplog.records)
    finally:
        database.close_all()
