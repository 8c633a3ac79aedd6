"""The wire shapes of simulations and their iterations, shared by their handlers."""
from __future__ import annotations

from handlers.wire import iso
from models.simulations.iterations import IterationDetail, IterationRecord, VerdictRecord
from models.simulations.simulations import SimulationRecord


def simulation_shape(record: SimulationRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name,
            "entityType": record.entity_type, "entityId": record.entity_id, "versionId": record.version_id,
            "versionNumber": record.version_number, "agentId": record.agent_id,
            "personas": [{"id": p["id"], "name": p["name"]} for p in record.personas],
            "scenarios": record.scenarios, "script": record.script,
            "assertions": [{"id": a["id"], "suiteId": a["suiteId"], "name": a["name"], "kind": a["kind"]}
                           for a in record.assertions],
            "suiteIds": record.suite_ids, "suiteId": record.suite_id, "conversations": record.conversations,
            "maxTurns": record.max_turns, "voice": record.voice, "baselineId": record.baseline_id,
            "status": record.status,
            "counts": {"total": record.iteration_count, "queued": record.queued_count,
                       "running": record.running_count, "completed": record.completed_count,
                       "passed": record.passed_count, "failed": record.failed_count,
                       "cancelled": record.cancelled_count},
            "usage": {"promptTokens": record.prompt_tokens, "completionTokens": record.completion_tokens},
            "cost": record.cost, "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "updatedAt": iso(record.updated_at), "startedAt": iso(record.started_at),
            "finishedAt": iso(record.finished_at)}


def iteration_shape(record: IterationRecord, simulation: SimulationRecord) -> dict:
    persona = simulation.personas[record.persona_index] if record.persona_index is not None else None
    scenario = simulation.scenarios[record.scenario_index] if record.scenario_index is not None else None
    return {"id": record.id, "simulationId": record.simulation_id, "number": record.number,
            "persona": {"id": persona["id"], "name": persona["name"]} if persona else None,
            "scenario": scenario, "status": record.status, "passed": record.passed, "endedBy": record.ended_by,
            "durationMs": record.duration_ms, "wordErrorRate": record.word_error_rate,
            "usage": {"promptTokens": record.prompt_tokens, "completionTokens": record.completion_tokens},
            "cost": record.cost, "error": record.error, "attempts": record.attempts,
            "createdAt": iso(record.created_at), "startedAt": iso(record.started_at),
            "finishedAt": iso(record.finished_at)}


def verdict_shape(record: VerdictRecord) -> dict:
    return {"id": record.id, "assertionId": record.assertion_id, "name": record.name, "kind": record.kind,
            "evaluator": record.evaluator, "passed": record.passed, "reason": record.reason,
            "createdAt": iso(record.created_at)}


def iteration_detail_shape(detail: IterationDetail, simulation: SimulationRecord) -> dict:
    return {**iteration_shape(detail.iteration, simulation), "transcript": detail.transcript,
            "structured": detail.structured, "verdicts": [verdict_shape(v) for v in detail.verdicts]}
