"""Unit tests of agents: suites of assertions (expected behaviours of an agent in a conversation),
the agents and workflows each suite is assigned to, and the evaluation of an assertion on a
finished conversation (rules run here, a judge asks the chat-completions endpoint)."""
