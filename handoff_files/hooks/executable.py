"""The ``handoff`` command install writes: one that runs from the agent's environment, not only from this shell.

An agent runs its hooks and MCP servers with its own ``PATH``, often not the shell's that ran
install (a virtual environment activated here, an agent started from a desktop launcher). A bare
``handoff`` there fails with exit 127. So install writes the bare name only when ``handoff`` on
this ``PATH`` is this very script and is not there merely because this virtual environment is
activated (a ``pipx``/``uv tool`` link, a system or ``--user`` install): then it is portable, and
the settings file works on a teammate's machine too. Otherwise it writes this script's absolute
path (or, when there is no script beside the interpreter, ``PYTHON -m handoff_files``), and says
so: the settings then hold this machine's path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["Resolved", "resolve_executable"]

#: The script's name, as the package installs it.
SCRIPT: Final = "handoff"


@dataclass(frozen=True, slots=True)
class Resolved:
    """The command to write, as a shell reads it, and why it is not the bare name (None when it is)."""

    command: str
    why: str | None


def resolve_executable(path: str | None = None) -> Resolved:
    """The ``handoff`` command for an agent's settings, found from the running interpreter.

    :param path: the ``PATH`` to look at (default: this process's).
    """
    bin_dir = Path(sys.executable).parent
    script = bin_dir / SCRIPT
    if not (script.is_file() and os.access(script, os.X_OK)):
        command = shlex.join([sys.executable, "-m", "handoff_files"])
        return Resolved(command, f"no `{SCRIPT}` script beside {sys.executable}")
    found = shutil.which(SCRIPT, path=os.environ.get("PATH", os.defpath) if path is None else path)
    here = shlex.quote(os.fspath(script))
    if found is None:
        return Resolved(here, f"`{SCRIPT}` is not on PATH")
    if Path(found).resolve() != script.resolve():
        return Resolved(here, f"`{SCRIPT}` on PATH is another installation ({found})")
    if Path(found).parent.resolve() == bin_dir.resolve() and sys.prefix != sys.base_prefix:
        return Resolved(here, f"`{SCRIPT}` is on PATH only because its virtual environment ({sys.prefix}) is active")
    return Resolved(SCRIPT, None)
