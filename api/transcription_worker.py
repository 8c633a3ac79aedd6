"""Threads of an API process that transcribe uploaded call recordings (models.calls.transcription).

Each thread claims a due job, transcribes the call's file with the project's own engine (the stt
package, in this process: no hop through the speech server, whose upload limits are for clients),
and stores the transcript with word timings on the call. While it works, a timer renews the job's
lease, so no other process takes it; if this process dies, the lease runs out and another does.
A file the engine cannot decode fails at once with the engine's reason; any other fault is
retried (models.calls.transcription.MAX_ATTEMPTS). The model loads on the first job, not at start-up.
"""
from __future__ import annotations

import logging
import threading

from core.settings import Settings
from models.calls import transcription
from models.kernel.db import session

from .claiming_threads import ClaimingThreads, HeldLease

log = logging.getLogger("api.transcription")
# How often an idle thread looks for a job.
POLL_S = 1.0
# The longest recording transcribed: a call of four hours. The file is decoded and transcribed
# about 30 s at a time (stt.passes), so its length bounds the time a job takes, not its memory.
MAX_RECORDING_SECONDS = 4 * 3600.0


class TranscriptionWorkers(ClaimingThreads):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.transcription_workers, "transcription", POLL_S, log)
        self.settings = settings
        self._engine = None
        self._engine_lock = threading.Lock()

    def claim(self) -> transcription.Claimed | None:
        return transcription.claim(self.settings.transcription_lease_s)

    def _transcriber(self):
        with self._engine_lock:
            if self._engine is None:
                from stt import Transcriber, default_model_path
                model = self.settings.stt_model_path or default_model_path(self.settings.data_dir)
                self._engine = Transcriber(model, n_threads=self.settings.stt_threads,
                                           instances=max(1, self.settings.transcription_workers))
            return self._engine

    def work(self, job: transcription.Claimed) -> None:
        lease_s = self.settings.transcription_lease_s
        from stt import AudioError
        # Re-uploaded or deleted meanwhile: the renewal stops and the outcome is not stored.
        held = HeldLease(job, lambda job: transcription.renew(job, lease_s), lease_s, log, f"call {job.call_id}")
        outcome: tuple = ()
        with held:
            try:
                if not job.path:
                    raise AudioError("the call has no recording file")
                result = self._transcribe(job.path)
                words = [{"word": w.word, "start": w.start, "end": w.end, "confidence": round(w.confidence, 4)}
                         for w in result.words]
                outcome = ("done", result.text.strip(), words, result.language)
            except Interrupted:
                outcome = ("interrupted",)
            except AudioError as exc:
                outcome = ("failed", f"The recording could not be transcribed: {exc}.", False)
            except Exception as exc:
                log.exception("transcribing the recording of call %s failed", job.call_id)
                outcome = ("failed", f"Transcription failed ({type(exc).__name__}).", True)
        try:
            with session():
                if outcome[0] == "interrupted":
                    transcription.release(held.job)
                elif outcome[0] == "done":
                    transcription.complete(held.job, text=outcome[1], words=outcome[2], language=outcome[3])
                else:
                    transcription.fail(held.job, outcome[1], retry=outcome[2])
        except Exception:
            log.exception("storing the transcription of call %s failed; its lease will run out and it is retried",
                          job.call_id)

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
