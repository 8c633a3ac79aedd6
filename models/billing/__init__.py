"""Billing: the credits ledger of each workspace."""
