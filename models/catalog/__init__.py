"""The models a workspace may use: the speech models the speech server serves, and the language
models its agents, simulations and optimizer may ask."""
