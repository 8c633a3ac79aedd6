"""Chat sessions: a person tests a version of an agent or a workflow by typing to it, message by
message, the agent side spoken by the conversation engine (models.conversations)."""
