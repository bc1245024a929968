"""The package's version: one string, importable without importing anything else."""

from __future__ import annotations

from typing import Final

__all__ = ["VERSION"]

#: The version of handoff-files (``handoff_files.__version__``).
VERSION: Final = "0.1.0"
