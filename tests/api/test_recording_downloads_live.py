"""Recording downloads against a real server of two workers while new uploads replace the
recording: every download that is answered is answered whole, with the bytes of one version."""
from __future__ import annotations

import httpx
import pytest

from tests.support import factories
from tests.support.servers import start_server, stop_server
from tests.support.threads import run_threads

UPLOADERS, UPLOADS_EACH = 2, 12
DOWNLOADERS, DOWNLOADS_EACH = 6, 30
RANGES = (None, "bytes=1000-", "bytes=-70000", "bytes=5-99999")


def version(number: int) -> bytes:
    """Version ``number`` of the recording: its own bytes throughout and its own length, longer
    than one read from disk, so that no part of one version is a part of another."""
    return b"RIFF" + (f"<version {number:04d}>".encode() * 20_000)[:200_000 + 997 * number]


@pytest.fixture
def server(tmp_path, database_url):
    server = start_server(tmp_path, DATABASE_URL=database_url, WORKERS=2, RATE_LIMITS_ENABLED="false")
    yield server
    stop_server(server)


# Two workers started, then stopped, per database: some 20 s; without them, the rule is held by
# tests/handlers/test_call_recordings.py (a download held open while a new upload lands).
@pytest.mark.slow
def test_downloads_racing_uploads_each_end_whole_with_one_version(server, tmp_path):
    owner = server.admin("bootstrap", "--workspace", "w", "--email", "owner@example.com")
    headers = {"Authorization": f"Bearer {owner['token']}"}
    params = {"workspaceId": owner["workspaceId"]}
    report = factories.report(factories.Actor(owner["workspaceId"], owner["userId"], "", ""))
    r = httpx.post(f"{server.url}/api/v2/webhooks/end-of-call-report", params=params, headers=headers, json=report)
    assert r.status_code == 200, r.text
    url = f"{server.url}/api/v2/call/{report['callId']}/recording"
    versions = {len(body): body for body in map(version, range(UPLOADERS * UPLOADS_EACH + 1))}

    def upload(number: int) -> None:
        r = httpx.put(url, params=params, headers={**headers, "Content-Type": "audio/wav"}, content=version(number),
                      timeout=60)
        assert r.status_code == 200, r.text

    upload(0)

    def work(index: int) -> list[tuple]:
        if index < UPLOADERS:
            for n in range(UPLOADS_EACH):
                upload(1 + index * UPLOADS_EACH + n)
            return []
        answers = []
        with httpx.Client(timeout=60) as client:
            for n in range(DOWNLOADS_EACH):
                range_header = RANGES[(index + n) % len(RANGES)]
                r = client.get(url, params=params, headers={**headers, **({"Range": range_header} if range_header else {})})
                answers.append((range_header, r.status_code, r.headers, r.content))
        return answers

    answers = [answer for answers in run_threads(UPLOADERS + DOWNLOADERS, work) for answer in answers]
    assert len(answers) == DOWNLOADERS * DOWNLOADS_EACH
    for range_header, status, response_headers, body in answers:
        assert len(body) == int(response_headers["content-length"]), (status, range_header)
        if range_header is None:
            assert status == 200 and body in versions.values()
        else:
            assert status == 206, (status, body[:200])
            first, last, total = map(int, response_headers["content-range"].removeprefix("bytes ").replace("/", "-")
                                     .split("-"))
            assert body == versions[total][first:last + 1]
            assert (first, last) == _expected(range_header, total)
    log = next(tmp_path.glob("server-*.log")).read_text()
    assert "ERROR" not in log and "Traceback" not in log, log[-3000:]


def _expected(range_header: str, total: int) -> tuple[int, int]:
    first, last = range_header.removeprefix("bytes=").split("-")
    if not first:
        return total - int(last), total - 1
    return int(first), int(last) if last else total - 1
