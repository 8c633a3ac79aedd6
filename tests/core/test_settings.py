"""Settings read from the environment, and what they derive."""
from __future__ import annotations

import pytest

from core.settings import Settings


@pytest.mark.parametrize("url, threads, pool, expected", [
    (None, None, 20, 1),  # SQLite answers in-process: one thread keeps a core busy
    ("sqlite:///x.sqlite3", None, 20, 1),
    ("postgresql://u@h/db", None, 20, 2),  # a second thread works while the first waits on the socket
    ("postgresql://u@h/db", 8, 20, 8),
    ("postgresql://u@h/db", 8, 4, 3),  # with the event loop's connection, never more than the pool
    ("postgresql://u@h/db", None, 2, 1),
    ("postgresql://u@h/db", None, 1, 1),  # at least one
])
def test_handler_threads(url, threads, pool, expected):
    assert Settings(database_url=url, api_threads=threads, db_pool_size=pool).handler_threads() == expected


def test_api_threads_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("API_THREADS", "3")
    assert Settings.from_env().api_threads == 3
    monkeypatch.setenv("API_THREADS", "")
    assert Settings.from_env().api_threads is None


def test_a_bad_boolean_is_refused_with_its_name(monkeypatch):
    monkeypatch.setenv("RATE_LIMITS_ENABLED", "maybe")
    with pytest.raises(ValueError, match="RATE_LIMITS_ENABLED"):
        Settings.from_env()
