"""What voice mode costs a simulated caller's turn: eSpeak NG speaks it, a telephone line (8 kHz
G.711 µ-law, noise at --snr-db) carries it or not, and the bundled speech model (tiny.en, converted
once into a scratch directory) hears it, in this process, through models.simulations.voice.

--turns sentences of a caller's usual length (5 to 20 words) are heard clean and over the line,
alternating turn by turn so that both see the same machine state, after one unrecorded turn of
each. For each --load cell (CONCURRENCYxTHREADS: turns heard at once, each on an engine context of
its own with THREADS whisper.cpp threads) the report gives, per turn, the median and p90 of the
synthesis (speech, line and resampling), the transcription, their total, the audio's length and the
real-time factor (total / audio), the mean word error rate, the turns heard per minute, and the
CPU time of this process per turn (all threads): on a machine shared with other work the wall times
grow with the neighbours' load, the CPU time much less.

A Markdown table and the command line on stdout, progress on stderr; the cores other processes kept
busy meanwhile are reported, as the machine may be shared.

    scripts/bench_voice_turn [--turns 24] [--load 1x2,2x1] [--snr-db 20] [--language en]
"""
from __future__ import annotations

import os
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from statistics import mean

from models.simulations.voice import VoiceChannel

from . import harness, options
from .harness import CpuMeter, log, median, percentile

MODEL_ID = "svc-stt"

# What a caller says in one turn to an agent that books, sells and supports: 5 to 20 words.
SENTENCES = [
    "I would like to book an appointment for Tuesday.",
    "Hi, I'm calling about my order, it still hasn't arrived.",
    "Can you tell me what time you open on Saturday?",
    "My account number is four five six seven, and I need to change my address.",
    "Yes, that works for me. Could you send me a confirmation by email?",
    "No, I already tried restarting it twice and it still doesn't work.",
    "I'd like to cancel my subscription, please.",
    "What's the price of the premium plan per month?",
    "Sure, my name is Sarah Johnson and my date of birth is March third.",
    "Is there any way to get a refund for the last payment?",
    "Could you move my booking to next Friday afternoon instead?",
    "I'm not sure, can you explain the difference between the two options?",
    "The internet keeps dropping every evening around eight o'clock.",
    "Okay, thank you, that's all I needed today.",
    "I want to speak to someone about a charge on my credit card that I don't recognise.",
    "Yes please, go ahead and schedule it.",
]


def csv_loads(text: str) -> list[tuple[int, int]]:
    loads = []
    for part in text.split(","):
        if part.strip():
            concurrency, _, threads = part.strip().lower().partition("x")
            loads.append((int(concurrency), int(threads)))
    return loads


def parse_args(argv=None):
    parser = options.parser("bench_voice_turn", __doc__)
    parser.add_argument("--turns", type=int, default=24,
                        help="measured turns per line and cell, the sentences in turn (default 24)")
    parser.add_argument("--load", type=csv_loads, default=[(1, 2), (2, 1)],
                        help="CONCURRENCYxTHREADS per cell, comma-separated (default 1x2,2x1: two cores either way)")
    parser.add_argument("--snr-db", type=float, default=20.0,
                        help="the telephone line's signal-to-noise ratio in dB (default 20)")
    parser.add_argument("--language", default="en", help="the synthesiser's language tag (default en)")
    args = parser.parse_args(argv)
    if args.turns < 1 or any(c < 1 or t < 1 for c, t in args.load):
        parser.error("--turns and the numbers of --load must be positive")
    return args


def convert_model(work) -> str:
    from stt.models import available_models, prepare
    return str(prepare(available_models(work)[MODEL_ID]))


def run_cell(args, model: str, concurrency: int, threads: int) -> dict:
    """The turns of one cell, clean and over the line alternately: each line's Heard list and the
    cell's wall time per line."""
    from stt.engine import Transcriber  # pywhispercpp: loaded when a cell runs, not for --help

    transcriber = Transcriber(model, n_threads=threads, instances=concurrency)

    def transcribe(samples):
        return transcriber.transcribe(samples).text

    channels = {"clean": VoiceChannel(transcribe, language=args.language),
                "telephone": VoiceChannel(transcribe, telephone=True, snr_db=args.snr_db, language=args.language)}
    for channel in channels.values():  # load and warm each context's weights outside the figures
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(channel.hear, SENTENCES[:concurrency]))
    heard: dict[str, list] = {line: [] for line in channels}
    wall = {line: 0.0 for line in channels}
    cpu = {line: 0.0 for line in channels}
    texts = [SENTENCES[i % len(SENTENCES)] for i in range(args.turns)]
    with ThreadPoolExecutor(concurrency) as pool:
        # A batch of `concurrency` turns at a time, clean then telephone, so both lines meet the same load.
        for start in range(0, len(texts), concurrency):
            batch = texts[start:start + concurrency]
            for line, channel in channels.items():
                began, began_cpu = time.perf_counter(), cpu_seconds()
                heard[line] += list(pool.map(channel.hear, batch))
                wall[line] += time.perf_counter() - began
                cpu[line] += cpu_seconds() - began_cpu
    return {"heard": heard, "wall": wall, "cpu": cpu}


def cpu_seconds() -> float:
    """This process's CPU time, all threads (whisper.cpp's included)."""
    t = os.times()
    return t.user + t.system


def row(load: str, line: str, heard: list, wall: float, cpu: float) -> str:
    synthesis = [h.synthesis_ms for h in heard]
    transcription = [h.transcription_ms for h in heard]
    total = [h.synthesis_ms + h.transcription_ms for h in heard]
    audio = [h.audio_ms for h in heard]
    rtf = [t / a for t, a in zip(total, audio)]

    def mp(values, digits=0):
        return f"{median(values):.{digits}f} / {percentile(values, 90):.{digits}f}"

    return (f"| {load} | {line} | {len(heard)} | {mp(synthesis, 1)} | {mp(transcription)} | {mp(total)} | "
            f"{median(audio) / 1000:.2f} | {mp(rtf, 3)} | {mean(h.wer for h in heard):.3f} | "
            f"{len(heard) / wall * 60:.0f} | {cpu / len(heard) * 1000:.0f} |")


def main(argv=None) -> int:
    args = parse_args(argv)
    command = shlex.join(["scripts/bench_voice_turn", *(sys.argv[1:] if argv is None else argv)])
    rows, outside = [], []
    with harness.CLEANUP.guard():
        work = harness.scratch_dir("bench_voice_turn_")
        log("converting the bundled tiny.en weights")
        model = convert_model(work)
        for concurrency, threads in args.load:
            load = f"{concurrency} x {threads}"
            log(f"cell {load}: {args.turns} turns per line")
            meter = CpuMeter([])
            cell = run_cell(args, model, concurrency, threads)
            outside.append((load, meter.cores()[1]))
            for line in ("clean", "telephone"):
                rows.append(row(load, line, cell["heard"][line], cell["wall"][line], cell["cpu"][line]))
    print("| turns at once x whisper threads | line | turns | synthesis ms (median / p90) | transcription ms "
          "(median / p90) | total ms (median / p90) | audio s (median) | real-time factor (median / p90) | "
          "WER (mean) | turns per minute | CPU ms per turn |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(f"\nSynthesis is eSpeak NG's speech plus, for the telephone line, 8 kHz G.711 µ-law with noise at "
          f"{args.snr_db:g} dB SNR, and the resampling to 16 kHz; transcription is the bundled tiny.en model's call. "
          f"{os.cpu_count()} cores; busy elsewhere meanwhile: "
          f"{', '.join(f'{load}: {cores:.2f} cores' for load, cores in outside)}.")
    print(f"\n`{command}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
