"""Handlers of telephony: phone numbers, the phone book, the do-not-call list, schedules and inbound routing."""
