"""Live calls: calls registered by their runtime as they start, their status moves, and the control
requests people send them while they run."""
