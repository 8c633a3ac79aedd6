"""Campaigns: outbound calling of a list of contacts by one agent or workflow, within hours, and the
claims through which a call runtime takes the contacts that are due."""
