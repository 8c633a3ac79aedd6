"""Timestamps as the API writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def recent(timestamp: str) -> bool:
    return abs(datetime.fromisoformat(timestamp) - datetime.now(UTC)) < timedelta(minutes=1)
