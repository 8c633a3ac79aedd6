"""What a workspace's vocabulary does to the speech server's transcripts, and what it costs.

One run starts the speech server (the bundled tiny.en weights) with two workspaces: one without a
vocabulary, one with a vocabulary of --terms terms (the terms the sentences say, and fillers up to
that count). eSpeak NG says a sentence holding each term's spoken form ("My zed ex nine router...");
each clip is posted to POST /v1/audio/transcriptions as each workspace, alternately, --reps times.
It prints:

1. the word error rate of the transcripts against the sentences with the written forms ("My ZX-9
   router..."), and how many transcripts hold the written form exactly, with and without the
   vocabulary;
2. the real-time factor (client-side wall time of a request over the clip's length: median and p90)
   with and without it, and their ratio: what the vocabulary's prompt and rewriting cost.

Prints a Markdown table and the command line on stdout; progress goes to stderr.

    .venv/bin/python scripts/bench_vocabulary [--reps 3] [--terms 200] [--threads 1]
"""
from __future__ import annotations

import shlex
import sys
import time

import httpx

from stt.scoring import wer, words
from tests.support.vocabulary_audio import TERMS, customise, fillers, reference, said, wav_of

from . import harness, options
from .harness import log, median, percentile

MODEL_ID = "svc-stt"


def parse_args(argv=None):
    parser = options.parser("bench_vocabulary", __doc__, options.engine("whisper.cpp threads (STT_THREADS)"))
    parser.add_argument("--reps", type=int, default=3, help="passes over the clips per workspace (default 3)")
    parser.add_argument("--terms", type=int, default=200,
                        help=f"terms in the vocabulary, at least the {len(TERMS)} the clips say (default 200)")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.threads < 1 or args.terms < len(TERMS):
        parser.error(f"--reps and --threads must be positive and --terms at least {len(TERMS)}")
    return args


def convert_model(work) -> str:
    from stt.models import available_models, prepare
    return prepare(available_models(work)[MODEL_ID])


def transcribe(client: httpx.Client, url: str, token: str, audio: bytes) -> tuple[str, float]:
    started = time.perf_counter()
    answer = client.post(url, headers={"Authorization": f"Bearer {token}"},
                         files={"file": ("clip.wav", audio, "audio/wav")}, timeout=300)
    took = time.perf_counter() - started
    answer.raise_for_status()
    return answer.json()["text"], took


def main(argv=None) -> int:
    args = parse_args(argv)
    command = shlex.join(["scripts/bench_vocabulary", *(sys.argv[1:] if argv is None else argv)])
    with harness.CLEANUP.guard():
        work = harness.scratch_dir("bench_vocabulary_")
        log("converting the bundled tiny.en weights")
        stt = harness.start_stt_server(work, convert_model(work), STT_THREADS=args.threads, STT_WORKERS=1,
                                       LOG_LEVEL="WARNING")
        plain = {"token": stt.token}
        custom = harness.bootstrap(stt.env, "Custom", "custom@example.com")
        customise(stt.env, custom, terms=[[w, [s]] for w, s, _ in TERMS] + fillers(args.terms - len(TERMS)))
        log(f"synthesising {len(TERMS)} clips")
        clips = [(wav_of(said(sentence, spoken)), reference(sentence, written), written)
                 for written, spoken, sentence in TERMS]
        url = f"http://127.0.0.1:{stt.port}/v1/audio/transcriptions"
        seen = {"without": [], "with": []}  # (wer, written form found, real-time factor)
        with httpx.Client() as client:
            transcribe(client, url, plain["token"], clips[0][0][0])  # the model loaded, outside the figures
            for rep in range(args.reps):
                log(f"pass {rep + 1} of {args.reps}")
                for (audio, seconds), expected, written in clips:
                    for name, token in (("without", plain["token"]), ("with", custom["token"])):
                        text, took = transcribe(client, url, token, audio)
                        seen[name].append((wer(words(expected), words(text)), written in text, took / seconds))
    print("| vocabulary | transcripts | WER (mean) | written form found | real-time factor (median / p90) |")
    print("|---|---:|---:|---:|---:|")
    for name, label in (("without", "none"), ("with", f"{args.terms} terms")):
        rows = seen[name]
        rtf = [r[2] for r in rows]
        print(f"| {label} | {len(rows)} | {sum(r[0] for r in rows) / len(rows):.3f} | "
              f"{sum(r[1] for r in rows)} of {len(rows)} | {median(rtf):.3f} / {percentile(rtf, 90):.3f} |")
    ratio = median([r[2] for r in seen["with"]]) / median([r[2] for r in seen["without"]])
    print(f"\nReal-time factor with the vocabulary over without (medians): {ratio:.2f}. Clips: eSpeak NG saying "
          f"{len(TERMS)} sentences, one term each; {args.threads} whisper.cpp threads, one request at a time.")
    print(f"\n`{command}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
