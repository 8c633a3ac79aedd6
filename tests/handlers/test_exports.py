"""Whole-workspace exports over HTTP: a workspace built with factories exported whole (each
resource's rows, no other workspace's), no secret anywhere in the zip, customer numbers masked
without calls:pii, progress, one unfinished export per workspace (concurrent starts: one 200),
the download whole and by Range (409 before it succeeded, 410 once expired), deletion, expiry, and
a worker that dies mid-way: its lease lapses and another claim writes the export."""
from __future__ import annotations

import io
import time
import zipfile
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from models.exports import exports, resources
from models.exports.tables import WorkspaceExport
from models.identity import passwords
from models.kernel.db import session, unit_of_work, utcnow
from models.kernel.errors import Conflict
from models.kernel.scoping import Workspace
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.threads import run_threads

PASSWORD = "correct horse battery staple 42"


def _workspace_with_everything(platform):
    """A workspace holding one of most resources, the secrets it knows; and another workspace."""
    api = owner(platform)
    actor = api.actor
    agent_id = factories.agent(actor, name="Receptionist")
    factories.save_versions(actor, agent_id, 2)
    workflow_id = factories.workflow(actor, [agent_id])
    call_id = factories.call(actor, agent_id=agent_id, customer="+14155550123", tags=["vip"])
    feedback_id = factories.feedback(actor, call_id=call_id)
    persona_id = factories.persona(actor)
    number_id = factories.phone_number(actor, "+14155550999")
    subscription_id, webhook_secret = factories.webhook_subscription(actor, "https://hooks.example.com/in")
    key = factories.api_key(actor, name="ci key")
    member = factories.member(actor, "member")
    with session():
        passwords.set_password(member.user_id, PASSWORD)
    other = owner(platform)
    other_agent = factories.agent(other.actor, name="Elsewhere")
    other_call = factories.call(other.actor, customer="+14155550777")
    return api, {"agent": agent_id, "workflow": workflow_id, "call": call_id, "feedback": feedback_id,
                 "persona": persona_id, "phone_number": number_id, "webhook_subscription": subscription_id,
                 "membership": member.user_id}, \
        {"webhook": webhook_secret, "key": key.secret, "token": actor.secret, "member token": member.secret,
         "password": PASSWORD}, (other.actor.workspace_id, other_agent, other_call)


def _zip(platform, api: Api, export_id: str) -> zipfile.ZipFile:
    response = platform.client.get(f"/api/v2/exports/{export_id}/download", headers=api.actor.headers,
                                   params={"workspaceId": api.actor.workspace_id})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    assert response.headers["content-disposition"] == f'attachment; filename="export-{export_id}.zip"'
    return zipfile.ZipFile(io.BytesIO(response.content))


def _lines(archive: zipfile.ZipFile, name: str) -> list[dict]:
    return [orjson.loads(line) for line in archive.read(f"{name}.ndjson").splitlines()]


def test_an_export_holds_each_resource_of_its_workspace_and_no_other(platform):
    api, made, _, (other_workspace, other_agent, other_call) = _workspace_with_everything(platform)
    started = api("POST", "/exports")["export"]
    assert started["status"] == "queued" and started["progress"] == {
        "resourcesDone": 0, "resourcesTotal": len(resources.exported()), "rows": 0}
    assert started["customerNumbersMasked"] is False  # the owner holds calls:pii
    assert factories.run_exports() == [started["id"]]
    done = api("GET", f"/exports/{started['id']}")["export"]
    assert done["status"] == "succeeded"
    assert done["progress"]["resourcesDone"] == done["progress"]["resourcesTotal"] == len(resources.exported())
    assert done["sizeBytes"] > 0 and done["expiresAt"] > done["finishedAt"]
    archive = _zip(platform, api, started["id"])
    names = set(archive.namelist())
    assert names == {r.file_name for r in resources.exported()} | {"manifest.json"}
    manifest = orjson.loads(archive.read("manifest.json"))
    assert done["progress"]["rows"] == sum(r["rows"] for r in manifest["resources"])
    for table, row_id in made.items():
        rows = _lines(archive, table)
        key = "user_id" if table == "membership" else "id"
        assert row_id in {row[key] for row in rows}, table
        assert {row["workspace_id"] for row in rows} == {api.actor.workspace_id}, table
    versions = [row["entity_id"] for row in _lines(archive, "entity_version")]
    assert sorted(versions) == sorted([made["agent"]] * 3 + [made["workflow"]])  # the agent's first and two saved
    assert [row["name"] for row in _lines(archive, "call_tag")] == ["vip"]
    assert [row["agent_id"] for row in _lines(archive, "workflow_agent")] == [made["agent"]]
    assert _lines(archive, "workspace")[0]["id"] == api.actor.workspace_id
    users = {row["id"]: row for row in _lines(archive, "user")}
    assert set(users) == {api.actor.user_id, made["membership"]}  # the members' users, not the other workspace's
    assert set(users[api.actor.user_id]) == {"id", "email", "display_name", "is_active", "created_at"}
    assert _lines(archive, "call")[0]["customer"] == "+14155550123"
    everything = b"".join(archive.read(name) for name in names)
    for foreign in (other_workspace, other_agent, other_call, b"+14155550777"):
        assert (foreign if isinstance(foreign, bytes) else foreign.encode()) not in everything


def test_no_secret_is_in_the_zip(platform):
    api, _, secrets, _ = _workspace_with_everything(platform)
    export_id = api("POST", "/exports")["export"]["id"]
    factories.run_exports()
    archive = _zip(platform, api, export_id)
    everything = b"".join(archive.read(name) for name in archive.namelist())
    with session():
        stored_hash = passwords.stored_hash(_lines(archive, "membership")[-1]["user_id"]) or ""
    for what, secret in {**secrets, "password hash": stored_hash}.items():
        assert secret and secret.encode() not in everything, what
    for table, column in resources.EXCLUDED_COLUMNS:
        if f"{table}.ndjson" in archive.namelist():
            assert all(column not in row for row in _lines(archive, table)), (table, column)
    assert not any(name.startswith(("signing_secret", "user_password", "user_mfa", "access_token"))
                   for name in archive.namelist())


def test_customer_numbers_are_masked_without_calls_pii(platform):
    api = owner(platform)
    factories.call(api.actor, customer="+14155550123")
    admin_key = factories.api_key(api.actor, permissions=["workspace:settings-write", "workspace:read"])
    keyed = Api(platform, admin_key)
    started = keyed("POST", "/exports")["export"]
    assert started["customerNumbersMasked"] is True
    factories.run_exports()
    archive = _zip(platform, keyed, started["id"])
    call = _lines(archive, "call")[0]
    assert call["customer"] == "+*******0123" and call["payload"] is None
    assert b"4155550123" not in b"".join(archive.read(name) for name in archive.namelist())


def test_one_export_runs_at_a_time_in_a_workspace(platform):
    api = owner(platform)
    answers = run_threads(8, lambda i: platform.client.post(
        "/api/v2/exports", headers=api.actor.headers, params={"workspaceId": api.actor.workspace_id}))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [409] * 7, statuses
    queued = next(a for a in answers if a.status_code == 200).json()["data"]["result"]["export"]["id"]
    refused = next(a for a in answers if a.status_code == 409).json()["data"]
    assert refused["code"] == "conflict" and queued in refused["message"]
    # Another workspace is not held back; once the first finishes, the next may start.
    owner(platform)("POST", "/exports")
    factories.run_exports()
    api("POST", "/exports")
    assert api("GET", "/exports")["pagination"]["total"] == 2


def test_one_export_at_a_time_holds_for_starts_on_connections_of_their_own(platform):
    # Each start in a thread and a database connection of its own, as processes of a deployment
    # start them: the unique index decides, whatever the order of their reads.
    actor = owner(platform).actor

    def start(index: int):
        try:
            with session(), unit_of_work():
                return exports.start(factories.principal(actor), workspace_id=actor.workspace_id).id
        except Conflict as exc:
            return ("conflict", exc.message)

    results = run_threads(8, start)
    started = [r for r in results if isinstance(r, str)]
    refused = [r for r in results if isinstance(r, tuple)]
    assert len(started) == 1 and len(refused) == 7, results
    assert all(started[0] in message for _, message in refused)
    with session():
        assert WorkspaceExport.in_workspace(actor.workspace_id).count() == 1


def test_a_workspace_keeps_at_most_max_kept_exports(platform):
    api = owner(platform)
    for _ in range(exports.MAX_KEPT):
        factories.export(api.actor)
        factories.run_exports()
    assert "delete one" in api("POST", "/exports", 409)["message"]
    first = api("GET", "/exports", limit=100)["exports"][-1]["id"]
    api("DELETE", f"/exports/{first}")
    api("POST", "/exports")


def test_the_download_is_whole_or_by_range_and_only_once_succeeded(platform):
    api = owner(platform)
    factories.agent(api.actor)
    export_id = api("POST", "/exports")["export"]["id"]
    assert "queued" in api("GET", f"/exports/{export_id}/download", 409)["message"]
    factories.run_exports()
    whole = _zip(platform, api, export_id)
    raw = b"".join(whole.read(n) for n in whole.namelist())
    assert raw
    url, params = f"/api/v2/exports/{export_id}/download", {"workspaceId": api.actor.workspace_id}
    full = platform.client.get(url, headers=api.actor.headers, params=params).content
    part = platform.client.get(url, headers={**api.actor.headers, "Range": "bytes=10-29"}, params=params)
    assert part.status_code == 206 and part.content == full[10:30]
    assert part.headers["content-range"] == f"bytes 10-29/{len(full)}"
    outside = platform.client.get(url, headers={**api.actor.headers, "Range": f"bytes={len(full) + 5}-"},
                                  params=params)
    assert outside.status_code == 416 and outside.json()["data"]["code"] == "range_not_satisfiable"
    assert api("GET", "/exports/00000000-0000-4000-8000-000000000000/download", 404)["code"] == "not_found"


def test_an_export_expires_its_download_is_gone_and_its_file_deleted(platform):
    api = owner(platform)
    export_id = api("POST", "/exports")["export"]["id"]
    factories.run_exports()
    with session():
        path = WorkspaceExport.in_workspace(api.actor.workspace_id, WorkspaceExport.path).where(
            WorkspaceExport.id == export_id).scalar()
        WorkspaceExport.update(expires_at=utcnow() - timedelta(seconds=1)).where(
            WorkspaceExport.id == export_id).execute()
    assert api("GET", f"/exports/{export_id}")["export"]["status"] == "expired"
    assert api("GET", f"/exports/{export_id}/download", 410)["code"] == "gone"
    assert Path(path).is_file()
    with session():
        assert exports.expire_due() == 1
    assert not Path(path).exists()
    assert api("GET", f"/exports/{export_id}")["export"]["status"] == "expired"
    assert api("GET", f"/exports/{export_id}/download", 410)["code"] == "gone"


def test_a_deleted_export_takes_its_file_with_it(platform, tmp_path):
    api = owner(platform)
    export_id = api("POST", "/exports")["export"]["id"]
    factories.run_exports()
    files = list((tmp_path / "exports").rglob("*.zip"))
    assert len(files) == 1
    assert api("DELETE", f"/exports/{export_id}") == {"id": export_id, "deleted": True}
    assert not files[0].exists()
    assert api("GET", f"/exports/{export_id}", 404)["message"] == f"No export {export_id} in this workspace."
    api("DELETE", f"/exports/{export_id}", 404)


def test_a_deleted_workspace_takes_its_exports_files_with_it(platform, tmp_path):
    api = owner(platform)
    factories.export(api.actor)
    factories.run_exports()
    directory = tmp_path / "exports" / api.actor.workspace_id
    assert list(directory.glob("*.zip"))
    with session():
        name = Workspace.get_by_id(api.actor.workspace_id).name
    api("DELETE", "/workspace", confirmName=name)
    assert not directory.exists()


def test_another_workspaces_export_is_not_found(platform):
    api = owner(platform)
    export_id = api("POST", "/exports")["export"]["id"]
    stranger = owner(platform)
    for method, path in (("GET", ""), ("GET", "/download"), ("DELETE", "")):
        assert stranger(method, f"/exports/{export_id}{path}", 404)["code"] == "not_found"
    assert stranger("GET", "/exports")["exports"] == []


def test_progress_is_stored_as_each_resource_is_written(platform):
    api = owner(platform)
    for n in range(3):
        factories.call(api.actor, tags=[f"tag {n}"])
    export_id = factories.export(api.actor)
    seen = []

    def look() -> bool:  # asked before each store of progress: what the status shows then
        seen.append(api("GET", f"/exports/{export_id}")["export"]["progress"])
        return True

    with session():
        job = exports.claim(lease_s=30)
        exports.complete(job, exports.write(job, keep_going=look))
    total = len(resources.exported())
    assert [p["resourcesDone"] for p in seen] == list(range(total))
    assert [p["rows"] for p in seen] == sorted(p["rows"] for p in seen) and seen[-1]["rows"] > 3
    assert api("GET", f"/exports/{export_id}")["export"]["progress"]["resourcesDone"] == total


def test_a_worker_that_dies_mid_way_is_replaced_once_its_lease_lapses(platform, tmp_path):
    api = owner(platform)
    for n in range(3):
        factories.agent(api.actor, name=f"agent {n}")
    export_id = api("POST", "/exports")["export"]["id"]
    with session():
        dead = exports.claim(lease_s=30)
        # The dead worker wrote some of it, and left its part file.
        assert exports.progress(dead, resources_done=2, row_count=7)
    directory = tmp_path / "exports" / api.actor.workspace_id
    directory.mkdir(parents=True)
    (directory / f"{export_id}.{dead.attempt}.part").write_bytes(b"half")
    running = api("GET", f"/exports/{export_id}")["export"]
    assert running["status"] == "running" and running["progress"]["resourcesDone"] == 2
    with session():
        assert exports.claim(lease_s=30) is None  # its lease holds
        taken = exports.claim(lease_s=30, now=utcnow() + timedelta(seconds=31))
    assert taken.export_id == export_id and taken.attempt == dead.attempt + 1
    with session():
        path = exports.write(taken)
        assert exports.complete(taken, path)
        # The dead worker's late word changes nothing.
        assert not exports.progress(dead, resources_done=1, row_count=1)
        with pytest.raises(exports.Stopped):
            exports.write(dead)
    assert list((tmp_path / "exports").rglob("*.part")) == []
    done = api("GET", f"/exports/{export_id}")["export"]
    assert done["status"] == "succeeded" and len(_lines(_zip(platform, api, export_id), "agent")) == 3


@pytest.mark.parametrize("settings_overrides", [{"export_workers": 1, "export_lease_s": 1.0}])
def test_the_worker_thread_writes_a_lapsed_export(platform):
    api = owner(platform)
    export_id = factories.export(api.actor)
    with session():
        # Claimed by a worker of a process since gone: its lease has run out.
        WorkspaceExport.update(status="running", attempts=1, lease_until=utcnow() - timedelta(seconds=1)).where(
            WorkspaceExport.id == export_id).execute()
    deadline = time.monotonic() + 20
    while (status := api("GET", f"/exports/{export_id}")["export"]["status"]) != "succeeded":
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


def test_an_export_claimed_past_its_attempts_fails(platform):
    api = owner(platform)
    export_id = factories.export(api.actor)
    with session():
        WorkspaceExport.update(attempts=exports.MAX_ATTEMPTS).where(WorkspaceExport.id == export_id).execute()
        job = exports.claim(lease_s=30)
        assert job.attempt > exports.MAX_ATTEMPTS
        assert exports.fail(job, "The export stopped before it finished, 3 times.")
    failed = api("GET", f"/exports/{export_id}")["export"]
    assert failed["status"] == "failed" and failed["error"].startswith("The export stopped")
    api("POST", "/exports")  # a failed export holds the workspace back no more
