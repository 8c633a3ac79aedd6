"""Optimization: runs in which an optimizer proposes changes (solutions) to an agent from its
feedback, and the review that accepts them as new versions closing that feedback."""
