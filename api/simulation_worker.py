"""Threads of an API process that run simulations' iterations (models.simulations.execution).

Each thread claims a due iteration, reads what it runs, and holds its conversation with the
chat-completions endpoint (no database connection held while a side thinks); a timer renews the
iteration's lease meanwhile, so no other process takes it, and if this process dies the lease runs
out and another takes the iteration again. Before each turn the conversation asks whether the
iteration is still this worker's: a cancelled simulation's conversations stop there. An endpoint
that fails in a way that may pass fails the attempt, retried after a delay until MAX_ATTEMPTS; a
refused key fails the iteration at once.

In voice mode the caller's turns are synthesised, degraded to telephone audio when asked, and
transcribed by the project's own speech engine in this process (models.simulations.voice); the
model loads on the first voice iteration, not at start-up.
"""
from __future__ import annotations

import logging
import threading

from core.settings import Settings
from models.conversations.engine import Cancelled, Heard
from models.integrations import llm
from models.kernel import chat_completions
from models.kernel.chat_completions import ChatCompletionError
from models.kernel.db import session
from models.kernel.leases import backoff_s
from models.simulations import execution, voice

from .claiming_threads import ClaimingThreads, HeldLease

log = logging.getLogger("api.simulations")
# How often an idle thread looks for an iteration queued by another process (this one's wake it).
POLL_S = 1.0


class SimulationWorkers(ClaimingThreads):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.simulation_workers, "simulation", POLL_S, log, due_table=execution.TABLE)
        self.settings = settings
        self._engine = None
        self._engine_lock = threading.Lock()

    def claim(self) -> execution.Claimed | None:
        return execution.claim(self.settings.simulation_lease_s)

    def _retry_in_s(self, attempt: int) -> float:
        # A quarter of the lease at first, doubling, full jitter: a short lease (a test's) retries fast.
        base = min(5.0, self.settings.simulation_lease_s / 4)
        return backoff_s(attempt - 1, base, 20 * base)

    def _transcriber(self):
        with self._engine_lock:
            if self._engine is None:
                from stt import Transcriber, default_model_path
                model = self.settings.stt_model_path or default_model_path(
                    self.settings.data_dir, weights=self.settings.stt_weights)
                self._engine = Transcriber(model, n_threads=self.settings.stt_threads,
                                           instances=max(1, self.settings.simulation_workers))
            return self._engine

    def _hearing(self, options: dict, language: str):
        transcriber = self._transcriber()

        def transcribe(samples) -> str:
            return transcriber.transcribe(samples, words=False).text

        channel = voice.VoiceChannel(transcribe, telephone=bool(options.get("telephone")),
                                     snr_db=options.get("snrDb"), language=language)

        def hear(text: str) -> Heard:
            heard = channel.hear(text)
            return Heard(heard.heard, heard.wer, round(heard.audio_ms))

        return hear

    def work(self, job: execution.Claimed) -> None:
        settings = self.settings
        try:
            with session():
                endpoint = llm.endpoint_for(job.workspace_id)
                if job.attempt > execution.MAX_ATTEMPTS:
                    execution.interrupted(job)
                    return
                if endpoint is None:
                    execution.fail(job, chat_completions.NOT_CONFIGURED, retry=False)
                    return
                task = execution.task(job)
        except Exception:
            log.exception("reading simulation iteration %s failed; its lease will run out and it is retried",
                          job.iteration_id)
            return
        # Cancelled or taken over: the renewal stops, and the conversation at its next turn.
        held = HeldLease(job, lambda job: execution.renew(job, settings.simulation_lease_s),
                         settings.simulation_lease_s, log, f"simulation iteration {job.iteration_id}")

        def stop() -> bool:
            if self.stopping:
                return True  # the process is stopping: the lease runs out and another resumes it
            with session():
                return not held.check(execution.still_running)

        failure: tuple | None = None
        outcome = None
        with held:
            try:
                hear = None
                if task.voice is not None:
                    language = task.persona.language if task.persona is not None else task.agent.language
                    hear = self._hearing(task.voice, language)
                outcome = execution.run(endpoint, task, hear=hear, stop=stop)
            except Cancelled:
                return
            except ChatCompletionError as exc:
                failure = (exc.message, exc.retryable)
            except voice.VoiceError as exc:
                failure = (f"Voice mode failed: {exc}", False)
            except Exception as exc:
                log.exception("simulation iteration %s failed", job.iteration_id)
                failure = (f"The conversation failed ({type(exc).__name__}).", True)
        try:
            with session():
                if failure is None:
                    execution.complete(held.job, outcome)
                else:
                    execution.fail(held.job, failure[0], retry=failure[1],
                                   retry_in_s=self._retry_in_s(held.job.attempt))
        except Exception:
            log.exception("storing simulation iteration %s failed; its lease will run out and it is retried",
                          job.iteration_id)
