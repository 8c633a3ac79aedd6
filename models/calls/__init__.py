"""Calls: what the end-of-call-report records, tags, recordings and their transcription, the
structured data agents extract (insights) and its analytics, the export, and retention."""
