"""The container image: its size, and how long a container takes from ``podman run`` (or
``docker run``) to the API's GET /health answering 200 through a published port, and to the
speech server's /ready; beside the same from starting ``python -m api.serve`` on this host, from
the checkout, as the baseline (what the container adds to the service's own start).

Each start is a cold one: a new container on a new volume (or a new data directory), both servers,
SQLite, the defaults but for --env; the container is removed and the next started, alternating with the
baseline so that the machine's load weighs on both alike. Needs an image built as the README
says (scripts/wheelhouse, then the Containerfile).

A Markdown table on stdout, progress on stderr.

    scripts/bench_container [--image localhost/voice-agent:latest] [--runs 10] [--env WORKERS=2 ...]
        [--engine podman] [--engine-args "--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"]
"""
from __future__ import annotations

import shlex
import subprocess
import sys
import time
import uuid

from . import options
from .harness import CLEANUP, Server, fetch, free_port, log, median, scratch_dir, service_env

# What podman needs on machines whose sandbox refuses higher limits and its default runtime.
MACHINE_ARGS = "--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"


def main(argv=None) -> None:
    parser = options.parser("bench_container", __doc__)
    parser.add_argument("--image", default="localhost/voice-agent:latest", help="the image to start")
    parser.add_argument("--runs", type=int, default=10, help="cold starts of each (default 10)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of both the container and the host's server (WORKERS=2, say); repeatable")
    parser.add_argument("--engine", default="podman", help="podman or docker (default podman)")
    parser.add_argument("--engine-args", default=MACHINE_ARGS, help=f"options of each run (default {MACHINE_ARGS!r})")
    args = parser.parse_args(argv)
    settings = dict(item.split("=", 1) for item in args.env)
    engine = [args.engine]
    size = int(_run([*engine, "image", "inspect", "--format", "{{.Size}}", args.image]))
    log(f"{args.image}: {size / 1e6:.0f} MB")
    times: dict[str, list[tuple[float, float]]] = {"container": [], "python -m api.serve": []}
    with CLEANUP.guard():
        from stt.models import default_model_path
        model = default_model_path(scratch_dir("bench-container-model-"))
        for i in range(args.runs):
            times["container"].append(_container(engine, shlex.split(args.engine_args), args.image, settings))
            times["python -m api.serve"].append(_on_host(model, settings))
            log(f"run {i + 1}: container {times['container'][-1][0]:.2f} s, "
                f"host {times['python -m api.serve'][-1][0]:.2f} s to /health")
    print(f"image {args.image}: {size / 1e6:.0f} MB; settings: {' '.join(args.env) or 'the defaults'}\n")
    print(f"| start ({args.runs} cold starts each) | /health 200, median s | min | max | /ready 200, median s |")
    print("|---|---:|---:|---:|---:|")
    for what, values in times.items():
        health = [h for h, _ in values]
        print(f"| {what} | {median(health):.2f} | {min(health):.2f} | {max(health):.2f} "
              f"| {median([r for _, r in values]):.2f} |")
    ratio = median([h for h, _ in times["container"]]) / median([h for h, _ in times["python -m api.serve"]])
    print(f"\ncontainer / host, medians to /health: {ratio:.2f}")


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip()


def _until_ready(api: str, stt: str, began: float, alive) -> tuple[float, float]:
    """Seconds from ``began`` to the API's /health 200, and to the speech server's /ready 200."""
    healthy = None
    deadline = began + 120
    while time.monotonic() < deadline:
        alive()
        try:
            if healthy is None and fetch(api + "/health", timeout=2)[0] == 200:
                healthy = time.monotonic() - began
            if healthy is not None and fetch(stt + "/ready", timeout=2)[0] == 200:
                return healthy, time.monotonic() - began
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError("not ready within 120 s")


def _container(engine: list[str], engine_args: list[str], image: str, settings: dict) -> tuple[float, float]:
    name = f"bench-container-{uuid.uuid4().hex[:8]}"
    api_port, stt_port = free_port(), free_port()
    with CLEANUP.scope():
        CLEANUP.push(lambda: subprocess.run([*engine, "volume", "rm", "--force", name], capture_output=True))
        CLEANUP.push(lambda: subprocess.run([*engine, "rm", "--force", name], capture_output=True))
        began = time.monotonic()
        env = [arg for key, value in {"SECRET_KEY": "bench", **settings}.items() for arg in ("-e", f"{key}={value}")]
        _run([*engine, "run", "--detach", "--name", name, *engine_args, *env,
              "-p", f"127.0.0.1:{api_port}:8000", "-p", f"127.0.0.1:{stt_port}:8001", "-v", f"{name}:/data", image])

        def alive() -> None:
            if _run([*engine, "inspect", "--format", "{{.State.Running}}", name]) != "true":
                raise RuntimeError(f"the container stopped:\n{_run([*engine, 'logs', name])[-3000:]}")

        return _until_ready(f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{stt_port}", began, alive)


def _on_host(model, settings: dict) -> tuple[float, float]:
    api_port, stt_port = free_port(), free_port()
    with CLEANUP.scope():
        work = scratch_dir("bench-container-")
        # The model converted beforehand, as the image has it (STT_MODEL_PATH).
        env = service_env(API_PORT=api_port, STT_PORT=stt_port, DATA_DIR=work / "data", SECRET_KEY="bench",
                          STT_MODEL_PATH=model, **settings)
        began = time.monotonic()
        server = Server([sys.executable, "-m", "api.serve"], env, work / "serve.log")
        return _until_ready(f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{stt_port}", began, server.check_alive)
