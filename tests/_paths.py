"""Where the suite's files are, for a test at any depth under ``tests/``."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
"""The ``tests/`` folder: shared helpers (``_*.py``), ``data/`` and ``snapshots/``."""
ROOT = TESTS.parent
"""The repository's root."""
DATA = TESTS / "data"
"""Recorded transcripts, stores and sessions the tests read."""
