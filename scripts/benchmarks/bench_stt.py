"""Speed and memory of the speech-to-text server, next to its bare engine and to faster-whisper.

One run measures, on the bundled tiny.en weights converted to --weights (q8_0, the server's default), or
with --model svc-stt-multilingual on the bundled base weights plus a German clip (eSpeak NG,
tests/fixtures/multilingual) whose detected language each path reports:

1. the real-time factor (processing seconds / audio seconds, median of --reps) of POST
   /v1/audio/transcriptions end to end (client-side wall time, one request at a time) and of the bare
   ``Transcriber.transcribe(samples)`` call in this process with the same thread count, for the 11 s
   fixture and a --long-seconds clip made of that fixture's speech with short pauses; their ratio is
   the server's overhead. The two paths alternate request by request while no other request runs, so
   they see the same machine state;
2. faster-whisper (CTranslate2, int8, greedy) on the same weights and clips, in a child process, as the
   peer figure. Optional: ``.venv/bin/pip install faster-whisper`` (not a project requirement); without
   it that row says so;
3. peak RSS (VmHWM) of each server process, of this process (bare engine + client) and of the
   faster-whisper child;
4. requests/s and latency with --concurrency clients on the 11 s clip for --duration seconds, for each
   --load configuration of STT_WORKERS x STT_THREADS.

Each server gets a fresh DATA_DIR holding a model converted once at the start. Everything runs on
127.0.0.1; the client shares the CPU with the server. Prints Markdown tables and the command line on
stdout; progress goes to stderr.

    .venv/bin/python scripts/bench_stt [--reps 5] [--threads 1] [--duration 30] [--concurrency 4]
                                       [--load 1x2,2x1] [--queue 8] [--long-seconds 60] [--no-peer]
                                       [--model svc-stt] [--weights q8_0]
                                       [--quiet-wait S]

Whisper.cpp slows down many times over when another process takes one of the cores its threads
need, so on a shared machine --quiet-wait holds each phase until the rest of the machine is idle;
the output says how busy it was during each phase.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import platform
import shlex
import shutil
import sys
import time
import wave
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from stt.scoring import words

from . import harness, options
from .harness import (
    CLEANUP,
    FIXTURE,
    JFK,
    SCRIPTS,
    UNLIMITED,
    CpuMeter,
    log,
    median,
    percentile,
    proc_status_kb,
    run_child,
    scratch_dir,
)

try:
    import uvloop
except ImportError:
    uvloop = None

# Model id → the bundled whisper model it is made from (stt.models), for the peer.
BUNDLED = {"svc-stt": "tiny.en", "svc-stt-multilingual": "base"}
# Speech in other languages (eSpeak NG), with their transcripts: the multilingual model's detection.
MULTILINGUAL = FIXTURE.parent / "multilingual"
PEER_INSTALL = ".venv/bin/pip install faster-whisper"


def csv_configs(text: str) -> list[tuple[int, int]]:
    configs = []
    for part in text.split(","):
        if part.strip():
            workers, _, threads = part.strip().lower().partition("x")
            configs.append((int(workers), int(threads)))
    return configs


def parse_args(argv=None):
    parser = options.parser("bench_stt", __doc__,
                            options.engine("whisper.cpp threads for the sequential runs: STT_THREADS, the engine's "
                                           "n_threads and faster-whisper's cpu_threads"),
                            options.log_level("the server"))
    parser.add_argument("--reps", type=int, default=5, help="measured repetitions per clip and path (default 5)")
    parser.add_argument("--long-seconds", type=float, default=60.0,
                        help="length of the long clip built from the fixture (default 60)")
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds per load cell (default 30)")
    parser.add_argument("--load-warmup", type=float, default=3.0,
                        help="unrecorded seconds at the start of each load cell (default 3)")
    parser.add_argument("--concurrency", type=int, default=4, help="concurrent clients in the load cells (default 4)")
    parser.add_argument("--load", type=csv_configs, default=[(1, 2), (2, 1)],
                        help="STT_WORKERSxSTT_THREADS per load cell, comma-separated (default 1x2,2x1)")
    parser.add_argument("--queue", type=int, default=8,
                        help="STT_QUEUE; with workers + queue >= concurrency no request gets 503 (default 8)")
    parser.add_argument("--quiet-wait", type=float, default=0.0,
                        help="before each phase, wait up to this many seconds for the rest of the machine to keep "
                             "at most --quiet-cores busy (default 0: start at once)")
    parser.add_argument("--quiet-cores", type=float, default=0.2,
                        help="what counts as quiet for --quiet-wait, in cores busy outside the benchmark (default 0.2)")
    parser.add_argument("--no-peer", action="store_true", help="skip faster-whisper")
    parser.add_argument("--model", choices=sorted(BUNDLED), default="svc-stt",
                        help="the model measured (default svc-stt, tiny.en); svc-stt-multilingual (base, from the "
                             "multilingual extra) adds a German clip and reports the language each path detects")
    parser.add_argument("--weights", default="q8_0",
                        help="STT_WEIGHTS, the converted model's matrices: q8_0 (default, the server's), f16, ...")
    parser.add_argument("--timeout", type=float, default=300.0, help="per-request timeout in seconds (default 300)")
    parser.add_argument("--peer-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer_child:
        return args
    if args.reps < 1 or args.threads < 1 or args.concurrency < 1 or args.queue < 0 or args.duration <= 0:
        parser.error("--reps, --threads, --concurrency and --duration need positive values, --queue a non-negative one")
    if any(w < 1 or t < 1 for w, t in args.load):
        parser.error("--load needs WORKERSxTHREADS with positive numbers, e.g. 1x2,2x1")
    if args.long_seconds < 12:
        parser.error("--long-seconds must be at least 12 (the fixture is 11 s)")
    return args


def wait_quiet(args, pids: list[int], phase: str) -> None:
    """Whisper.cpp's threads meet at a barrier many times per pass, so one of them losing its core to
    another process stalls the whole pass: on a shared machine a busy neighbour can multiply the times."""
    if args.quiet_wait <= 0:
        return
    started = time.monotonic()
    while True:
        meter = CpuMeter(pids)
        time.sleep(2)
        busy = meter.cores()[1]
        waited = time.monotonic() - started
        if busy <= args.quiet_cores:
            if waited > 3:
                log(f"  quiet after {waited:.0f} s")
            return
        if waited >= args.quiet_wait:
            log(f"  {busy:.2f} cores still busy elsewhere after {waited:.0f} s; starting the {phase} anyway")
            return
        if waited < 3:
            log(f"  waiting up to {args.quiet_wait:g} s for a quieter machine before the {phase}: "
                f"{busy:.2f} cores busy elsewhere")


@dataclass
class SttServer:
    server: harness.Server
    base_url: str
    headers: dict[str, str]
    workers: int
    threads: int
    model: str


def start_server(args, work: Path, model: Path, workers: int, threads: int) -> SttServer:
    started = harness.start_stt_server(work, model, STT_WORKERS=workers, STT_THREADS=threads, STT_WEIGHTS=args.weights,
                                        STT_QUEUE=args.queue, LOG_LEVEL=args.log_level)
    return SttServer(started.server, f"http://127.0.0.1:{started.port}",
                     {"Authorization": f"Bearer {started.token}"}, workers, threads, args.model)


# --- clips ----------------------------------------------------------------------------------------

@dataclass
class Clip:
    label: str
    path: Path
    data: bytes
    samples: np.ndarray
    seconds: float
    expected: list[str]  # the words a correct transcript has
    language: str = "english"


def build_clips(work: Path, long_seconds: float, multilingual: bool = False) -> list[Clip]:
    from stt.audio import SAMPLE_RATE, decode

    speech = np.frombuffer(harness.fixture_pcm(), dtype="<i2")
    # As many copies as fit with pauses of at least half a second, the pauses stretched to fill the length exactly.
    total = int(round(long_seconds * SAMPLE_RATE))
    copies = max(1, int((total + SAMPLE_RATE // 2) // (speech.size + SAMPLE_RATE // 2)))
    gaps = max(copies - 1, 1)
    pause, extra = divmod(total - copies * speech.size, gaps)
    parts = []
    for i in range(copies):
        parts.append(speech)
        if i < copies - 1 or copies == 1:
            parts.append(np.zeros(pause + (1 if i < extra else 0), dtype="<i2"))
    long_path = work / f"jfk_x{copies}_{long_seconds:g}s.wav"
    with wave.open(str(long_path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(np.concatenate(parts).astype("<i2").tobytes())
    log(f"long clip: {copies} copies of the fixture, {pause / SAMPLE_RATE:.2f} s pauses, {long_path.name}")

    clips = []
    for path, expected in ((FIXTURE, words(JFK)), (long_path, words(JFK) * copies)):
        samples = decode(path)
        seconds = samples.size / SAMPLE_RATE
        clips.append(Clip(f"{seconds:.0f} s", path, path.read_bytes(), samples, seconds, expected))
    if multilingual:
        for entry in json.loads((MULTILINGUAL / "transcripts.json").read_text())[:1]:
            path = MULTILINGUAL / entry["file"]
            samples = decode(path)
            clips.append(Clip(f"{entry['language']} {samples.size / SAMPLE_RATE:.0f} s", path, path.read_bytes(),
                              samples, samples.size / SAMPLE_RATE, words(entry["text"]), entry["language"]))
    return clips


def convert_model(work: Path, weights: str, model_id: str) -> Path:
    """The ggml file, converted once in a child, so this process's peak RSS holds only the engine and the client."""
    code = ("import sys\nfrom stt.models import available_models, prepare\n"
            f"print(prepare(available_models(sys.argv[1], weights={weights!r})[{model_id!r}]))")
    out = run_child([sys.executable, "-c", code, str(work / "convert")], dict(os.environ), 300, "model conversion")
    return Path(out.strip().splitlines()[-1])


# --- sequential: endpoint and bare engine -----------------------------------------------------------

@dataclass
class Sequential:
    clip: Clip
    endpoint: list[float] = field(default_factory=list)  # client wall seconds per request
    server_inference: list[float] = field(default_factory=list)  # inference_time_ms the server reports, in s
    engine: list[float] = field(default_factory=list)  # wall seconds of Transcriber.transcribe(samples)
    decode: list[float] = field(default_factory=list)  # seconds to decode the uploaded bytes, in this process
    texts: dict[str, str] = field(default_factory=dict)
    languages: dict[str, str] = field(default_factory=dict)  # path → the language it detected


def post_clip(client: httpx.Client, clip: Clip, model: str) -> tuple[float, dict]:
    files = {"file": (clip.path.name, clip.data, "audio/wav")}
    fields = {"model": model, "response_format": "verbose_json"}
    begin = time.perf_counter()
    response = client.post("/v1/audio/transcriptions", files=files, data=fields)
    elapsed = time.perf_counter() - begin
    if response.status_code != 200:
        raise RuntimeError(f"transcription answered {response.status_code}: {response.text[:500]}")
    return elapsed, response.json()


def run_sequential(args, stt: SttServer, transcriber, clips: list[Clip]) -> list[Sequential]:
    from stt.audio import decode

    results = [Sequential(clip) for clip in clips]
    with httpx.Client(base_url=stt.base_url, headers=stt.headers, timeout=args.timeout) as client:
        for result in results:  # unrecorded: first-call allocations on both sides, the connection
            post_clip(client, result.clip, stt.model)
            transcriber.transcribe(result.clip.samples)
        for rep in range(args.reps):
            for result in results:
                clip = result.clip
                # Alternating which path goes first, so neither always follows the other's cache state.
                order = ("engine", "endpoint") if rep % 2 == 0 else ("endpoint", "engine")
                for path in order:
                    if path == "engine":
                        begin = time.perf_counter()
                        transcript = transcriber.transcribe(clip.samples)
                        result.engine.append(time.perf_counter() - begin)
                        result.texts["engine"] = transcript.text
                        result.languages["engine"] = transcript.language
                    else:
                        elapsed, body = post_clip(client, clip, stt.model)
                        result.endpoint.append(elapsed)
                        result.server_inference.append(body["inference_time_ms"] / 1000)
                        result.texts["endpoint"] = body["text"]
                        result.languages["endpoint"] = body.get("language", "")
                begin = time.perf_counter()
                decode(clip.data)
                result.decode.append(time.perf_counter() - begin)
                log(f"  rep {rep + 1}/{args.reps} {clip.label:>5}: endpoint {result.endpoint[-1]:6.3f} s "
                    f"(server inference {result.server_inference[-1]:6.3f} s), engine {result.engine[-1]:6.3f} s")
    return results


# --- peer: faster-whisper in a child --------------------------------------------------------------

def peer_child(spec_json: str) -> int:
    """Runs in the child: faster-whisper on the clips, one JSON line with the timings on stdout."""
    spec = json.loads(spec_json)
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local directory is given; never reach for the hub
    from faster_whisper import WhisperModel

    from stt.audio import decode

    model_dir = Path(spec["model_dir"])
    if not (model_dir / "model.bin").is_file():
        raise SystemExit(f"no CTranslate2 model.bin in {model_dir}")
    model = WhisperModel(str(model_dir), device="cpu", compute_type="int8", cpu_threads=spec["threads"],
                         num_workers=1, local_files_only=True)

    def run(samples, **fallback):
        begin = time.perf_counter()
        # Greedy, without conditioning on the previous window, as the server decodes with whisper.cpp.
        segments, info = model.transcribe(samples, beam_size=1, language=spec["language"],
                                          condition_on_previous_text=False, vad_filter=False, **fallback)
        text = " ".join(segment.text.strip() for segment in segments)  # decoding happens while iterating
        languages.append(info.language)
        return time.perf_counter() - begin, text

    out, languages = [], []
    for path in spec["clips"]:
        samples = decode(path)
        run(samples, temperature=0.0)
        times, text = [], ""
        for _ in range(spec["reps"]):
            elapsed, text = run(samples, temperature=0.0)
            times.append(elapsed)
        out.append({"path": path, "times": times, "text": text, "language": languages[-1]})
    # Once, unrecorded in the medians: the library's default temperature fallback on the long clip, whose
    # repeated sentence its compression-ratio check may take for a decoding loop.
    fallback = dict(zip(("seconds", "text"), run(decode(spec["clips"][1]))))
    import ctranslate2
    import faster_whisper
    print(json.dumps({"clips": out, "fallback": fallback, "peak_rss_kb": proc_status_kb("self", "VmHWM"),
                      "versions": f"faster-whisper {faster_whisper.__version__}, ctranslate2 {ctranslate2.__version__}"}))
    return 0


@dataclass
class Peer:
    times: dict[str, list[float]] = field(default_factory=dict)  # clip label -> seconds
    texts: dict[str, str] = field(default_factory=dict)
    languages: dict[str, str] = field(default_factory=dict)  # clip label -> the language it detected
    fallback: dict = field(default_factory=dict)  # one run on the long clip with the default fallback
    peak_rss_kb: int | None = None
    versions: str = ""
    skipped: str | None = None


def joined_model_dir(sources: tuple[Path, ...], work: Path) -> Path:
    """A CTranslate2 directory faster-whisper can load: the bundled one, or for a model shipped in parts
    (model.bin.part1, .part2 in several packages) one made in the scratch directory with the parts joined."""
    if len(sources) == 1 and (sources[0] / "model.bin").is_file():
        return sources[0]
    from stt import ggml_convert

    target = work / "peer_model"
    target.mkdir(exist_ok=True)
    parts, _ = ggml_convert.model_files(sources)
    with open(target / "model.bin", "wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    for source in sources:
        for extra in source.iterdir():
            if not extra.name.startswith("model.bin"):
                shutil.copyfile(extra, target / extra.name)
    return target


def run_peer(args, clips: list[Clip], work: Path) -> Peer:
    if args.no_peer:
        return Peer(skipped="skipped (--no-peer)")
    if importlib.util.find_spec("faster_whisper") is None:
        return Peer(skipped=f"skipped: faster-whisper is not installed (`{PEER_INSTALL}`; not a project requirement)")
    from stt import ggml_convert

    name = BUNDLED[args.model]
    sources = ggml_convert.bundled_models().get(name)
    if not sources:
        return Peer(skipped=f"skipped: the bundled {name} CTranslate2 directory was not found")
    spec = {"model_dir": str(joined_model_dir(sources, work)), "threads": args.threads, "reps": args.reps,
            "clips": [str(clip.path) for clip in clips], "language": "en" if name.endswith(".en") else None}
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    budget = 120 + sum(clip.seconds for clip in clips) * (args.reps + 1) * 2
    out = json.loads(run_child([sys.executable, str(SCRIPTS / "bench_stt"), "--peer-child", json.dumps(spec)],
                               env, budget, "faster-whisper").strip().splitlines()[-1])
    peer = Peer(peak_rss_kb=out["peak_rss_kb"], versions=out["versions"], fallback=out["fallback"])
    for clip, measured in zip(clips, out["clips"]):
        peer.times[clip.label] = measured["times"]
        peer.texts[clip.label] = measured["text"]
        peer.languages[clip.label] = measured["language"]
        log(f"  faster-whisper {clip.label:>5}: median {median(measured['times']):6.3f} s")
    log(f"  faster-whisper {clips[1].label:>5} with the default temperature fallback: {peer.fallback['seconds']:.3f} s")
    return peer


# --- load -----------------------------------------------------------------------------------------

@dataclass
class Load:
    workers: int
    threads: int
    concurrency: int
    duration: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)  # every answer, warm-up and tail included
    peak_rss_kb: int | None = None
    outside_cores: float = float("nan")  # busy outside the benchmark during the cell

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.duration if self.duration > 0 else 0.0

    def percentile_ms(self, p: float) -> float:
        return percentile(self.latencies, p) * 1000


async def load(stt: SttServer, clip: Clip, concurrency: int, *, warmup: float, duration: float,
               timeout: float) -> Load:
    """Closed loop: each client sends its next request when the previous one answers. A 200 counts when
    it completes inside the measured window, so the requests in flight at either edge do not skew the rate."""
    result = Load(stt.workers, stt.threads, concurrency, duration)
    started = time.perf_counter()
    record_from = started + warmup
    stop_at = record_from + duration

    async def client_task() -> None:
        async with httpx.AsyncClient(base_url=stt.base_url, headers=stt.headers, timeout=timeout,
                                     limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)) as client:
            while time.perf_counter() < stop_at:
                begin = time.perf_counter()
                try:
                    response = await client.post("/v1/audio/transcriptions",
                                                 files={"file": (clip.path.name, clip.data, "audio/wav")},
                                                 data={"model": stt.model, "response_format": "json"})
                    status = response.status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                end = time.perf_counter()
                result.statuses[status] += 1
                if status != 200:
                    await asyncio.sleep(0.1)  # no tight loop against a refusing server
                elif record_from <= end <= stop_at:
                    result.latencies.append(end - begin)

    tasks = [asyncio.create_task(client_task()) for _ in range(concurrency)]
    try:
        _, pending = await asyncio.wait(tasks, timeout=warmup + duration + timeout + 10)
        if pending:
            raise TimeoutError(f"{len(pending)} clients still running past their deadline")
    finally:
        for task in tasks:
            task.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
    return result


def run_async(coro):
    if uvloop is not None:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    return asyncio.run(coro)


def run_load(args, stt: SttServer, clip: Clip) -> Load:
    # Every engine worker through one pass first, so no measured request pays for a first call.
    run_async(load(stt, clip, max(stt.workers, 1), warmup=0, duration=0.01, timeout=args.timeout))
    result = run_async(load(stt, clip, args.concurrency, warmup=args.load_warmup, duration=args.duration,
                            timeout=args.timeout))
    result.peak_rss_kb = proc_status_kb(stt.server.pid, "VmHWM")
    log(f"  load {stt.workers}x{stt.threads} c={args.concurrency}: {result.rps:.2f} req/s, "
        f"p50 {result.percentile_ms(50):.0f} ms, p99 {result.percentile_ms(99):.0f} ms, answers {dict(result.statuses)}")
    if stt.server.proc.poll() is not None:
        raise RuntimeError(f"server exited during the load:\n{stt.server.tail()}")
    return result


# --- output ---------------------------------------------------------------------------------------

def mb(kb: int | None) -> str:
    return f"{kb / 1024:.0f}" if kb else "n/a"


def rtf_cell(times: list[float], seconds: float) -> str:
    if not times:
        return "n/a"
    return f"{median(times) / seconds:.3f} ({min(times) / seconds:.3f}–{max(times) / seconds:.3f})"


def rtf_table(sequential: list[Sequential], peer: Peer) -> str:
    lines = ["| clip | endpoint RTF | bare engine RTF | endpoint / engine | server-reported inference RTF | "
             "endpoint − server inference ms | decode ms | faster-whisper int8 RTF | endpoint / faster-whisper |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sequential:
        seconds = s.clip.seconds
        ratio = median(s.endpoint) / median(s.engine)
        peer_cell = rtf_cell(peer.times.get(s.clip.label, []), seconds) if not peer.skipped else "skipped"
        peer_times = peer.times.get(s.clip.label)
        versus = f"{median(s.endpoint) / median(peer_times):.2f}" if peer_times else "n/a"
        lines.append(f"| {s.clip.label} | {rtf_cell(s.endpoint, seconds)} | {rtf_cell(s.engine, seconds)} | "
                     f"{ratio:.3f} | {rtf_cell(s.server_inference, seconds)} | "
                     f"{median([e - i for e, i in zip(s.endpoint, s.server_inference)]) * 1000:.0f} | "
                     f"{median(s.decode) * 1000:.1f} | "
                     f"{peer_cell} | {versus} |")
    return "\n".join(lines)


def language_table(sequential: list[Sequential], peer: Peer) -> str:
    lines = ["| clip | spoken | endpoint detected | bare engine detected | faster-whisper detected |",
             "|---|---|---|---|---|"]
    for s in sequential:
        lines.append(f"| {s.clip.label} | {s.clip.language} | {s.languages.get('endpoint', 'n/a')} | "
                     f"{s.languages.get('engine', 'n/a')} | {peer.languages.get(s.clip.label, 'n/a')} |")
    return "\n".join(lines)


def memory_table(rows: list[tuple[str, int | None]]) -> str:
    lines = ["| process | peak RSS (VmHWM) MB |", "|---|---:|"]
    lines += [f"| {name} | {mb(kb)} |" for name, kb in rows]
    return "\n".join(lines)


def load_table(loads: list[Load], clip: Clip) -> str:
    lines = ["| STT_WORKERS x STT_THREADS | clients | req/s | audio s per s | p50 ms | p99 ms | 200s in window | "
             "503s | other non-200 | server peak RSS MB | cores busy elsewhere |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in loads:
        other = {k: v for k, v in r.statuses.items() if k not in (200, 503)}
        lines.append(f"| {r.workers} x {r.threads} | {r.concurrency} | {r.rps:.2f} | {r.rps * clip.seconds:.1f} | "
                     f"{r.percentile_ms(50):.0f} | {r.percentile_ms(99):.0f} | {len(r.latencies)} | "
                     f"{r.statuses.get(503, 0)} | {sum(other.values()) or 0}{' ' + str(other) if other else ''} | "
                     f"{mb(r.peak_rss_kb)} | {r.outside_cores:.2f} |")
    return "\n".join(lines)


def transcript_notes(sequential: list[Sequential], peer: Peer) -> list[str]:
    notes = []
    for s in sequential:
        texts = dict(s.texts)
        if not peer.skipped and s.clip.label in peer.texts:
            texts["faster-whisper"] = peer.texts[s.clip.label]
        for path, text in texts.items():
            got = words(text)
            if got != s.clip.expected:
                missing = sum((Counter(s.clip.expected) - Counter(got)).values())
                extra = sum((Counter(got) - Counter(s.clip.expected)).values())
                notes.append(f"{path} on the {s.clip.label} clip: transcript differs from the reference "
                             f"({missing} words missing, {extra} extra): {text[:300]!r}")
    return notes


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.peer_child:
        return peer_child(args.peer_child)
    command = shlex.join(sys.orig_argv)
    started = time.monotonic()
    memory: list[tuple[str, int | None]] = []
    loads: list[Load] = []
    outside: list[tuple[str, float]] = []  # phase, cores busy outside the benchmark
    with CLEANUP.guard():
        work = scratch_dir("bench_stt_")
        log("converting the bundled tiny.en weights (child process)")
        model = convert_model(work, args.weights, args.model)
        clips = build_clips(work, args.long_seconds, multilingual=args.model != "svc-stt")

        meter = CpuMeter([])
        time.sleep(2)
        if (busy := meter.cores()[1]) > 0.2:
            log(f"warning: other processes keep {busy:.1f} of {os.cpu_count()} cores busy; the figures will be noisy")
        # Before any server starts, so that nothing of this benchmark competes with the peer.
        log(f"faster-whisper, {args.threads} threads, {args.reps} reps per clip")
        wait_quiet(args, [], "faster-whisper runs")
        meter = CpuMeter([])
        peer = run_peer(args, clips, work)
        if not peer.skipped:
            outside.append(("faster-whisper", meter.cores()[1]))

        from stt.engine import Transcriber

        rss_before_engine = proc_status_kb("self", "VmHWM")
        transcriber = Transcriber(model, n_threads=args.threads)
        log(f"server 1x{args.threads} and bare engine, {args.reps} reps per clip, alternating")
        stt = start_server(args, work, model, 1, args.threads)
        wait_quiet(args, [stt.server.pid], "endpoint and engine runs")
        meter = CpuMeter([stt.server.pid])
        sequential = run_sequential(args, stt, transcriber, clips)
        outside.append(("endpoint and bare engine", meter.cores()[1]))
        memory.append((f"server 1 x {args.threads}, after the sequential runs",
                       proc_status_kb(stt.server.pid, "VmHWM")))
        memory.append(("this process: bare engine (1 context) + client, after its runs", proc_status_kb("self", "VmHWM")))
        memory.append(("this process before loading the engine (Python, numpy, PyAV, httpx, decoded clips)",
                       rss_before_engine))
        if not peer.skipped:
            memory.append((f"faster-whisper child (int8, {args.threads} threads), after its runs", peer.peak_rss_kb))
        del transcriber
        gc.collect()

        for workers, threads in args.load:
            if (workers, threads) != (stt.workers, stt.threads):
                CLEANUP.pop(stt.server.stop)
                log(f"server {workers}x{threads}")
                stt = start_server(args, work, model, workers, threads)
            wait_quiet(args, [stt.server.pid], f"load {workers} x {threads}")
            meter = CpuMeter([stt.server.pid])
            loads.append(run_load(args, stt, clips[0]))
            loads[-1].outside_cores = meter.cores()[1]
            outside.append((f"load {workers} x {threads}", loads[-1].outside_cores))
            memory.append((f"server {workers} x {threads}, after the load", loads[-1].peak_rss_kb))
        CLEANUP.pop(stt.server.stop)
    wall = time.monotonic() - started

    from importlib.metadata import version
    print("Real-time factor = processing seconds / audio seconds: median over "
          f"{args.reps} repetitions (min–max in brackets); {args.threads} whisper.cpp threads on both paths.")
    print()
    print(rtf_table(sequential, peer))
    if args.model != "svc-stt":
        print()
        print(language_table(sequential, peer))
    print()
    print(memory_table(memory))
    print()
    print(load_table(loads, clips[0]))
    print()
    print(f"Command: `{command}`")
    print()
    ratios = {s.clip.label: median(s.endpoint) / median(s.engine) for s in sequential}
    over = [label for label, ratio in ratios.items() if ratio > 1.1]
    print("- Endpoint / engine target under 1.1: "
          + ("met for every clip." if not over else f"missed for the {', '.join(over)} clip(s)."))
    print(f"- Endpoint: `python -m stt.server` with STT_WORKERS=1 STT_THREADS={args.threads} STT_QUEUE={args.queue}, "
          f"RATE_LIMITS_ENABLED=true with DEFAULT_REQUESTS_PER_MINUTE=DEFAULT_REQUESTS_PER_DAY={UNLIMITED} "
          f"(the limiter runs, never refuses), LOG_LEVEL={args.log_level}; POST /v1/audio/transcriptions with "
          f"model={args.model}, response_format=verbose_json, the WAV as the multipart file; client-side wall time of the "
          "whole request on a keep-alive connection, one request at a time. Server-reported inference is the "
          "response's inference_time_ms (whisper.cpp's pass only, without upload, auth, decoding and "
          "reading the result); endpoint − server inference is the median per request of what the server "
          "adds around that pass, the client's share included.")
    print(f"- Bare engine: `Transcriber(ggml, n_threads={args.threads}).transcribe(samples)` in this process "
          "on the samples `stt.audio.decode` gives for the same file, timed around the whole call. It alternates "
          "request by request with the endpoint (order flipped every repetition) while the server is idle. "
          "Decode ms: `decode(file bytes)` in this process, the part of the server's work the engine path "
          "skips. One unrecorded call per clip and path first.")
    clip_note = (f"- Clips: tests/fixtures/jfk.wav ({clips[0].seconds:.0f} s) and {clips[1].path.name}, "
                 f"{clips[1].seconds:.0f} s: {len(clips[1].expected) // len(words(JFK))} copies of the fixture "
                 "joined by silence, written as 16-bit 16 kHz WAV into the scratch directory; the same file on "
                 "every path.")
    print(clip_note)
    if peer.skipped:
        print(f"- faster-whisper: {peer.skipped}.")
    else:
        print(f"- faster-whisper ({peer.versions}): a child process, `WhisperModel(<the bundled tiny.en "
              f"CTranslate2 directory>, device='cpu', compute_type='int8', cpu_threads={args.threads}, "
              "local_files_only=True)`, `transcribe(samples, beam_size=1, temperature=0.0, language='en', "
              "condition_on_previous_text=False, vad_filter=False)` timed until its segments are consumed, "
              "run before any server starts: one greedy pass per 30 s window, as whisper.cpp makes when its "
              "own fallback does not trigger. whisper.cpp computes with the converted float16 weights, "
              "faster-whisper with int8 ones from the same checkpoint.")
        long = clips[1]
        print(f"- faster-whisper with its default temperature fallback (0.0 to 1.0 when a window's gzip "
              f"compression ratio exceeds 2.4 or its mean log-probability is below -1), once on the "
              f"{long.label} clip: {peer.fallback['seconds']:.2f} s, RTF {peer.fallback['seconds'] / long.seconds:.3f}"
              f" (not in the table). The repeated sentence compresses well, so windows can be decoded again "
              "at rising temperatures; the table's figure turns that off.")
    print(f"- Load: {args.concurrency} clients in this process (asyncio{' on uvloop' if uvloop else ''} + "
          f"httpx {httpx.__version__}, one keep-alive connection each), closed loop on the {clips[0].label} clip "
          f"for {args.duration:g} s after {args.load_warmup:g} s unrecorded; req/s and latencies count the 200s "
          "completed inside the window; 503s and other answers are counted over the whole cell, warm-up and "
          f"tail included. STT_QUEUE={args.queue}, so up to workers + {args.queue} requests are admitted: "
          + ("the clients can never get 503." if min(w for w, _ in args.load) + args.queue >= args.concurrency
             else "some configurations can get 503 by design.")
          + " With so few requests per cell p99 is close to the maximum.")
    print("- Peak RSS: VmHWM from /proc/<pid>/status of each process after its runs; a server's figure "
          "includes its database connection and every loaded whisper.cpp context (one per engine worker).")
    print(f"- {os.cpu_count()} cores shared by the client and the server; pywhispercpp "
          f"{version('pywhispercpp')}; Python {platform.python_version()}, {platform.platform()}. "
          f"Total wall time {wall:.0f} s.")
    print("- Other processes on the machine kept on average "
          + ", ".join(f"{cores:.2f} cores busy during the {phase}" for phase, cores in outside)
          + " (all busy CPU time in /proc/stat minus this benchmark's processes): the min–max spread above "
          "follows it.")
    paired = {s.clip.label: median([e / g for e, g in zip(s.endpoint, s.engine)]) for s in sequential}
    print("- Median of the per-repetition endpoint / engine ratios (each pair run back to back): "
          + ", ".join(f"{label} {ratio:.3f}" for label, ratio in paired.items()) + ".")
    for note in transcript_notes(sequential, peer):
        print(f"- {note}")
    failed = any(set(r.statuses) - {200} for r in loads)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
