"""Real-time transcription over WebSocket /v1/audio/stream: final-word latency, accuracy, pass cost
and how many concurrent real-time sessions the machine holds.

One run, on the bundled tiny.en weights:

1. Word end times. The bare engine transcribes each input file once with token timestamps
   (``Transcriber.transcribe(samples, options=Options(token_timestamps=True, temperature_inc=0.0))``);
   its words, with their end times, are the timeline the streamed finals are matched against.
2. Streams. A fresh ``python -m stt.server`` (STT_MAX_STREAMS large, so no session is refused) gets
   tests/fixtures/jfk.wav as one stream, then a --stream-seconds clip (the fixture repeated with
   1-2 s pauses) as 1, 2, ... --levels concurrent streams, each on its own connection and with an
   access token of its own (a credential holds STT_STREAMS_PER_CREDENTIAL sessions), starts spread
   over one second. Audio leaves in --chunk-ms frames at real-time speed, each frame when its last
   sample would have been recorded. Per final word: latency = arrival of the ``final`` frame carrying
   it - the moment its audio ended on that live timeline (the send time of the frame holding its last
   sample, less the audio after the word in that frame). Final words are matched to the timeline's
   words in order by normalised text (an edit-distance alignment); unmatched ones have no latency and
   are counted. WER: word edit distance of the ``result`` text against the reference transcript, on
   lower-cased words without punctuation, over all streams of a row.
3. Pass cost. A WebSocket client cannot see how long a pass takes (a partial frame follows every
   pass, but the gap between two also holds the wait for new audio), so stt.streaming's
   ``StreamingTranscriber`` is driven directly in this process, with the server stopped, over a
   --pass-minutes input built the same way: audio is fed in --chunk-ms pieces faster than real
   time, and ``step()`` runs whenever ``due()`` says so, as on a server that keeps up with the
   stream. Every pass of the whole input runs (the session's state at minute 10 is the product of
   all of them); the wall time of ``step()`` is reported around minute 1 and over the last 30 s.

Everything runs on 127.0.0.1; the client shares the CPU with the server. Prints Markdown tables and
the command line on stdout; progress goes to stderr. On 2 cores the default run takes about 12
minutes (5 of streams, 7 of passes over the 10-minute input); --quick (30 s streams, 1 and 2 streams,
a 3-minute pass-cost input) about 4.

    .venv/bin/python scripts/bench_stream [--quick] [--levels 1,2,3,4] [--stream-seconds 60]
                                          [--pass-minutes 10] [--threads 1] [--workers 2] [--max-p90 1.5]
"""
from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import numpy as np

from stt.scoring import wer, words

from . import harness, options
from .harness import CLEANUP, JFK, CpuMeter, csv_ints, log, median, percentile, proc_status_kb, scratch_dir
from .harness import SAMPLE_RATE as RATE

PAUSES = (1.0, 1.5, 2.0)  # seconds between copies of the fixture, in turn
# Large enough that no session of the ramp is refused, and that the limiter runs but never answers 429.
MAX_STREAMS = "64"
UNLIMITED = "1000000000"


def parse_args(argv=None):
    parser = options.parser("bench_stream", __doc__,
                            options.engine("whisper.cpp threads: STT_THREADS, and the engine in this process"),
                            options.log_level("the server"))
    parser.add_argument("--quick", action="store_true",
                        help="defaults for a short run: --levels 1,2 --stream-seconds 30 --pass-minutes 3")
    parser.add_argument("--levels", type=csv_ints, help="concurrent streams per row, comma-separated (default 1,2,3,4)")
    parser.add_argument("--stream-seconds", type=float, help="length of the repeated clip (default 60)")
    parser.add_argument("--pass-minutes", type=float, help="length of the pass-cost input (default 10; 0 skips it)")
    parser.add_argument("--workers", type=int, default=2,
                        help="STT_WORKERS, engine contexts of the server (default 2, as the server)")
    parser.add_argument("--weights", default=None,
                        help="STT_WEIGHTS, the converted model's matrices: q8_0, f16, ... (default: the server's)")
    parser.add_argument("--chunk-ms", type=int, default=100, help="audio per binary frame in ms (default 100)")
    parser.add_argument("--max-p90", type=float, default=1.5,
                        help="the final-word latency p90 a concurrency level must stay under, in s (default 1.5)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds a stream may wait for its result after eof (default 120)")
    args = parser.parse_args(argv)
    args.levels = args.levels or ([1, 2] if args.quick else [1, 2, 3, 4])
    args.stream_seconds = args.stream_seconds or (30.0 if args.quick else 60.0)
    if args.pass_minutes is None:
        args.pass_minutes = 3.0 if args.quick else 10.0
    if min(args.levels) < 1 or args.threads < 1 or args.workers < 1 or args.chunk_ms < 10:
        parser.error("--levels, --threads and --workers need positive integers, --chunk-ms at least 10")
    if args.stream_seconds < 12 or (args.pass_minutes and args.pass_minutes < 1.5):
        parser.error("--stream-seconds must be at least 12 (the fixture is 11 s), --pass-minutes 0 or at least 1.5")
    return args


# --- numbers --------------------------------------------------------------------------------------

def align(ref: list[str], hyp: list[str]) -> list[tuple[int, int]]:
    """The index pairs an alignment of least word edit distance (substitutions, insertions,
    deletions) matches with equal words. Among equally good alignments the matches sit as early in
    ``ref`` as they can: with repeated text a confirmed word is never credited to a later copy, whose
    audio may not even have been sent yet."""
    rows = [list(range(len(hyp) + 1))]
    for i in range(1, len(ref) + 1):
        row, above = [i] + [0] * len(hyp), rows[-1]
        for j in range(1, len(hyp) + 1):
            row[j] = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (ref[i - 1] != hyp[j - 1]))
        rows.append(row)
    pairs, i, j = [], len(ref), len(hyp)
    while i and j:
        if rows[i][j] == rows[i - 1][j] + 1:  # walking back, skipping ref words first
            i -= 1
        elif ref[i - 1] == hyp[j - 1] and rows[i][j] == rows[i - 1][j - 1]:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif rows[i][j] == rows[i - 1][j - 1] + 1:
            i, j = i - 1, j - 1
        else:
            j -= 1
    return pairs[::-1]


@dataclass
class SttServer:
    server: harness.Server
    url: str  # the stream endpoint
    tokens: list[str]  # one credential per concurrent stream


def start_server(args, work: Path, model: Path, streams: int) -> SttServer:
    """The server, with a credential for each of ``streams`` concurrent streams: a credential holds
    STT_STREAMS_PER_CREDENTIAL sessions at most, so that one shared by every stream would refuse the
    levels above it, and the row would measure the refusal, not the server."""
    started = harness.start_stt_server(work, model, STT_WORKERS=args.workers, STT_THREADS=args.threads,
                                        **({"STT_WEIGHTS": args.weights} if args.weights else {}),
                                        STT_MAX_STREAMS=MAX_STREAMS, LOG_LEVEL=args.log_level,
                                        # A crash inside the native engine then leaves the Python stacks in the log.
                                        PYTHONFAULTHANDLER="1")
    tokens = [started.token] + [harness.access_token(started.env) for _ in range(streams - 1)]
    return SttServer(started.server, f"ws://127.0.0.1:{started.port}/v1/audio/stream", tokens)


# --- clips ----------------------------------------------------------------------------------------

@dataclass
class Clip:
    label: str
    pcm: np.ndarray  # int16 mono at RATE
    reference: list[str]  # the words a correct transcript has
    timeline: list[tuple[str, float]] = field(default_factory=list)  # (word, end s) from the bare engine

    @property
    def seconds(self) -> float:
        return self.pcm.size / RATE

    @property
    def samples(self) -> np.ndarray:
        # What the server's PCM reader makes of the same bytes.
        return self.pcm.astype(np.float32) / 32768.0


def read_fixture() -> np.ndarray:
    return np.frombuffer(harness.fixture_pcm(), dtype="<i2")


def repeated(speech: np.ndarray, seconds: float) -> Clip:
    """Copies of the fixture with the pauses in turn, until the clip is at least ``seconds`` long."""
    parts, total, copies = [], 0, 0
    while total < seconds * RATE:
        if parts:
            pause = np.zeros(int(PAUSES[(copies - 1) % len(PAUSES)] * RATE), dtype="<i2")
            parts.append(pause)
            total += pause.size
        parts.append(speech)
        total += speech.size
        copies += 1
    pcm = np.concatenate(parts)
    return Clip(f"jfk x{copies} ({pcm.size / RATE:.0f} s)", pcm, words(JFK) * copies)


def timeline(transcriber, clip: Clip) -> list[tuple[str, float]]:
    from stt.engine import Options

    transcript = transcriber.transcribe(clip.samples, options=Options(token_timestamps=True, temperature_inc=0.0))
    out = []
    for w in transcript.words:
        for part in words(w.word):  # "Americans," → "americans"; a hyphenated token → its parts
            out.append((part, float(w.end)))
    return out


# --- streams --------------------------------------------------------------------------------------

@dataclass
class StreamRun:
    chunk: int  # samples per frame
    total: int  # samples sent
    sends: list[float] = field(default_factory=list)  # monotonic send time of each audio frame
    frames: list[tuple[float, str, str]] = field(default_factory=list)  # (arrival, type, text)
    result: dict | None = None
    error: str | None = None
    eof_at: float = float("nan")
    result_at: float = float("nan")

    def live_end(self, seconds: float) -> float:
        """When audio up to ``seconds`` into the stream had been recorded, on the live timeline."""
        sample = min(max(seconds * RATE, 1.0), self.total)
        k = min(max(math.ceil(sample / self.chunk) - 1, 0), len(self.sends) - 1)
        chunk_end = min((k + 1) * self.chunk, self.total)
        return self.sends[k] - (chunk_end - sample) / RATE


async def stream(url: str, token: str, clip: Clip, *, chunk_ms: int, speed: float = 1.0, delay: float = 0.0,
                 timeout: float) -> StreamRun:
    """One session on its own connection: config, PCM frames paced to the clock, eof, the result."""
    await asyncio.sleep(delay)
    chunk = RATE * chunk_ms // 1000
    data = clip.pcm.astype("<i2").tobytes()
    run = StreamRun(chunk, clip.pcm.size)
    async with aiohttp.ClientSession() as http:
        # No heartbeat: the server answers pings only between frames, not while its last pass runs,
        # which may take longer than a ping's grace period; a slow server is measured, not dropped.
        async with http.ws_connect(url, headers={"Authorization": f"Bearer {token}"}) as ws:
            async def receive() -> None:
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    at = time.monotonic()
                    frame = json.loads(message.data)
                    kind = frame.get("type")
                    if kind == "result":
                        run.result, run.result_at = frame, at
                    elif kind == "error":
                        run.error = run.error or frame.get("message", str(frame))
                    else:
                        run.frames.append((at, kind, frame.get("text", "")))

            receiver = asyncio.create_task(receive())
            try:
                await ws.send_json({"type": "config", "sample_rate": RATE})
                started = time.monotonic()
                for k, offset in enumerate(range(0, len(data), 2 * chunk)):
                    piece = data[offset:offset + 2 * chunk]
                    wait = started + (offset // 2 + len(piece) // 2) / RATE / speed - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    if receiver.done() or run.error:
                        break
                    await ws.send_bytes(piece)
                    run.sends.append(time.monotonic())
                if not ws.closed:
                    await ws.send_json({"type": "eof"})
                run.eof_at = time.monotonic()
                await asyncio.wait_for(receiver, timeout)
            finally:
                receiver.cancel()
    if run.result is None and run.error is None:
        run.error = f"closed without a result (code {ws.close_code})"
    return run


@dataclass
class Row:
    clip: Clip
    streams: int
    runs: list[StreamRun] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    final_words: int = 0
    matched: int = 0
    wers: list[float] = field(default_factory=list)  # of each result against the reference
    finish: list[float] = field(default_factory=list)  # eof → result, s
    periods: list[float] = field(default_factory=list)  # between consecutive partial frames, s
    server_cores: float = float("nan")
    other_cores: float = float("nan")
    rss_kb: int = 0  # the server's largest resident set seen during the row
    texts: list[str] = field(default_factory=list)

    @property
    def wer(self) -> float:
        # Every stream of a row has the same reference, so this is also all edits over all reference words.
        return sum(self.wers) / len(self.wers) if self.wers else float("nan")

    def add(self, run: StreamRun) -> None:
        self.runs.append(run)
        if run.error:
            self.failures.append(run.error)
        finals = [(word, at) for at, kind, text in run.frames if kind == "final" for word in words(text)]
        self.final_words += len(finals)
        pairs = align([w for w, _ in self.clip.timeline], [w for w, _ in finals])
        self.matched += len(pairs)
        for i, j in pairs:
            self.latencies.append(finals[j][1] - run.live_end(self.clip.timeline[i][1]))
        partials = [at for at, kind, _ in run.frames if kind == "partial"]
        self.periods += [b - a for a, b in zip(partials, partials[1:])]
        if run.result is not None:
            text = run.result.get("text", "")
            self.texts.append(text)
            self.wers.append(wer(self.clip.reference, words(text)))
            self.finish.append(run.result_at - run.eof_at)


async def run_row(stt: SttServer, clip: Clip, streams: int, args) -> Row:
    row = Row(clip, streams)
    meter = CpuMeter([stt.server.pid])
    # Starts spread over a second, as sessions of independent callers would be.
    tasks = [asyncio.create_task(stream(stt.url, stt.tokens[i], clip, chunk_ms=args.chunk_ms, delay=i / streams,
                                        timeout=args.timeout)) for i in range(streams)]
    budget = clip.seconds + 1 + args.timeout + 30

    async def watch_rss() -> None:
        while True:
            row.rss_kb = max(row.rss_kb, proc_status_kb(stt.server.pid, "VmRSS") or 0)
            await asyncio.sleep(0.2)

    watcher = asyncio.create_task(watch_rss())
    try:
        done, pending = await asyncio.wait(tasks, timeout=budget)
    finally:
        watcher.cancel()
        for task in tasks:
            task.cancel()
    row.server_cores, row.other_cores = meter.cores()
    for task in tasks:
        if task in done and task.exception() is None:
            row.add(task.result())
        else:
            row.failures.append("no result within the time limit" if task not in done else repr(task.exception()))
    return row


def run_async(coro):
    return asyncio.run(coro)


# --- pass cost, on the policy itself --------------------------------------------------------------

@dataclass
class Pass:
    at: float  # stream seconds received when the pass ran
    seconds: float  # wall time of step()
    transcribed: bool | None  # whether the engine ran (None when the policy does not say)
    buffer: float | None  # seconds of audio the pass looked at


def pass_cost(transcriber, clip: Clip, chunk_ms: int) -> tuple[list[Pass], float]:
    """Every pass of a session over ``clip``, fed faster than real time. The pass schedule depends
    only on the audio (a pass whenever due() after a chunk), not on how fast this machine is, so a
    slow pass (another process taking a core) does not change the passes that follow it."""
    from stt.streaming import StreamingTranscriber

    session = StreamingTranscriber(transcriber)
    audio, chunk = clip.samples, RATE * chunk_ms // 1000
    passes: list[Pass] = []
    position = 0
    started = time.perf_counter()
    next_report = 60.0
    while position < audio.size:
        session.add_audio(audio[position:position + chunk])
        position += chunk
        if session.due():
            begin = time.perf_counter()
            session.step()
            took = time.perf_counter() - begin
            stats = getattr(session, "last_pass", None)
            passes.append(Pass(position / RATE, took, getattr(stats, "transcribed", None),
                               getattr(stats, "buffer_seconds", None)))
        if position / RATE >= next_report:
            log(f"  pass cost: {position / RATE / 60:.0f} of {clip.seconds / 60:.0f} min of audio, "
                f"{len(passes)} passes, {time.perf_counter() - started:.0f} s")
            next_report += 60.0
    session.finish()
    return passes, time.perf_counter() - started


# --- output ---------------------------------------------------------------------------------------

def fmt(value: float, digits: int = 2) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"


def stream_table(rows: list[Row], max_p90: float) -> str:
    lines = ["| clip | concurrent streams | final-word latency median s | p90 s | max s | final words matched | "
             "WER of results | eof → result median s | pass period median s | server cores | other cores | "
             "server RSS max MB | failed streams |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p90 = percentile(r.latencies, 90)
        mark = "" if not r.latencies else (" ✓" if p90 < max_p90 and not r.failures else " ✗")
        lines.append(f"| {r.clip.label} | {r.streams} | {fmt(median(r.latencies))} | {fmt(p90)}{mark} | "
                     f"{fmt(max(r.latencies) if r.latencies else float('nan'))} | {r.matched} of {r.final_words} | "
                     f"{fmt(100 * r.wer, 1)} % | {fmt(median(r.finish))} | {fmt(median(r.periods))} | "
                     f"{fmt(r.server_cores)} | {fmt(r.other_cores)} | {r.rss_kb / 1024:.0f} | "
                     f"{len(r.failures)} of {r.streams} |")
    return "\n".join(lines)


def pass_table(passes: list[Pass], windows: list[tuple[str, float, float]]) -> str:
    lines = ["| stream position | passes | engine passes | buffer median s | step() median s | p90 s | max s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, lo, hi in windows:
        inside = [p for p in passes if lo <= p.at < hi]
        ran = [p for p in inside if p.transcribed is not False]
        buffers = [p.buffer for p in ran if p.buffer is not None]
        times = [p.seconds for p in ran]
        lines.append(f"| {label} ({lo:.0f}–{hi:.0f} s) | {len(inside)} | {len(ran)} | {fmt(median(buffers), 1)} | "
                     f"{fmt(median(times), 3)} | {fmt(percentile(times, 90), 3)} | "
                     f"{fmt(max(times) if times else float('nan'), 3)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    command = shlex.join(sys.orig_argv)
    started = time.monotonic()
    rows: list[Row] = []
    passes: list[Pass] = []
    pass_note = ""
    pass_wall = pass_other = 0.0
    bare_wer: list[tuple[str, float, str]] = []
    pass_clip = None
    aborted = ""
    with CLEANUP.guard():
        from stt.engine import Transcriber
        from stt.models import default_model_path

        meter = CpuMeter()
        time.sleep(2)
        if (busy := meter.cores()[1]) > 0.2:
            log(f"warning: other processes keep {busy:.1f} of {os.cpu_count()} cores busy; the figures will be noisy")
        work = scratch_dir("bench_stream_")
        log("converting the bundled tiny.en weights")
        model = default_model_path(work / "convert", **({"weights": args.weights} if args.weights else {}))
        speech = read_fixture()
        jfk = Clip("jfk.wav (11 s)", speech.copy(), words(JFK))
        long = repeated(speech, args.stream_seconds)

        log(f"word end times: bare engine, {args.threads} threads, token timestamps")
        transcriber = Transcriber(model, n_threads=args.threads)
        for clip in (jfk, long):
            clip.timeline = timeline(transcriber, clip)
            heard = [w for w, _ in clip.timeline]
            bare_wer.append((clip.label, wer(clip.reference, heard), " ".join(heard)))
            log(f"  {clip.label}: {len(clip.timeline)} words, last ends at {clip.timeline[-1][1]:.2f} s")

        log(f"server: STT_WORKERS={args.workers} STT_THREADS={args.threads} STT_MAX_STREAMS={MAX_STREAMS}")
        stt = start_server(args, work, model, max(args.levels))
        # One unrecorded session first, so that no measured one pays for a first pass.
        warm = run_async(stream(stt.url, stt.tokens[0], jfk, chunk_ms=args.chunk_ms, speed=4.0, timeout=args.timeout))
        if warm.error:
            raise RuntimeError(f"the warm-up stream failed: {warm.error}\n{stt.server.tail()}")
        for clip, streams in [(jfk, 1)] + [(long, n) for n in args.levels]:
            log(f"streaming {clip.label} x {streams} concurrent")
            row = run_async(run_row(stt, clip, streams, args))
            rows.append(row)
            log(f"  latency median {fmt(median(row.latencies))} s, p90 {fmt(percentile(row.latencies, 90))} s, "
                f"WER {fmt(100 * row.wer, 1)} %, {row.matched}/{row.final_words} final words matched, "
                f"failures {row.failures or 0}")
            if row.failures:
                log(f"  server log tail:\n{stt.server.tail(40)}")
            if (code := stt.server.proc.poll()) is not None:
                aborted = (f"the server exited with status {code} during {clip.label} x {streams}; "
                           "the rows after it were not run")
                log(f"  {aborted}")
                break
        CLEANUP.pop(stt.server.stop)

        if args.pass_minutes:
            try:
                import stt.streaming as policy
            except ImportError as exc:
                policy, pass_note = None, f"Pass cost skipped: stt.streaming cannot be imported ({exc})."
            if policy is not None and not hasattr(policy, "StreamingTranscriber"):
                policy, pass_note = None, "Pass cost skipped: stt.streaming has no StreamingTranscriber yet."
            if policy is not None:
                pass_clip = repeated(speech, args.pass_minutes * 60)
                log(f"pass cost: StreamingTranscriber over {pass_clip.seconds / 60:.1f} min of audio, server stopped")
                meter = CpuMeter()
                passes, pass_wall = pass_cost(transcriber, pass_clip, args.chunk_ms)
                pass_other = meter.cores()[1]
    wall = time.monotonic() - started

    from importlib.metadata import version
    print(f"Final-word latency and accuracy over WebSocket /v1/audio/stream, {args.chunk_ms} ms frames at "
          f"real-time speed; STT_WORKERS={args.workers}, STT_THREADS={args.threads}, tiny.en "
          f"{args.weights or 'at the default STT_WEIGHTS'}. ✓/✗: p90 under "
          f"{args.max_p90:g} s with no failed stream.")
    print()
    print(stream_table(rows, args.max_p90))
    print()
    level_rows = [r for r in rows if r.clip is not jfk]
    holding = [r.streams for r in level_rows
               if r.latencies and percentile(r.latencies, 90) < args.max_p90 and not r.failures]
    best = 0
    for r in sorted(level_rows, key=lambda r: r.streams):  # the largest level with every smaller one passing too
        if r.streams in holding:
            best = r.streams
        else:
            break
    print(f"Concurrent real-time sessions held with final-word latency p90 under {args.max_p90:g} s: "
          f"**{best}** (levels tried: {', '.join(map(str, args.levels))}).")
    print()
    if passes:
        end = pass_clip.seconds
        windows = [("minute 1", 45.0, 75.0), (f"minute {end / 60:.0f}", end - 30.0, end + 1.0), ("whole stream", 0.0, end + 1.0)]
        print(f"Pass cost: `StreamingTranscriber(Transcriber(ggml, n_threads={args.threads}))` in this process over "
              f"{end / 60:.1f} min of audio ({pass_clip.label}: the fixture repeated with "
              f"{'/'.join(f'{p:g}' for p in PAUSES)} s pauses in turn), fed faster than real time, a pass "
              f"whenever due(); {pass_wall:.0f} s wall for {end:.0f} s of audio.")
        print()
        print(pass_table(passes, windows))
    elif pass_note or not args.pass_minutes:
        print(pass_note or "Pass cost skipped (--pass-minutes 0).")
    print()
    print(f"Command: `{command}`")
    print()
    print("- Latency: arrival of the final frame carrying a word − the moment the word's audio ended on the "
          "live timeline (send time of the frame holding the word's last sample − the audio after the word in "
          "that frame). Word ends come from one bare-engine pass over the whole file with token timestamps "
          "(whisper.cpp's token times, about ±0.1–0.3 s; the last word of a segment may be stretched to the "
          "segment's end, which makes that word's latency look shorter). Final words that the alignment does "
          "not match (the stream heard them differently from the bare pass) have no latency; 'final words "
          "matched' counts them. Words only in the result (never confirmed before eof) have none either.")
    print(f"- WER: word edit distance / reference words, over all streams of a row, on the result frame's text "
          f"against the fixture's transcript repeated ({len(words(JFK))} words per copy), lower-cased, "
          "punctuation removed. For comparison, the bare engine's single pass over the whole file (the one "
          "that gives the word end times): "
          + ", ".join(f"{label} {100 * wer:.1f} %" for label, wer, _ in bare_wer) + ".")
    print("- Pass period: median gap between consecutive partial frames of a stream (the server sends one after "
          "every pass): the pass time plus the wait for new audio and for the engine; with several streams on "
          "one engine worker it grows as passes queue.")
    print("- Server RSS: the largest resident set of the server process (VmRSS) sampled every 0.2 s during the "
          "row; the model and every engine context included.")
    print("- Server cores / other cores: CPU the server process used during the row, and what every other "
          "process on the machine used (all busy time in /proc/stat minus this process and the server); "
          "the cores are shared, so a row with other cores above ~0.2 was measured on a busy machine.")
    print(f"- Concurrent rows: {', '.join(map(str, args.levels))} sessions of the same clip, each on its own "
          "aiohttp connection from this process and with an access token of its own (a credential holds "
          "STT_STREAMS_PER_CREDENTIAL sessions at most), starts spread evenly over one second; STT_MAX_STREAMS="
          f"{MAX_STREAMS} so none is refused. The level figure is the largest level whose p90 and every smaller "
          "level's p90 are under the limit, with no failed stream.")
    if passes:
        ran = [p for p in passes if p.transcribed is not False]
        print(f"- Pass cost: {len(passes)} calls of step(), {len(ran)} of which ran the engine (the others "
              "found silence or nothing new and returned at once; they are left out of the time columns). The "
              f"input goes in {args.chunk_ms} ms pieces with due() checked after each, so passes follow the "
              "schedule of a server that keeps up with one real-time stream; step() is timed whole (engine "
              f"call plus the policy's own work), with the server stopped. Other processes kept {pass_other:.2f} "
              "cores busy on average meanwhile.")
    print(f"- {os.cpu_count()} cores shared by the client, the server and anything else running; aiohttp "
          f"{aiohttp.__version__}; pywhispercpp {version('pywhispercpp')}; Python {platform.python_version()}, "
          f"{platform.platform()}. Total wall time {wall:.0f} s.")
    if aborted:
        print(f"- Aborted: {aborted}.")
    failed = [r for r in rows if r.failures]
    for r in failed:
        print(f"- {r.clip.label} x {r.streams}: {len(r.failures)} failed: {'; '.join(sorted(set(r.failures)))[:300]}")
    for r in rows:
        off = [t for t in r.texts if words(t) != r.clip.reference]
        if off:
            print(f"- {r.clip.label} x {r.streams}: {len(off)} of {len(r.texts)} results differ from the reference, "
                  f"e.g. {off[0][:240]!r}")
    return 1 if failed or aborted else 0


if __name__ == "__main__":
    sys.exit(main())
