"""Personas: the simulated callers that simulations put on the line against an agent, each with a
goal, traits, a language, what it knows, what it never does and how it ends a call."""
