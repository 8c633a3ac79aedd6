"""A real speech server process, on a model converted once per test run from the bundled weights."""
from __future__ import annotations

import pytest

from tests.support.speech_server import start_stt, stop_stt


@pytest.fixture(scope="module")
def stt(tmp_path_factory, converted_model):
    server = start_stt(tmp_path_factory.mktemp("stt"), converted_model)
    yield server
    stop_stt(server)
