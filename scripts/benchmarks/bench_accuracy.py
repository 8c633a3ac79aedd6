"""Word error rate of the speech engine per weights type of the bundled tiny.en and per path, on
the held-out set (tests/fixtures/heldout/, about 2,500 words, plus tests/fixtures/jfk.wav) in the
conditions of scripts/benchmarks/heldout.py: clean, pauses (about 60 s streams), noise (white or
pink at 15 dB SNR) and telephone (8 kHz G.711 µ-law, 20 dB SNR).

Each --weights type is converted once from the bundled tiny.en into a scratch directory
(stt.ggml_convert.convert(..., weights=W)). Then, per condition, path and weights type, on an engine
loaded afresh (whisper.cpp's output depends on the calls made before on the same context, so each
weights type gets the same sequence of calls):

* file: ``Transcriber(model, n_threads=--threads).transcribe(samples)`` per clip (per stream for
  pauses);
* stream: stt.streaming.StreamingTranscriber on that engine, fed offline faster than real time as
  scripts/bench_stream's pass cost is: 100 ms chunks, step() whenever due(), then finish(), whose
  text is scored.

WER is the condition's total word edits over its total reference words (numbers compared by their
digits, see heldout.py), not a mean of per-clip rates; the real-time factor is the engine's wall
time (transcribe(), or add_audio/step/finish) over the audio's length. Against the first weights
type, the paired difference in WER per condition and path, with a 95 % interval from a bootstrap over
clips (seeded: the same clips drawn for every comparison).

Run times, measured on 2 otherwise idle cores with the default --threads 1: the file path takes
0.04 (clean) to 0.08 (telephone) s of engine time per second of audio, about 30 s to 65 s per
weights type and condition over the set's 14 minutes, some 12 minutes for the default run's file
path; the stream path about 1.2 s per second of audio, some 16 minutes per weights type and
condition, over 4 hours for the default run. With --threads 2, both take about two thirds as long.
So: --paths file for a comparison of weights types; the stream path on --limit or a few
--conditions.

Markdown tables and the command line on stdout, progress on stderr; the cores other processes kept
busy meanwhile are reported, as the machine may be shared.

    scripts/bench_accuracy [--weights f16,q8_0,q5_1,q4_0] [--conditions clean,pauses,noise,telephone]
                           [--paths file,stream] [--limit N] [--threads 1] [--seed 0]
"""
from __future__ import annotations

import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import version

import numpy as np

from . import heldout, options
from .harness import CLEANUP, SAMPLE_RATE, CpuMeter, csv_words, log, scratch_dir

PATHS = ("file", "stream")
CHUNK_MS = 100
RESAMPLES = 2000
# The suffix of a --weights entry that runs the engine without its speed-ups, as it ran before them.
FULL = "+full"


def parse_args(argv=None):
    from stt.ggml_convert import WEIGHTS

    parser = options.parser("bench_accuracy", __doc__, options.engine())
    parser.add_argument("--weights", type=csv_words, default=["f16", "q8_0", "q5_1", "q4_0"],
                        help=f"weights types, comma-separated, the first the baseline of the comparison (of "
                             f"{', '.join(WEIGHTS)}; default f16,q8_0,q5_1,q4_0); a type followed by {FULL} "
                             "runs the engine without its speed-up: a full 30 s encoder window for files "
                             "(e.g. f16+full,q8_0)")
    parser.add_argument("--conditions", type=csv_words, default=list(heldout.CONDITIONS),
                        help=f"comma-separated (default {','.join(heldout.CONDITIONS)})")
    parser.add_argument("--paths", type=csv_words, default=list(PATHS),
                        help="file (one transcribe() per clip), stream (StreamingTranscriber), or both "
                             "(default file,stream)")
    parser.add_argument("--limit", type=int,
                        help="this many clips of the set, spread evenly over it, jfk.wav among them (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="of the conditions' noise and pauses and of the bootstrap "
                                                            "(default 0)")
    args = parser.parse_args(argv)
    for name, given, known in (("--weights", [w.removesuffix(FULL) for w in args.weights], WEIGHTS),
                               ("--conditions", args.conditions,
                               heldout.CONDITIONS), ("--paths", args.paths, PATHS)):
        if not given or set(given) - set(known):
            parser.error(f"{name} takes some of {', '.join(known)}, not {','.join(given)}")
    if args.limit is not None and args.limit < 1 or args.threads < 1:
        parser.error("--limit and --threads must be positive")
    return args


@dataclass
class Score:
    """One weights type's run of one path over one condition's clips, in the clips' order."""
    edits: list[int] = field(default_factory=list)
    words: list[int] = field(default_factory=list)
    engine_seconds: float = 0.0
    audio_seconds: float = 0.0
    other_cores: float = 0.0

    @property
    def wer(self) -> float:
        return sum(self.edits) / max(1, sum(self.words))

    @property
    def rtf(self) -> float:
        return self.engine_seconds / max(self.audio_seconds, 1e-9)


def convert(weights: list[str], work) -> dict[str, object]:
    """Each weights type's file by its name in --weights (a type named twice, with and without
    +full, is converted once)."""
    from stt import ggml_convert

    bundled = ggml_convert.bundled_models().get("tiny.en")
    if bundled is None:
        raise SystemExit("the bundled tiny.en weights are not installed: `scripts/serve` once sets up .venv with them")
    files = {}
    for w in dict.fromkeys(name.removesuffix(FULL) for name in weights):
        started = time.perf_counter()
        files[w] = ggml_convert.convert(bundled, work / f"ggml-tiny.en-{w}.bin", weights=w)
        log(f"converted tiny.en to {w} in {time.perf_counter() - started:.1f} s "
            f"({files[w].stat().st_size / 1e6:.1f} MB)")
    return {name: files[name.removesuffix(FULL)] for name in weights}


def heard_by_file(transcriber, clip: heldout.Clip, full: bool) -> tuple[str, float]:
    from stt.engine import Options

    started = time.perf_counter()
    # transcribe()'s own options but for the window: 0 is whisper.cpp's full 30 s.
    options = Options(temperature_inc=0.2, audio_ctx=0) if full else None
    text = transcriber.transcribe(clip.samples, options=options).text
    return text, time.perf_counter() - started


def heard_by_stream(transcriber, clip: heldout.Clip, full: bool) -> tuple[str, float]:
    """The session's final text, fed as bench_stream's pass_cost feeds it: the pass schedule depends
    only on the audio, not on how fast the machine is. (``full`` changes nothing here: a stream's
    passes have always had windows fitted to their buffer.)"""
    from stt.streaming import StreamingTranscriber

    session = StreamingTranscriber(transcriber)
    chunk = SAMPLE_RATE * CHUNK_MS // 1000
    started = time.perf_counter()
    for position in range(0, clip.samples.size, chunk):
        session.add_audio(clip.samples[position:position + chunk])
        if session.due():
            session.step()
    text = session.finish().text
    return text, time.perf_counter() - started


def run(model, threads: int, path: str, clips: list[heldout.Clip], label: str, full: bool) -> Score:
    from stt.engine import Transcriber

    transcriber = Transcriber(model, n_threads=threads)
    hear = heard_by_file if path == "file" else heard_by_stream
    score, meter = Score(), CpuMeter()
    next_report = time.monotonic() + 60
    for i, clip in enumerate(clips, 1):
        text, seconds = hear(transcriber, clip, full)
        score.edits.append(heldout.edits(clip.text, text))
        score.words.append(heldout.reference_words(clip.text))
        score.engine_seconds += seconds
        score.audio_seconds += clip.seconds
        if time.monotonic() >= next_report:
            log(f"  {label}: {i} of {len(clips)} clips, WER so far {100 * score.wer:.1f} %")
            next_report += 60
    score.other_cores = meter.cores()[1]
    return score


def paired(base: Score, other: Score, seed: int) -> tuple[float, float, float]:
    """other's WER minus base's, and its 95 % bootstrap interval over clips (the same draws for
    every comparison with the same seed and number of clips)."""
    a, b, n = (np.array(values, dtype=np.float64) for values in (base.edits, other.edits, base.words))
    draws = np.random.default_rng(seed).integers(0, n.size, (RESAMPLES, n.size))
    diffs = (b[draws].sum(axis=1) - a[draws].sum(axis=1)) / np.maximum(n[draws].sum(axis=1), 1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    return other.wer - base.wer, float(low), float(high)


def wer_table(args, scores) -> str:
    head = "| condition | weights | clips | reference words | audio s |"
    rule = "|---|---|---:|---:|---:|"
    for path in args.paths:
        head += f" {path} WER | {path} RTF |"
        rule += "---:|---:|"
    lines = [head + " other cores |", rule + "---:|"]
    for condition in args.conditions:
        for w in args.weights:
            first = scores[condition, args.paths[0], w]
            row = f"| {condition} | {w} | {len(first.edits)} | {sum(first.words)} | {first.audio_seconds:.0f} |"
            for path in args.paths:
                s = scores[condition, path, w]
                row += f" {100 * s.wer:.2f} % | {s.rtf:.3f} |"
            other = max(scores[condition, path, w].other_cores for path in args.paths)
            lines.append(row + f" {other:.2f} |")
    return "\n".join(lines)


def comparison_table(args, scores) -> str:
    base = args.weights[0]
    lines = [(f"| condition | path | weights | WER | {base} WER | difference (points) | 95 % interval | "
              "clips worse / better |"),
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for condition in args.conditions:
        for path in args.paths:
            for w in args.weights[1:]:
                a, b = scores[condition, path, base], scores[condition, path, w]
                diff, low, high = paired(a, b, args.seed)
                worse = sum(x > y for x, y in zip(b.edits, a.edits))
                better = sum(x < y for x, y in zip(b.edits, a.edits))
                lines.append(f"| {condition} | {path} | {w} | {100 * b.wer:.2f} % | {100 * a.wer:.2f} % | "
                             f"{100 * diff:+.2f} | {100 * low:+.2f} to {100 * high:+.2f} | {worse} / {better} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    command = shlex.join(["scripts/bench_accuracy", *(sys.argv[1:] if argv is None else argv)])
    started = time.monotonic()
    scores: dict[tuple[str, str, str], Score] = {}
    with CLEANUP.guard():
        work = scratch_dir("bench_accuracy_")
        models = convert(args.weights, work)
        sizes = {w: path.stat().st_size for w, path in models.items()}
        clips = heldout.load(args.limit)
        log(f"{len(clips)} clips, {sum(c.seconds for c in clips):.0f} s of audio")
        for condition in args.conditions:
            heard = heldout.condition(condition, clips, args.seed)
            for path in args.paths:
                for w in args.weights:  # weights innermost: every type meets about the same machine load
                    label = f"{condition} {path} {w}"
                    began = time.monotonic()
                    scores[condition, path, w] = score = run(models[w], args.threads, path, heard, label,
                                                             w.endswith(FULL))
                    log(f"{label}: WER {100 * score.wer:.2f} % of {sum(score.words)} words, RTF {score.rtf:.3f}, "
                        f"{time.monotonic() - began:.0f} s")
    wall = time.monotonic() - started

    print(f"Word error rate of tiny.en per weights type and path, --threads {args.threads}; RTF: engine wall time "
          "over audio time.")
    print()
    print(wer_table(args, scores))
    if len(args.weights) > 1:
        print()
        print(f"Paired against {args.weights[0]}: difference in WER, 95 % interval from {RESAMPLES} bootstrap "
              f"resamples of the clips (seed {args.seed}); clips worse / better: clips with more / fewer edits "
              f"than under {args.weights[0]}.")
        print()
        print(comparison_table(args, scores))
    print()
    print(f"Command: `{command}`")
    print()
    print("- Set: tests/fixtures/jfk.wav and tests/fixtures/heldout/ (eSpeak NG speech, scripts/make_heldout_audio)"
          + (f", {args.limit} clips of it spread evenly (--limit)" if args.limit else "") + "; conditions derived in "
          f"memory with seed {args.seed} (scripts/benchmarks/heldout.py). A pauses row's clips are its ~60 s "
          "streams.")
    print("- WER: total word edits over total reference words of the condition, on lower-cased words without "
          "punctuation, numbers as their digits on both sides (\"four five\" and \"45\" alike).")
    print("- Model files: " + ", ".join(f"{w} {size / 1e6:.1f} MB" for w, size in sizes.items()) + ".")
    print(f"- Other cores: what every other process kept busy during the row (the most of its paths), on "
          f"{os.cpu_count()} cores; above ~0.2 the RTF figures were measured on a busy machine (the WER figures do "
          "not depend on it).")
    print(f"- pywhispercpp {version('pywhispercpp')}; Python {platform.python_version()}, {platform.platform()}. "
          f"Total wall time {wall:.0f} s.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
