"""Feedback: what people flag about calls, agents and workflows, its statuses, assignees, comments,
and the references that tie each feedback to the calls, versions, solutions, reviews, personas and
simulations it concerns."""
