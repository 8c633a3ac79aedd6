"""What a call's end-of-call-report says of how it went, read from its endedReason as call
runtimes word it: the one reading that campaign outcomes and call metrics share.

A reason of ``UNREACHED`` means nobody took part (no answer, busy, voicemail, a bad number, a
failure to connect); any other reason, an unknown one or none included, is a call that took
place: answered. Of the answered calls, those that ended as a conversation ends (either side hung
up, or the agent handed the call on: ``ENDED_BY_A_PARTY``) are completed; the others ended on an
error, a timeout, silence or a reason this service does not know.
"""
from __future__ import annotations

# endedReason (trimmed, in lower case) -> the campaign outcome it means.
UNREACHED = {
    "customer-did-not-answer": "no-answer", "no-answer": "no-answer",
    "customer-busy": "busy", "busy": "busy",
    "voicemail": "voicemail",
    "invalid-number": "invalid-number", "phone-number-invalid": "invalid-number",
    "failed-to-connect": "failed", "call-failed": "failed", "error": "failed",
}
ENDED_BY_A_PARTY = frozenset({
    "customer-ended-call", "assistant-ended-call", "assistant-said-end-call-phrase",
    "assistant-ended-call-after-message-spoken", "assistant-ended-call-with-hangup-task", "assistant-forwarded-call",
    "call-transferred",
})


def key(ended_reason: str | None) -> str:
    return (ended_reason or "").strip().lower()


def outcome_of_report(ended_reason: str | None) -> str:
    """The campaign outcome a report's endedReason means: one of ``UNREACHED``'s, else completed."""
    return UNREACHED.get(key(ended_reason), "completed")
