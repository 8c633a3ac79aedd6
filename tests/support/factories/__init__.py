"""Test data, made straight through the domain (no HTTP), one module per domain. Each factory runs in
a session of its own on whatever database the models are bound to; a test reads them as
``factories.workspace(...)``, ``factories.agent(...)``, whichever domain they come from."""
from tests.support.factories.assertions import assertion, assignment, suite
from tests.support.factories.audio import audio_file, audio_transcription
from tests.support.factories.call_access import share_link, web_call_token
from tests.support.factories.call_records import csv_body, import_row, ndjson_body
from tests.support.factories.calls import call, insight, report
from tests.support.factories.campaigns import (
    campaign,
    campaign_row,
    claimed_attempt,
    contact_rows,
    numbers,
    set_contact_state,
)
from tests.support.factories.chat import chat_messages, chat_session
from tests.support.factories.configs import agent, save_versions, workflow
from tests.support.factories.dashboards import widget
from tests.support.factories.exports import export, run_exports
from tests.support.factories.feedback import assignee, comment, feedback
from tests.support.factories.identity import Actor, api_key, expire_tokens, member, principal, workspace
from tests.support.factories.integrations import integration
from tests.support.factories.knowledge import article, attachment, knowledge_base
from tests.support.factories.knowledge_documents import document
from tests.support.factories.live_calls import control, live_call, live_version
from tests.support.factories.optimization import generate, optimization_run, proposal, run_solutions, set_run
from tests.support.factories.personas import persona
from tests.support.factories.reviews import done_review, feedback_reference, review
from tests.support.factories.simulations import simulate, simulation
from tests.support.factories.speech import speech_filter, term
from tests.support.factories.syncs import run_syncs, runtime, sync
from tests.support.factories.telephony import phone_alias, phone_number, schedule, suppressed
from tests.support.factories.webhooks import webhook_subscription

__all__ = ["Actor", "agent", "api_key", "article", "assertion", "assignee", "assignment", "audio_file", "call", "campaign", "campaign_row",
           "chat_messages", "chat_session", "claimed_attempt", "comment", "contact_rows", "control", "csv_body",
           "document",
           "done_review", "expire_tokens", "export", "feedback", "feedback_reference", "generate", "import_row", "insight",
           "integration", "knowledge_base",
           "live_call", "live_version", "member", "ndjson_body", "numbers", "optimization_run", "persona",
           "phone_alias", "phone_number", "principal", "proposal", "report", "review", "run_exports", "run_solutions",
           "save_versions", "schedule", "set_contact_state", "set_run", "share_link", "simulate", "simulation",
           "suite", "suppressed", "web_call_token", "webhook_subscription", "widget", "workflow", "workspace"]
__all__ += ["speech_filter", "term"]
__all__ += ["audio_transcription"]
__all__ += ["run_syncs", "runtime", "sync"]
__all__ += ["attachment"]
