"""Third-party integrations of a workspace: telephony, LLM endpoints, CRMs and agent runtimes."""
