"""Threads of an API process that transcribe uploaded call recordings (models.calls.transcription)
and, on demand, audio library files (models.audio.transcription): two kinds of leased job, one pool.

Each thread claims a due job of either kind, the kind it tries first alternating from one claim to
the next (a queue of recordings never keeps an audio file waiting for long, nor the other way
round), transcribes the file with the project's own engine (the stt package, in this process: no
hop through the speech server, whose upload limits are for clients), and stores the transcript
with word timings. While it works, a timer renews the job's lease, so no other process takes it;
if this process dies, the lease runs out and another does. A file the engine cannot decode fails
at once with the engine's reason; any other fault is retried (MAX_ATTEMPTS of its kind). The model
loads on the first job, not at start-up.
"""
from __future__ import annotations

import itertools
import logging
import threading
from types import ModuleType
from typing import NamedTuple

from core.settings import Settings
from models.audio import transcription as audio_transcription
from models.calls import transcription
from models.kernel.db import session

from .claiming_threads import ClaimingThreads, HeldLease

log = logging.getLogger("api.transcription")
# How often an idle thread looks for a job.
POLL_S = 1.0


class Kind(NamedTuple):
    """A kind of transcription job: the module of its steps (claim, renew, complete, release,
    fail), what a log line calls one of its jobs, and what its failures say of its file."""
    jobs: ModuleType
    name: str  # a log line's "call <id>", "audio file <id>"
    key: str  # the Claimed field that names the job
    noun: str  # "The recording could not be transcribed: ..."
    missing: str  # the engine's reason when the claim found no file to read


RECORDINGS = Kind(transcription, "call", "call_id", "recording", "the call has no recording file")
AUDIO_FILES = Kind(audio_transcription, "audio file", "audio_id", "audio file", "the audio file was deleted")
KINDS = (RECORDINGS, AUDIO_FILES)


class Job(NamedTuple):
    kind: Kind
    claimed: NamedTuple  # the kind's Claimed


# The longest recording transcribed: a call of four hours. The file is decoded and transcribed
# about 30 s at a time (stt.passes), so its length bounds the time a job takes, not its memory.
MAX_RECORDING_SECONDS = 4 * 3600.0


class TranscriptionWorkers(ClaimingThreads):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.transcription_workers, "transcription", POLL_S, log)
        self.settings = settings
        self._engine = None
        self._engine_lock = threading.Lock()
        self._turns = itertools.count()  # next() is atomic: threads share the alternation

    def stop(self, wait_s: float | None = None) -> None:
        # A thread stops after the piece under way (at most 30 s of audio), which takes a few
        # seconds, longer on a busy host: wait for it up to the shutdown timeout, since a process
        # that exits while the engine runs is aborted and leaves its job to the lease's expiry.
        super().stop(self.settings.shutdown_timeout_s if wait_s is None else wait_s)

    def claim(self) -> Job | None:
        first = next(self._turns) % len(KINDS)
        for kind in KINDS[first:] + KINDS[:first]:
            claimed = kind.jobs.claim(self.settings.transcription_lease_s)
            if claimed is not None:
                return Job(kind, claimed)
        return None

    def _transcriber(self):
        with self._engine_lock:
            if self._engine is None:
                from stt import Transcriber, default_model_path
                model = self.settings.stt_model_path or default_model_path(
                    self.settings.data_dir, weights=self.settings.stt_weights)
                self._engine = Transcriber(model, n_threads=self.settings.stt_threads,
                                           instances=max(1, self.settings.transcription_workers))
            return self._engine

    def work(self, job: Job) -> None:
        lease_s = self.settings.transcription_lease_s
        from stt import AudioError
        kind, jobs = job.kind, job.kind.jobs
        what = f"{kind.name} {getattr(job.claimed, kind.key)}"
        # Re-uploaded, forced again or deleted meanwhile: the renewal stops and the outcome is not stored.
        held = HeldLease(job.claimed, lambda claimed: jobs.renew(claimed, lease_s), lease_s, log, what)
        outcome: tuple = ()
        with held:
            try:
                if not job.claimed.path:
                    raise AudioError(kind.missing)
                result = self._transcribe(job.claimed.path)
                words = [{"word": w.word, "start": w.start, "end": w.end, "confidence": round(w.confidence, 4)}
                         for w in result.words]
                outcome = ("done", result.text.strip(), words, result.language, result.duration)
            except Interrupted:
                outcome = ("interrupted",)
            except AudioError as exc:
                outcome = ("failed", f"The {kind.noun} could not be transcribed: {exc}.", False)
            except Exception as exc:
                log.exception("transcribing %s failed", what)
                outcome = ("failed", f"Transcription failed ({type(exc).__name__}).", True)
        try:
            with session():
                if outcome[0] == "interrupted":
                    jobs.release(held.job)
                elif outcome[0] == "done":
                    done = {"text": outcome[1], "words": outcome[2], "language": outcome[3]}
                    if kind is AUDIO_FILES:  # a call's duration is its report's
                        done["duration_seconds"] = outcome[4]
                    jobs.complete(held.job, **done)
                else:
                    jobs.fail(held.job, outcome[1], retry=outcome[2])
        except Exception:
            log.exception("storing the transcription of %s failed; its lease will run out and it is retried", what)

    def _transcribe(self, path: str):
        from stt.passes import FileTranscription
        engine = self._transcriber()
        file = FileTranscription(path, lambda samples, language: engine.transcribe(
            samples, language=language, word_timestamps=True), max_seconds=MAX_RECORDING_SECONDS)
        try:
            while not file.step():
                if self.stopping:
                    raise Interrupted()
            return file.result()
        finally:
            file.close()



class Interrupted(Exception):
    """The process is stopping: the job goes back to the queue for the next process."""
