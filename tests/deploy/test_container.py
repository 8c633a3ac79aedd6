"""The container image and the compose files, built and run for real with podman.

The image is built as the README says (scripts/wheelhouse, then the Containerfile), from a base
made on this machine where no registry is reachable (tests.support.containers). It is run with
published ports on SQLite, then on the PostgreSQL server of the test run with two API workers;
each time an operator bootstraps a workspace with the admin command inside the container, a
client calls the API and transcribes a clip through the published ports, SIGTERM stops the
container gracefully, and a new container on the same volume (and database) finds the data."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import httpx
import pytest
import yaml

from tests.support.containers import RUNTIME, ULIMITS, ensure_base_image, podman, require_podman
from tests.support.servers import ROOT, free_port

pytestmark = pytest.mark.slow

FIXTURES = ROOT / "tests" / "fixtures"
# The goal the image is held to (podman reports sizes in decimal megabytes).
MAX_IMAGE_BYTES = 600_000_000
SHUTDOWN_TIMEOUT_S = 10
# slirp4netns with the host's loopback reachable at this address: the PostgreSQL of the test run
# listens on 127.0.0.1 only, which a container on a bridge network cannot reach.
HOST_LOOPBACK = "10.0.2.2"


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    require_podman()
    ensure_base_image()
    context = tmp_path_factory.mktemp("image")
    for name in ("Containerfile", ".dockerignore"):
        shutil.copy(ROOT / name, context / name)
    wheels = subprocess.run([str(ROOT / "scripts" / "wheelhouse"), str(context / "wheelhouse")],
                            capture_output=True, text=True, timeout=900)
    assert wheels.returncode == 0, wheels.stderr[-3000:]
    tag = f"localhost/voice-agent:test-{uuid.uuid4().hex[:8]}"
    # --pull=never: the base is the one in the store; the Dockerfile format keeps the HEALTHCHECK.
    podman("build", *RUNTIME, *ULIMITS, "--pull=never", "--format", "docker", "-f", "Containerfile", "-t", tag,
           str(context), timeout=1800)
    yield tag
    podman("rmi", "--force", tag, check=False)


class Container:
    """One ``podman run`` of the image, detached, with both ports published on loopback."""

    def __init__(self, image: str, volume: str, env: dict[str, str], network: str | None = None):
        self.name = f"voice-agent-test-{uuid.uuid4().hex[:8]}"
        self.api_port, self.stt_port = free_port(), free_port()
        options = [f"--network={network}"] if network else []
        for key, value in {"SECRET_KEY": "container-test-key", "SHUTDOWN_TIMEOUT_S": str(SHUTDOWN_TIMEOUT_S),
                           "RATE_LIMITS_ENABLED": "false", **env}.items():
            options += ["-e", f"{key}={value}"]
        self.started = time.monotonic()
        podman("run", "--detach", "--name", self.name, *RUNTIME, *ULIMITS, *options,
               "-p", f"127.0.0.1:{self.api_port}:8000", "-p", f"127.0.0.1:{self.stt_port}:8001",
               "-v", f"{volume}:/data", image)
        self.api = f"http://127.0.0.1:{self.api_port}"
        self.stt = f"http://127.0.0.1:{self.stt_port}"

    def wait_healthy(self, seconds: float = 120) -> float:
        """Seconds from ``podman run`` to the API's GET /health answering 200 (and the speech
        server ready) through the published ports."""
        deadline = self.started + seconds
        healthy_after = None
        while time.monotonic() < deadline:
            if podman("inspect", "--format", "{{.State.Running}}", self.name).stdout.strip() != "true":
                raise AssertionError(f"the container stopped:\n{self.logs()}")
            try:
                if healthy_after is None and httpx.get(self.api + "/health", timeout=2).status_code == 200:
                    healthy_after = time.monotonic() - self.started
                if healthy_after is not None and httpx.get(self.stt + "/ready", timeout=2).status_code == 200:
                    return healthy_after
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"not healthy within {seconds} s:\n{self.logs()}")

    def exec(self, *command: str) -> subprocess.CompletedProcess:
        return podman("exec", self.name, *command)

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout[-6000:] + result.stderr[-6000:]

    def stop(self) -> tuple[int, float]:
        """SIGTERM, as ``podman stop`` sends it, with time to spare before podman's SIGKILL; the
        exit code (137 would say it was killed) and the seconds it took."""
        began = time.monotonic()
        podman("stop", "--time", str(SHUTDOWN_TIMEOUT_S + 20), self.name, timeout=120)
        took = time.monotonic() - began
        code = int(podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout.strip())
        return code, took

    def remove(self) -> None:
        podman("rm", "--force", "--time", "0", self.name, check=False)


@pytest.fixture
def volume():
    name = f"voice-agent-test-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", name)
    yield name
    podman("volume", "rm", "--force", name, check=False)


def serve_a_workspace(container: Container) -> dict:
    """The operator's bootstrap inside the container, then a client's calls through the ports."""
    owner = json.loads(container.exec("voice-agent-admin", "bootstrap", "--workspace", "Acme",
                                      "--email", "owner@example.com").stdout)
    headers = {"Authorization": f"Bearer {owner['token']}"}
    workspaces = httpx.get(container.api + "/api/v2/workspaces", headers=headers, timeout=30)
    assert workspaces.status_code == 200, workspaces.text
    assert [w["id"] for w in workspaces.json()["data"]["result"]["workspaces"]] == [owner["workspaceId"]]
    with open(FIXTURES / "jfk.wav", "rb") as clip:
        heard = httpx.post(container.stt + "/v1/audio/transcriptions", headers=headers, timeout=120,
                           files={"file": ("jfk.wav", clip, "audio/wav")}, data={"model": "whisper-1"})
    assert heard.status_code == 200, heard.text
    assert "ask not what your country can do for you" in heard.json()["text"].lower()
    return owner


def still_there(container: Container, owner: dict) -> None:
    headers = {"Authorization": f"Bearer {owner['token']}"}
    workspaces = httpx.get(container.api + "/api/v2/workspaces", headers=headers, timeout=30)
    assert workspaces.status_code == 200, workspaces.text
    assert workspaces.json()["data"]["result"]["workspaces"][0]["name"] == "Acme"


def stopped_gracefully(container: Container) -> None:
    code, took = container.stop()
    logs = container.logs()
    assert code == 0, f"exit code {code} after SIGTERM:\n{logs}"
    # Within the service's own bound (nothing is in flight), not podman's, which kills at +20 s.
    assert took < SHUTDOWN_TIMEOUT_S and "Application shutdown complete" in logs, (took, logs)


def test_the_image_is_small_enough_runs_as_a_user_and_passes_its_health_check(image, volume):
    size = int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())
    print(f"\nimage size: {size / 1e6:.0f} MB")
    assert size <= MAX_IMAGE_BYTES
    container = Container(image, volume, {})
    try:
        print(f"cold start to /health 200: {container.wait_healthy():.2f} s")
        assert container.exec("id", "-u").stdout.strip() != "0"
        # The image's HEALTHCHECK, run as the engine runs it.
        assert podman("healthcheck", "run", container.name, check=False).returncode == 0, container.logs()
        # tini is PID 1, the servers its children.
        assert container.exec("cat", "/proc/1/comm").stdout.strip() == "tini"
    finally:
        container.remove()


def test_on_sqlite_with_published_ports_and_the_data_kept_in_the_volume(image, volume):
    first = Container(image, volume, {})
    try:
        first.wait_healthy()
        owner = serve_a_workspace(first)
        stopped_gracefully(first)
    finally:
        first.remove()
    second = Container(image, volume, {})
    try:
        second.wait_healthy()
        still_there(second, owner)
    finally:
        second.remove()


@pytest.mark.postgres
def test_on_postgresql_with_two_workers(image, volume, scratch_postgres):
    url = urlparse(scratch_postgres())
    if url.hostname in ("127.0.0.1", "localhost"):
        url = url._replace(netloc=url.netloc.replace(url.hostname, HOST_LOOPBACK, 1))
    env = {"DATABASE_URL": urlunparse(url), "WORKERS": "2"}
    network = "slirp4netns:allow_host_loopback=true"
    first = Container(image, volume, env, network)
    try:
        first.wait_healthy()
        workers = [line for line in podman("top", first.name, "args").stdout.splitlines() if "spawn_main" in line]
        assert len(workers) == 2, podman("top", first.name, "args").stdout
        owner = serve_a_workspace(first)
        stopped_gracefully(first)
    finally:
        first.remove()
    second = Container(image, volume, env, network)
    try:
        second.wait_healthy()
        still_there(second, owner)
    finally:
        second.remove()


def compose_config(*files: str, env_file: str | None) -> subprocess.CompletedProcess:
    """``podman-compose config`` of the project's compose files, in a directory of their own with
    the .env given (the secret key; the PostgreSQL password)."""
    with tempfile.TemporaryDirectory() as directory:
        where = Path(directory)
        for name in files:
            shutil.copy(ROOT / name, where / name)
        if env_file is not None:
            (where / ".env").write_text(env_file)
        args = [arg for name in files for arg in ("-f", name)]
        return subprocess.run([sys.executable, "-m", "podman_compose", *args, "config"], cwd=where,
                              capture_output=True, text=True, timeout=60)


def test_the_compose_files_configure_sqlite_by_default_and_postgresql_with_two_workers():
    require_podman()
    plain = compose_config("compose.yaml", env_file="SECRET_KEY=k\n")
    assert plain.returncode == 0, plain.stderr
    service = yaml.safe_load(plain.stdout)["services"]["voice-agent"]
    assert service["build"]["dockerfile"] == "Containerfile" and service["env_file"] == [".env"]
    assert sorted(service["ports"]) == ["127.0.0.1:8000:8000", "127.0.0.1:8001:8001"]
    assert service["volumes"] == ["data:/data"] and "DATABASE_URL" not in service.get("environment", {})

    both = compose_config("compose.yaml", "compose.postgres.yaml", env_file="SECRET_KEY=k\nPOSTGRES_PASSWORD=pw\n")
    assert both.returncode == 0, both.stderr
    config = yaml.safe_load(both.stdout)["services"]
    assert config["voice-agent"]["environment"]["DATABASE_URL"] == "postgresql://voice:pw@postgres:5432/voice"
    assert str(config["voice-agent"]["environment"]["WORKERS"]) == "2"
    assert config["voice-agent"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert config["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pw"

    # Without the password the PostgreSQL variant refuses to start, naming what to set.
    missing = compose_config("compose.yaml", "compose.postgres.yaml", env_file="SECRET_KEY=k\n")
    assert missing.returncode != 0 and "POSTGRES_PASSWORD" in missing.stdout + missing.stderr
