"""Replays a WAV file through the streaming policy (stt.streaming) in simulated real time, offline.

Audio arrives in --chunk pieces at the rate it was recorded; a pass starts whenever the session says
it is due and none runs, and lasts as long as the engine really takes on this machine. A virtual clock
advances by the audio fed and by the measured pass durations, so the figures are those of a live
stream on this CPU without waiting for it. After the last chunk (eof) the session is finished.

Reports, on stdout:
- final-word latency: the time a word was confirmed minus the stream time its audio ended (the
  engine's word end timestamp); median and p90, for the finals sent before eof, and for all words
  (the tail confirmed by finish() counting from its end);
- WER of the result against a reference text (--reference, or the fixture's text by default);
- mean engine time per pass, and at minute 1 and minute 10 of a long input (--repeat / --minutes).

    scripts/simulate_streaming [WAV] [--repeat N | --minutes M] [--pause S] [--reference TEXT]
                               [--threads 1] [--interval 0.5] [--chunk 0.1]
"""
from __future__ import annotations

import math
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import harness, options
from .harness import FIXTURE, JFK, percentile


def parse_args(argv=None):
    p = options.parser("simulate_streaming", __doc__, options.engine())
    p.add_argument("wav", nargs="?", default=str(FIXTURE))
    p.add_argument("--repeat", type=int, default=1, help="concatenate the clip this many times")
    p.add_argument("--minutes", type=float, help="repeat the clip until the input lasts this long")
    p.add_argument("--pause", type=float, default=1.0, help="seconds of silence between repetitions")
    p.add_argument("--reference", help="the clip's text (default: the fixture's, for the fixture)")
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--chunk", type=float, default=0.1, help="seconds of audio per message")
    p.add_argument("--model", help="ggml model file (default: the bundled tiny.en, converted once)")
    p.add_argument("--data-dir", default=str(Path(tempfile.gettempdir()) / "streamdata"))
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="a pass lasts its wall time, or its CPU time / threads (what it would take on "
                        "otherwise idle cores: for a machine shared with other work)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword of StreamingTranscriber (interval, max_buffer, context, right_context, unsure_window, "
                        "unsure, prompt_chars), repeatable")
    p.add_argument("--verbose", "-v", action="store_true", help="print every update")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from stt.audio import SAMPLE_RATE, decode
    from stt.engine import Transcriber
    from stt.models import default_model_path
    from stt.scoring import wer, words
    from stt.streaming import StreamingTranscriber

    clip = decode(Path(args.wav))
    repeat = args.repeat
    if args.minutes:
        repeat = max(1, math.ceil(args.minutes * 60 / (clip.size / SAMPLE_RATE + args.pause)))
    pause = np.zeros(int(args.pause * SAMPLE_RATE), dtype=np.float32)
    audio = np.concatenate([part for _ in range(repeat) for part in (clip, pause)][:-1] if repeat > 1 else [clip])
    reference = args.reference or (JFK if Path(args.wav).resolve() == FIXTURE.resolve() else None)

    transcriber = Transcriber(args.model or default_model_path(args.data_dir), n_threads=args.threads)
    transcriber.transcribe(audio[:SAMPLE_RATE])  # load and warm the weights outside the figures
    options = {"interval": args.interval}
    for item in args.set:
        key, _, value = item.partition("=")
        options[key.strip()] = int(value) if key.strip() == "prompt_chars" else float(value)
    session = StreamingTranscriber(transcriber, **options)

    chunk = int(args.chunk * SAMPLE_RATE)
    total = audio.size
    clock, fed = 0.0, 0
    confirmed_at: list[float] = []  # per final word, the clock when its pass ended
    passes: list[tuple[float, float, float]] = []  # (stream seconds at start, engine seconds, buffer seconds)
    finals: list[str] = []
    started = time.perf_counter()
    while fed < total:
        # (The epsilon: clock * rate may land a hair below a whole chunk and stall the loop.)
        arrived = min(total, int(clock * SAMPLE_RATE + 1e-6) // chunk * chunk)
        while fed < arrived:
            session.add_audio(audio[fed:fed + chunk])
            fed += chunk
        if session.due():
            t0, c0 = time.perf_counter(), time.process_time()
            update = session.step()
            took = time.perf_counter() - t0 if args.clock == "wall" else (time.process_time() - c0) / args.threads
            clock += took
            stats = session.last_pass
            if stats.transcribed:
                passes.append((stats.stream_seconds, took, stats.buffer_seconds))
            if update.final:
                finals.append(update.final)
                confirmed_at.extend([clock] * len(update.final_words))
            if args.verbose and (update.final or update.partial):
                print(f"{clock:7.2f}s  [{stats.buffer_seconds:4.1f}s buffer, {took:.2f}s]  "
                      f"final={update.final!r}  partial={update.partial!r}", file=sys.stderr)
        else:
            clock = max(clock, (fed + chunk) / SAMPLE_RATE)
    eof = max(clock, total / SAMPLE_RATE)
    t0, c0 = time.perf_counter(), time.process_time()
    result = session.finish()
    done = eof + (time.perf_counter() - t0 if args.clock == "wall" else (time.process_time() - c0) / args.threads)
    wall = time.perf_counter() - started

    n_final = len(confirmed_at)
    final_latency = [at - w.end for at, w in zip(confirmed_at, result.words)]
    all_latency = final_latency + [done - w.end for w in result.words[n_final:]]
    assert " ".join(finals) == result.text[:len(" ".join(finals))], "finals are not a prefix of the result"

    engine = [p[1] for p in passes]
    print(f"input: {args.wav} x{repeat} ({total / SAMPLE_RATE:.1f} s), {args.threads} threads, "
          f"chunk {args.chunk} s, {args.clock} clock, policy {options}; simulated in {wall:.1f} s")
    print(f"words: {len(result.words)}, confirmed before eof: {n_final}")
    print(f"final-word latency, finals before eof: median {harness.median(final_latency):.2f} s, "
          f"p90 {percentile(final_latency, 90):.2f} s")
    print(f"final-word latency, all words (tail at finish): median {harness.median(all_latency):.2f} s, "
          f"p90 {percentile(all_latency, 90):.2f} s")
    if reference:
        print(f"WER: {wer(words(reference) * repeat, words(result.text)):.3f}")
    print(f"passes: {len(passes)} transcribed, mean {statistics.mean(engine) if engine else 0:.3f} s, "
          f"max {max(engine, default=0):.3f} s, mean buffer {statistics.mean(p[2] for p in passes) if passes else 0:.1f} s")
    for minute in (1, 10):
        window = [p for p in passes if (minute - 1) * 60 <= p[0] < minute * 60]
        if window and total / SAMPLE_RATE >= minute * 60:
            print(f"minute {minute}: mean pass {statistics.mean(p[1] for p in window):.3f} s, "
                  f"mean buffer {statistics.mean(p[2] for p in window):.1f} s, max buffer {max(p[2] for p in window):.1f} s")
    print(f"result: {result.text if len(result.text) < 400 else result.text[:400] + ' ...'}")
    print("command: " + " ".join(shlex.quote(a) for a in ["scripts/simulate_streaming", *sys.argv[1:]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
