"""Threads of an API process that generate optimization runs' solutions (models.optimization.generation).

Each thread claims a due run. A built-in run's configuration and feedback are read, the
workspace's endpoint is asked (its llm integration, else LLM_BASE_URL: models.integrations.llm; no
database connection held while it thinks), and the answer
is checked and stored; while the endpoint thinks, a timer renews the run's lease, so no other
process takes it; if this process dies, the lease runs out and another takes the run again. An
endpoint that fails (unreachable, timeout, 429, a malformed answer) fails the attempt, retried after
a delay until MAX_ATTEMPTS; a refused key fails the run at once. An external optimizer's run is
claimed only once its deadline has passed, and fails.
"""
from __future__ import annotations

import logging

from core.settings import Settings
from models.integrations import llm
from models.kernel.chat_completions import ChatCompletionError
from models.kernel.db import session
from models.kernel.leases import backoff_s
from models.optimization import generation, optimizer, runs

from .claiming_threads import ClaimingThreads, HeldLease

log = logging.getLogger("api.optimization")
# How often an idle thread looks for a run.
POLL_S = 1.0


class OptimizationWorkers(ClaimingThreads):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.optimization_workers, "optimization", POLL_S, log)
        self.settings = settings

    def claim(self) -> generation.Claimed | None:
        return generation.claim(self.settings.optimization_lease_s)

    def _retry_in_s(self, attempt: int) -> float:
        # A quarter of the lease at first, doubling, full jitter: a short lease (a test's) retries fast.
        base = min(5.0, self.settings.optimization_lease_s / 4)
        return backoff_s(attempt - 1, base, 20 * base)

    def work(self, job: generation.Claimed) -> None:
        settings = self.settings
        try:
            with session():
                if job.optimizer == "external":
                    generation.expired(job, settings.external_optimizer_timeout_s)
                    return
                if job.attempt > generation.MAX_ATTEMPTS:
                    generation.interrupted(job)
                    return
                # The workspace's llm integration, else LLM_BASE_URL (models.integrations.llm).
                endpoint = llm.endpoint_for(job.workspace_id)
                if endpoint is None:
                    generation.fail(job, runs.NO_ENDPOINT, retry=False)
                    return
                asked = generation.inputs(job)
        except Exception:
            log.exception("reading optimization run %s failed; its lease will run out and it is retried", job.run_id)
            return
        # Deleted or finished meanwhile: the renewal stops and the outcome is not stored.
        held = HeldLease(job, lambda job: generation.renew(job, settings.optimization_lease_s),
                         settings.optimization_lease_s, log, f"optimization run {job.run_id}")
        failure: tuple | None = None
        proposals: list = []
        with held:
            try:
                proposals = optimizer.propose(endpoint, asked.config, asked.feedback, asked.instructions)
            except ChatCompletionError as exc:
                failure = (exc.message, exc.retryable)
            except Exception as exc:
                log.exception("generating optimization run %s failed", job.run_id)
                failure = (f"Generation failed ({type(exc).__name__}).", True)
        try:
            with session():
                if failure is None:
                    generation.complete(held.job, proposals)
                else:
                    generation.fail(held.job, failure[0], retry=failure[1],
                                    retry_in_s=self._retry_in_s(held.job.attempt))
        except Exception:
            log.exception("storing optimization run %s failed; its lease will run out and it is retried",
                          job.run_id)
