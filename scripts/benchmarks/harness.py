"""What the benchmarks (and scripts/stream_audio) share: the switch into the project's virtualenv,
servers in process groups of their own, scratch data undone whatever ends a run, the load
generators, percentiles, and the speech fixture.

Standard library only at import time, because it is imported before the switch into the virtualenv
(a script is started as ``scripts/NAME`` or ``python scripts/NAME``, so scripts/ is ``sys.path[0]``
and this package imports as ``benchmarks``); psycopg2 is imported where a scratch PostgreSQL database
is made.
"""
from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import math
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"  # the commands, scripts/<name> for the module <name> of this package
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
# Set in the environment of the switched process: a virtualenv still missing a module fails with the
# ImportError instead of switching again, and again.
REEXEC_MARKER = "BENCHLIB_REEXEC"

FIXTURE = ROOT / "tests" / "fixtures" / "jfk.wav"
JFK = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
SAMPLE_RATE = 16_000
# Large enough that the rate limiter does its per-request bookkeeping but never answers 429.
UNLIMITED = "1000000000"


def use_venv(*modules: str) -> None:
    """Call first thing. When any of ``modules`` cannot be imported (a system interpreter started
    the script), run the script again, once, under the checkout's .venv; then put the checkout on
    sys.path, so the project's packages import whichever directory the script was started from."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing and VENV_PYTHON.exists() and not os.environ.get(REEXEC_MARKER):
        # Brought up to date as the entry scripts do (scripts/_venv.sh installs again only when
        # setup.cfg changed): a .venv made before a dependency was added lacks it.
        subprocess.run(["bash", "-c", ". scripts/_venv.sh"], cwd=ROOT, check=True, stdout=sys.stderr)
        os.environ[REEXEC_MARKER] = "1"
        os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), *sys.orig_argv[1:]])
    if missing:
        raise ModuleNotFoundError(f"{', '.join(missing)} not importable by {sys.executable}; "
                                  f"`scripts/serve` once creates {VENV_PYTHON.parent.parent} with everything")
    if str(ROOT) not in sys.path:
        sys.path.insert(1, str(ROOT))


def log(message: str) -> None:
    """Progress goes to stderr, so that stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


def csv_ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def csv_words(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# --- numbers --------------------------------------------------------------------------------------

def percentile(values, p: float) -> float:
    """Nearest rank, p from 0 to 100: the smallest value with at least p % of the values at or
    below it, so always a value that occurred (no interpolation). nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


# --- undoing whatever was started or created --------------------------------------------------------

class Cleanup:
    """Everything started or created, undone in reverse order: at the end of a ``scope()``, when
    popped, or at exit, whatever ends the run."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], object]] = []

    def push(self, undo: Callable[[], object]):
        self._undo.append(undo)
        return undo

    def pop(self, undo: Callable[[], object]) -> None:
        """Undo one step now (if it has not run yet)."""
        if undo in self._undo:
            self._undo.remove(undo)
            undo()

    def run_all(self) -> None:
        while self._undo:
            self._run(self._undo.pop())

    @contextlib.contextmanager
    def scope(self):
        """Undo, at the end of the block, what was pushed inside it: one server's data and process."""
        mark = self.push(lambda: None)
        try:
            yield
        finally:
            while self._undo:
                undo = self._undo.pop()
                if undo is mark:
                    break
                self._run(undo)

    @contextlib.contextmanager
    def guard(self):
        """Around a whole run: Ctrl-C, SIGTERM or SIGHUP stop the servers, remove the scratch data and
        exit with status 130; an exception or a normal end undoes everything as well."""
        def interrupt(signum, frame):
            # Sent on as SIGINT: outside an event loop that raises KeyboardInterrupt here; inside
            # asyncio.run it first cancels the running load, which then ends cleanly.
            os.kill(os.getpid(), signal.SIGINT)

        # Explicit, because a shell starting this in the background would have SIGINT ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, interrupt)
        signal.signal(signal.SIGHUP, interrupt)
        atexit.register(self.run_all)
        try:
            yield self
        except KeyboardInterrupt:
            self.run_all()
            log("interrupted: servers stopped, scratch data removed")
            raise SystemExit(130) from None
        finally:
            self.run_all()

    @staticmethod
    def _run(undo) -> None:
        try:
            undo()
        except Exception as exc:  # keep undoing the rest
            log(f"cleanup: {exc!r}")


CLEANUP = Cleanup()


def scratch_dir(prefix: str, parent: Path | None = None) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    CLEANUP.push(lambda: shutil.rmtree(path, ignore_errors=True))
    return path


def scratch_postgres(admin_url: str, name: str) -> str:
    """A new, empty database ``name`` on the server of ``admin_url`` (an existing database to
    connect to), dropped at cleanup; its URL."""
    import psycopg2

    def execute(statement: str) -> None:
        conn = psycopg2.connect(admin_url)
        conn.autocommit = True  # CREATE and DROP DATABASE refuse to run inside a transaction
        try:
            with conn.cursor() as cur:
                cur.execute(statement)
        finally:
            conn.close()

    def drop() -> None:
        execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    drop()  # the leftover of an interrupted run that had the same name
    execute(f'CREATE DATABASE "{name}"')
    CLEANUP.push(drop)
    return urlunparse(urlparse(admin_url)._replace(path="/" + name, query=""))


# --- servers --------------------------------------------------------------------------------------

def settle_postgres(url: str) -> None:
    """VACUUM ANALYZE: the statistics and visibility map a table has once autovacuum has seen it."""
    import psycopg2

    conn = psycopg2.connect(url)
    conn.autocommit = True  # VACUUM refuses to run inside a transaction
    try:
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE")
    finally:
        conn.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A server process with its output in ``log_path``, stopped at cleanup."""

    def __init__(self, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")
        # A session of its own: a supervisor and its workers share one process group to stop, and a
        # Ctrl-C in the terminal reaches only the script, which then stops them in order.
        self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        CLEANUP.push(self.stop)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(timeout=15)
        self._signal(signal.SIGKILL)  # workers left behind by a supervisor that died first
        self._log.close()

    def _signal(self, sig) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def tail(self, lines: int = 30, skip: str | None = None) -> str:
        """The last ``lines`` of the log, without those containing ``skip`` (an access log's, say)."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join([line for line in text if not skip or skip not in line][-lines:])

    def group(self) -> list[int]:
        """The pids of its process group: a supervisor and its workers."""
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[2]) == self.proc.pid:  # pgrp
                    pids.append(int(entry.name))
        return pids

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.tail()}")


# No proxy from the environment for requests to our own servers on 127.0.0.1.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None, json_body=None,
          timeout: float = 10.0) -> tuple[int, bytes]:
    """(status, body) of one request; an error status is an answer here, not an exception."""
    data = None if json_body is None else json.dumps(json_body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _LOCAL.open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_ready(server: Server, url: str, headers: dict[str, str] | None = None, timeout: float = 60.0) -> None:
    """Until ``url`` answers 200; fails with the log's tail when the server exits or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server.check_alive()
        try:
            if fetch(url, headers=headers, timeout=2)[0] == 200:
                return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server not ready after {timeout:.0f}s:\n{server.tail()}")


def run_child(command: list[str], env: dict[str, str], timeout: float, what: str) -> str:
    """A short-lived child's stdout; subprocess.run kills it on timeout or interrupt."""
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


def service_env(**settings) -> dict[str, str]:
    """This environment for one of the project's servers: on 127.0.0.1, SQLite unless DATABASE_URL
    is given, the bundled model, rate limiting on with limits never reached, unbuffered output;
    then ``settings`` (None leaves a variable unset)."""
    env = dict(os.environ)
    for name in ("DATABASE_URL", "STT_MODEL_PATH"):
        env.pop(name, None)
    env.update(HOST="127.0.0.1", RATE_LIMITS_ENABLED="true", DEFAULT_REQUESTS_PER_MINUTE=UNLIMITED,
               DEFAULT_REQUESTS_PER_DAY=UNLIMITED, PYTHONUNBUFFERED="1")
    env.update({name: str(value) for name, value in settings.items() if value is not None})
    return env


def bootstrap(env: dict[str, str], workspace: str = "Bench", email: str = "bench@example.com") -> dict:
    """``python -m api.admin bootstrap`` on the database of ``env``: {workspaceId, userId, token}."""
    out = run_child([sys.executable, "-m", "api.admin", "bootstrap", "--workspace", workspace, "--email", email],
                    env, 120, "bootstrap")
    return json.loads(out)


def access_token(env: dict[str, str], email: str = "bench@example.com") -> str:
    """Another access token of the user ``email`` (``python -m api.admin token``): a credential of its own."""
    return json.loads(run_child([sys.executable, "-m", "api.admin", "token", "--email", email], env, 120,
                                "token"))["token"]


class SttServer(NamedTuple):
    server: Server
    port: int
    token: str  # the bootstrapped owner's
    env: dict[str, str]  # the server's environment, for admin commands on its database


def start_stt_server(work: Path, model: Path, **settings) -> SttServer:
    """``python -m stt.server`` on a fresh DATA_DIR in ``work`` holding ``model``, with a workspace
    and token bootstrapped there, once it answers /ready. ``settings``: its environment (STT_*)."""
    data_dir = scratch_dir("server_", work)
    # The model where the server would have converted it itself, so no start pays for a conversion.
    (data_dir / "models").mkdir()
    target = data_dir / "models" / model.name
    try:
        os.link(model, target)
    except OSError:
        shutil.copyfile(model, target)
    port = free_port()
    env = service_env(STT_PORT=port, DATA_DIR=data_dir, **settings)
    token = bootstrap(env)["token"]
    server = Server([sys.executable, "-m", "stt.server"], env, data_dir / "server.log")
    wait_ready(server, f"http://127.0.0.1:{port}/ready", timeout=120)
    return SttServer(server, port, token, env)


# --- load generators ------------------------------------------------------------------------------

def find_tool(path: str | None, binary: str, package: str, option: str, elsewhere: str) -> str:
    """``path``, else ``binary`` on PATH; when missing and running as root on Debian, Debian's
    ``package`` is installed first, else the run stops saying how to get it."""
    if path:
        return path
    found = shutil.which(binary)
    if not found and os.geteuid() == 0 and shutil.which("apt-get"):
        log(f"{binary} not found: apt-get install -y {package}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = ["apt-get", "install", "-y", "-q", package]
        quiet = {"env": env, "stdout": sys.stderr, "stderr": sys.stderr}
        if subprocess.run(install, **quiet).returncode != 0:
            log("apt-get install failed: updating the package lists once, then again")
            subprocess.run(["apt-get", "update", "-q"], **quiet)
            subprocess.run(install, **quiet)
        found = shutil.which(binary)
    if not found:
        raise SystemExit(f"{Path(sys.argv[0]).name} needs the HTTP load generator {binary} on PATH (or {option} "
                         f"PATH): `sudo apt-get install {package}` on Debian or Ubuntu, {elsewhere}")
    return found



def find_wrk(path: str | None) -> str:
    """wrk, for the benchmarks whose every request needs a body of its own (wrk's Lua request() makes
    it), where bench_api's h2load repeats one."""
    return find_tool(path, "wrk", "wrk", "--wrk", "`brew install wrk` on macOS, or build it from https://github.com/wg/wrk")

@dataclass
class Result:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: dict[str, int]  # only the kinds that occurred
    generator_cores: float  # the generator's CPU time over the run's wall time

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class _Generator:
    binary: str
    max_threads: int
    timeout: int  # seconds

    def threads(self, concurrency: int) -> int:
        return min(concurrency, self.max_threads)


# wrk's done() hook, which a Wrk script ends with: its counts and its histogram's percentiles (1 µs
# resolution, every request) as the one JSON line Wrk.run reads. errors.status counts answers above 399.
WRK_DONE_LUA = r'''
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH_RESULT {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, ' ..
    '"non-2xx": %d, "connect": %d, "read": %d, "write": %d, "timeout": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
'''


@dataclass
class Wrk(_Generator):
    """wrk, whose Lua ``script`` ends with WRK_DONE_LUA. Each run opens its connections anew, and
    their first requests are measured."""
    script: Path

    def run(self, url: str, concurrency: int, seconds: int, headers: dict[str, str], body=None) -> Result:
        command = [self.binary, "-t", str(self.threads(concurrency)), "-c", str(concurrency), "-d", f"{seconds}s",
                   "--timeout", f"{self.timeout}s", "-s", str(self.script)]
        for name, value in headers.items():
            command += ["-H", f"{name}: {value}"]
        env = {k: v for k, v in os.environ.items() if k != "BENCH_BODY"}
        if body is not None:
            env["BENCH_BODY"] = json.dumps(body)
        before = _children_cpu()
        done = subprocess.run(command + [url], env=env, capture_output=True, text=True,
                              timeout=seconds + self.timeout + 30)
        cpu = _children_cpu() - before
        line = next((line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT ")), None)
        if line is None:
            raise RuntimeError(f"wrk gave no result (exit {done.returncode}):\n{done.stdout}{done.stderr}")
        out = json.loads(line.removeprefix("BENCH_RESULT "))
        errors = {kind: out[kind] for kind in ("non-2xx", "connect", "read", "write", "timeout") if out[kind]}
        return Result(out["requests"], out["duration_us"] / 1e6, out["p50_us"] / 1000, out["p99_us"] / 1000,
                      errors, cpu / max(out["duration_us"] / 1e6, 1e-9))


@dataclass
class H2load(_Generator):
    """h2load (nghttp2) speaking HTTP/1.1: ``warmup`` seconds of load, then ``seconds`` measured on
    the same connections, each request's status and latency (start of send to end of response, 1 µs)
    from its per-request log. A new connection's first request waits for the server to accept it,
    which a busy event loop does one waiting connection per turn (libuv since 1.45, so uvloop): with
    16 fresh connections, that queue, not request handling, is the slowest percent of a short run.
    Warming the connections that are then measured keeps the figures those of requests, as a
    client's keep-alive pool sees them."""
    scratch: Path  # where its log and a request body are written

    def run(self, url: str, concurrency: int, seconds: int, headers: dict[str, str], body=None, *,
            warmup: int = 0) -> Result:
        log_file = self.scratch / "requests.tsv"
        log_file.unlink(missing_ok=True)  # h2load appends
        command = [self.binary, "--h1", "-t", str(self.threads(concurrency)), "-c", str(concurrency),
                   "-D", str(seconds), f"--connection-inactivity-timeout={self.timeout}", f"--log-file={log_file}"]
        if warmup:
            command.append(f"--warm-up-time={warmup}")
        for name, value in headers.items():
            command += ["-H", f"{name}: {value}"]
        if body is not None:
            data = self.scratch / "body.json"
            data.write_text(json.dumps(body))
            command += ["-d", str(data), "-H", "content-type: application/json"]
        before = _children_cpu()
        done = subprocess.run(command + [url], capture_output=True, text=True,
                              timeout=warmup + seconds + self.timeout + 30)
        cpu = _children_cpu() - before
        rows = [line.split("\t") for line in log_file.read_text().splitlines()] if log_file.exists() else []
        latencies = [int(row[2]) / 1000 for row in rows]
        # Status 0: a request sent in the warm-up and answered in the measured time, whose status
        # h2load does not keep (it counts it as succeeded); a broken answer is in "errored".
        errors = {"non-2xx": sum(1 for row in rows if row[1] != "0" and not row[1].startswith("2"))}
        summary = next((line for line in done.stdout.splitlines() if line.startswith("requests: ")), "")
        for kind in ("errored", "timeout"):
            found = re.search(rf"(\d+) {kind}", summary)
            errors[kind] = int(found.group(1)) if found else 0
        if done.returncode != 0 or not rows:
            errors["no result"] = 1
            log(f"h2load answered nothing (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return Result(len(rows), seconds, percentile(latencies, 50), percentile(latencies, 99),
                      {kind: n for kind, n in errors.items() if n}, cpu / (warmup + seconds))


def connections_by_process(pids, port: int) -> list[int]:
    """How many established TCP connections to local ``port`` each of ``pids`` holds, in ascending
    order (Linux /proc; empty elsewhere). Workers that share a listening socket keep each connection
    where it was accepted unless they close it (the API's do, to keep them spread), so with a few
    kept-alive clients this split, not the code, can set a run's rate and tail."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # ESTABLISHED
                established.add(fields[9])  # inode
    counts = []
    for pid in pids:
        held = 0
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    held += link.startswith("socket:[") and link[8:-1] in established
        except OSError:
            continue
        if held:
            counts.append(held)
    return sorted(counts)


def balancing_closes(base_url: str) -> int:
    """How many connections the management API's workers have closed to keep them spread
    (api/connection_balance.py), from its /metrics: less this scrape's own answer if it was one (a
    worker that has not yet seen the last clients' connections end may close it too)."""
    with _LOCAL.open(base_url + "/metrics", timeout=10) as response:
        own = response.headers.get("connection", "").lower() == "close"
        body = response.read().decode()
    for line in body.splitlines():
        if line.startswith("api_connections_closed_for_balance_total "):
            return int(float(line.split()[1])) - own
    return 0


# --- machine load ---------------------------------------------------------------------------------

class CpuMeter:
    """Cores busy during a phase: those of the processes ``pids``, and everyone else's (all busy time
    in /proc/stat minus this process, its reaped children and ``pids``). The cores are shared, so
    the second says how much of a phase's figures may come from outside."""

    def __init__(self, pids=()) -> None:
        self.pids = list(pids)
        self.start = self._sample()

    def _sample(self) -> tuple[float, float, float, float]:
        tick = os.sysconf("SC_CLK_TCK")
        busy = watched = 0.0
        try:
            with open("/proc/stat") as fh:
                values = [int(v) for v in fh.readline().split()[1:]]
            # user nice system idle iowait irq softirq steal: everything but idle and iowait
            busy = (sum(values[:8]) - values[3] - values[4]) / tick
        except (OSError, ValueError, IndexError):
            pass
        for pid in self.pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                watched += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            except (OSError, ValueError, IndexError):
                pass
        t = os.times()
        return time.monotonic(), busy, watched, t.user + t.system + t.children_user + t.children_system

    def cores(self) -> tuple[float, float]:
        """(cores of ``pids``, cores of every other process) on average since the meter started."""
        now = self._sample()
        elapsed = max(now[0] - self.start[0], 1e-9)
        watched = now[2] - self.start[2]
        others = (now[1] - self.start[1]) - watched - (now[3] - self.start[3])
        return watched / elapsed, max(0.0, others / elapsed)


# --- the speech fixture ---------------------------------------------------------------------------

def proc_status_kb(pid: int | str, key: str) -> int | None:
    """A kB figure of /proc/PID/status (VmRSS, VmHWM...), or None once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def fixture_pcm() -> bytes:
    """tests/fixtures/jfk.wav's samples: 16-bit little-endian mono at SAMPLE_RATE."""
    with wave.open(str(FIXTURE)) as w:
        if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, SAMPLE_RATE):
            raise RuntimeError(f"{FIXTURE} is not 16-bit mono {SAMPLE_RATE} Hz")
        return w.readframes(w.getnframes())
