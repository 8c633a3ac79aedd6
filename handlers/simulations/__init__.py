"""Handlers of simulations, their iterations and suite runs."""
