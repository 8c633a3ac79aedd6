"""Webhooks: the signing secrets of inbound reports, outbound subscriptions, their outbox and
delivery log, and the rules for the addresses they may reach."""
