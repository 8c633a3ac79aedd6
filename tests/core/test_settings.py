"""Settings read from the environment, and what they derive."""
from __future__ import annotations

import dataclasses

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


FIELDS = {field.name: field for field in dataclasses.fields(Settings)}
# A value of each type, unlike every default, and what it reads as.
SAMPLES = {"int": ("7", 7), "float": ("2.5", 2.5), "str": ("warning", "warning")}


@pytest.fixture
def clean_env(monkeypatch):
    for name in FIELDS:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_unset_variables_leave_every_default(clean_env):
    assert Settings.from_env() == Settings()


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_each_field_is_read_from_its_variable(clean_env, name):
    kind = FIELDS[name].type.removesuffix(" | None")
    if kind == "bool":
        text, expected = ("false", False) if FIELDS[name].default else ("true", True)
    else:
        text, expected = SAMPLES[kind]
    clean_env.setenv(name.upper(), text)
    value = getattr(Settings.from_env(), name)
    if name == "log_level":
        expected = "WARNING"  # logging's names are upper case
    assert value == expected and value != FIELDS[name].default


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_an_empty_variable_is_unset_except_for_plain_text(clean_env, name):
    clean_env.setenv(name.upper(), "")
    expected = "" if FIELDS[name].type == "str" else FIELDS[name].default
    assert getattr(Settings.from_env(), name) == expected


def test_names_types_and_numbers_as_documented(clean_env):
    clean_env.setenv("API_PORT", "9000")
    clean_env.setenv("DB_POOL_TIMEOUT_S", "0.5")
    clean_env.setenv("LOG_FORMAT", "JSON")
    clean_env.setenv("DATABASE_URL", "postgresql://u@h/db")
    clean_env.setenv("API_THREADS", "0")  # 0: the default by database
    settings = Settings.from_env()
    assert (settings.api_port, settings.db_pool_timeout_s, settings.log_format) == (9000, 0.5, "json")
    assert (settings.database_url, settings.api_threads) == ("postgresql://u@h/db", None)


def test_a_bad_number_is_refused(clean_env):
    clean_env.setenv("API_PORT", "eighty")
    with pytest.raises(ValueError, match="eighty"):
        Settings.from_env()
