"""Telephony: the workspace's phone numbers and where their calls go (inbound routing), its phone
book, its do-not-call list, and the business-hours schedules campaigns and routing share."""
