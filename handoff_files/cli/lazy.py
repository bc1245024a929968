"""Lazy handlers: a command's module (and the library modules it uses) is imported only when it runs."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

__all__ = ["Handler", "handler"]

Handler = Callable[[argparse.Namespace], str]


def handler(module: str, name: str) -> Handler:
    """The handler ``cmd_<name>`` of ``handoff_files.cli.<module>``, imported only when it runs."""

    def run(args: argparse.Namespace) -> str:
        handler: Handler = getattr(importlib.import_module(f"handoff_files.cli.{module}"), f"cmd_{name}")
        return handler(args)

    run.__name__ = f"cmd_{name}"
    return run
