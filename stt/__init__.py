"""Speech to text on whisper.cpp, on CPU-only hosts, with a model that ships with the install.

Embedding, without the server::

    from stt import Transcriber, default_model_path
    t = Transcriber(default_model_path("data"), n_threads=1)
    result = t.transcribe("call.mp3")          # a path, encoded bytes, or 16 kHz float32 samples
    result.text, result.language               # "And so my fellow ...", "english"
    [(w.word, w.confidence) for w in result.words]

The server (``python -m stt.server``) is a thin HTTP shell over the same objects.
"""
from importlib import import_module

_EXPORTS = {"AudioError": "audio", "decode": "audio", "Options": "engine", "Transcriber": "engine",
            "Transcript": "engine", "Word": "engine", "default_model_path": "models"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    # Imported on first use, so that ``python -m stt.ggml_convert`` does not load the engine.
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)
