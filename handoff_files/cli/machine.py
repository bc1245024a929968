"""Machine output: the one JSON form every ``--json`` prints (times in UTC with a Z, paths as text, errors as objects).

``docs/cli-json.md`` describes each command's output, and ``schemas/cli/`` holds their JSON Schemas.
"""

from __future__ import annotations

import argparse
import datetime as dt
import enum
import json
import os
import sys
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, Final

from handoff_files.cli.render import one_line
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import HandoffError

__all__ = [
    "DOCTOR_KEYS",
    "RUN_KEYS",
    "error_record",
    "in_cli_words",
    "ordered",
    "quiet_stdout",
    "report_failure",
    "to_json",
]


def _plain(value: Any) -> Any:
    """The JSON form of what ``json`` cannot write itself; anything else is a bug, not a string to guess."""
    if isinstance(value, dt.datetime):
        # as a handoff file writes it: UTC, a Z, microseconds only when there are some
        return iso_z(value, timespec="auto")
    if isinstance(value, PurePath):
        return os.fspath(value)
    if isinstance(value, enum.Enum):
        return value.value
    msg = f"{type(value).__name__} has no JSON form in handoff's machine output"
    raise TypeError(msg)


#: The key orders docs/cli-json.md gives (and schemas/cli/ requires) where a library record's fields differ.
DOCTOR_KEYS: Final = ("level", "kind", "what", "advice")
RUN_KEYS: Final = ("exit_code", "restarts", "acknowledged", "with_code", "last_generation", "reason")


def ordered(record: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """*record* with *keys* first, in that order (the documented one), then any others as they come."""
    return {key: record[key] for key in keys if key in record} | {k: v for k, v in record.items() if k not in keys}


def as_record(value: Any) -> dict[str, Any]:
    """A receipt or a history entry as ``--json`` prints it: ``path`` is where it is (an object's URL on object
    storage, where the dataclass keeps the key in ``path`` and the URL in ``url``)."""
    import dataclasses  # noqa: PLC0415 -- it imports inspect (~15 ms): only --json needs it

    record = dataclasses.asdict(value)
    url = record.pop("url", None)
    if url is not None:
        record["path"] = url
    return record


def to_json(value: Any) -> str:
    """Machine output for ``--json``: indented, UTF-8 as it is, keys in the order given, one document."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=_plain) + "\n"


def error_record(exc: HandoffError | OSError) -> dict[str, Any]:
    """A failed command as ``--json`` prints it: ``{"error": {"kind", "path", "reason"}}``.

    ``kind`` is the exception's class name: the :class:`HandoffError` subclass (``HandoffNotFoundError``,
    ``ChecksumMismatchError`` …), or for a path the library never got to, the ``OSError``
    subclass (``PermissionError`` …); ``path`` may be null only then.
    """
    if isinstance(exc, HandoffError):
        path: str | None = exc.path
        reason = exc.reason
    else:
        path = None if exc.filename is None else os.fsdecode(exc.filename)
        reason = exc.strerror or str(exc)
    return {"error": {"kind": type(exc).__name__, "path": path, "reason": reason}}


def in_cli_words(exc: HandoffError | OSError, args: argparse.Namespace) -> HandoffError | OSError:
    """*exc* as the command line says it: a thread with no ids is told the options that give them.

    The library's reason names its keywords (``thread_id=``); a command that takes ``--thread-id``
    names that, and one that does not (``run``) names the ``init`` that records them first.
    """
    from handoff_files.thread.settings import MissingIdsError, no_id_reason  # noqa: PLC0415 -- only this error

    if not isinstance(exc, MissingIdsError):
        return exc
    path = PurePath(exc.path)
    if hasattr(args, "thread_id"):
        how = "give them with --thread-id ID (and --agent-id ID; default: the thread id)"
    else:
        how = f"record them first with {suggest('handoff', 'init', path, '--thread-id', 'ID')}, then run this again"
    return MissingIdsError(exc.path, f"{no_id_reason(path.name)}: {how}")


def report_failure(exc: HandoffError | OSError, *, machine: bool) -> None:
    """Say why a command failed: one line on stderr, always; with ``--json``, its record on stdout too.

    A stdout that cannot take the record (a closed pipe, a full disk) is let be: the line on
    stderr has said why the command failed.
    """
    print(f"handoff: {one_line(str(exc))}", file=sys.stderr)
    if machine:
        try:
            sys.stdout.write(to_json(error_record(exc)))
            sys.stdout.flush()
        except OSError:
            quiet_stdout()


def quiet_stdout() -> None:
    """Point stdout at nothing, once it cannot be written: what its buffer still holds goes nowhere at exit, silently.

    Without it, Python's own flush at exit fails again and prints "Exception ignored …" on stderr.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture): nothing is flushed at exit
        return
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
