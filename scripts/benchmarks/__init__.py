"""The benchmarks, one module each, with what they share (``harness``: servers, scratch data, load
generators, percentiles; ``options``: the command-line options they have in common).

Each module's ``main(argv)`` runs it; ``scripts/<name>`` is its command, a few lines calling ``run``.
Not part of the installed package: this folder lives under scripts/, outside setup.cfg's packages.
"""
from __future__ import annotations

import importlib
import sys

from . import harness


def run(name: str, *needs: str) -> None:
    """Run the benchmark module ``name`` as a command: first, when any of ``needs`` (its third-party
    modules) cannot be imported, start again under the checkout's .venv (harness.use_venv), since a
    module cannot be imported before its imports resolve."""
    harness.use_venv(*needs)
    sys.exit(importlib.import_module(f"{__name__}.{name}").main())
