"""Handlers of unit tests: suites, their assertions and their assignments to agents and workflows."""
