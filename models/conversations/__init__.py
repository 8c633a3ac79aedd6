"""Conversations between an agent version and a caller, as simulations and chat sessions hold them."""
