"""Handlers of the campaigns domain: campaigns, their contacts, and their execution."""
