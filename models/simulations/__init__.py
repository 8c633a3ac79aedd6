"""Simulations: simulated conversations with an agent, their iterations and verdicts, and voice mode."""
