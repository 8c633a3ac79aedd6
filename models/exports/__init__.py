"""Whole-workspace exports: a zip of NDJSON files, one per table the workspace owns, written by a
leased background job (api/export_worker.py)."""
