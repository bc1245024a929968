"""Validation: verify many handoff files or thread directories at once, one result per path."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import is_real_dir, lexists
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, SignatureError, UntrustedSignerError
from handoff_files.thread.kind import file_sealing_advice, sealing_advice
from handoff_files.thread.layout import ThreadDir
from handoff_files.thread.locate import is_pinned, primary_of, record_of
from handoff_files.thread.signatures import signature_damage, signer_report, untrusted

__all__ = ["Validation", "validate"]


@dataclass(frozen=True, slots=True)
class Validation:
    """What :func:`validate` found for one path: the verified handoff, or the error that stopped it.

    Exactly one of ``handoff`` and ``error`` is set. ``path`` is the path as given (a thread
    directory or a file), not the primary it stands for; ``error.path`` names the file the
    error is about.
    """

    path: str | os.PathLike[str]
    handoff: Handoff | None = None
    error: HandoffError | None = None

    @property
    def ok(self) -> bool:
        """Whether the path verified."""
        return self.error is None


def _local(path: str | os.PathLike[str]) -> Path:
    """*path*, unless it is a URL: then refused, never read as a folder named ``s3:``."""
    if isinstance(path, str) and "://" in path:
        msg = "a URL: validate reads files and folders; `handoff show URL` restores and verifies a bucket's"
        raise HandoffError(path.partition("?")[0], msg)
    return Path(path)


def validate(paths: Iterable[str | os.PathLike[str]], *, assume_version: str | None = None) -> list[Validation]:
    """Load and verify each path, as :func:`load` does, and the signature of a signed one; a bad one
    never stops the rest.

    A thread directory stands for its primary file (the one a person would edit), which is
    verified as it is: no fallback to ``history/`` as a restore would take. A primary that is a
    symbolic link is refused, not followed, as the store refuses it. A file named in *paths* is
    read as ``handoff show FILE`` reads it, through a symbolic link if it is one: the caller
    chose it. A path that cannot be looked at or read (a name too long, a directory that may
    not be searched, a FIFO, a symlink loop) fails alone. Never writes.

    :param paths: handoff files or thread directories.
    :param assume_version: the version of files that do not say, as a person states it.
    :returns: one :class:`Validation` per path, in order.
    """
    results = []
    for path in paths:
        try:
            handoff = _verify(_local(path), assume_version)
            bad = signature_damage(handoff, path)
            if bad is not None:  # a signed generation is verified whole: its seal, then its signature
                raise SignatureError(path, bad)
            if is_pinned(Path(path)):  # a folder pinned to signed generations: only a trusted signer's is valid
                _trusted(handoff, path)
        except HandoffError as exc:
            results.append(Validation(path, error=exc))
        else:
            results.append(Validation(path, handoff=handoff))
    return results


def _trusted(handoff: Handoff, path: str | os.PathLike[str]) -> None:
    report = signer_report(handoff, path)
    if report is None or not report.trusted:
        why = untrusted(report)
        msg = f"not signed by a key allowed_signers trusts ({why}), and its thread folder is pinned to signed ones"
        raise UntrustedSignerError(path, msg)


def _verify(path: Path, assume_version: str | None) -> Handoff:
    """Load the handoff *path* stands for: a thread directory's primary, or the file itself."""
    # is_real_dir, not Path.is_dir(): a stat error other than "no such file" (EACCES, EIO, a name
    # too long) is a HandoffError for this path, where is_dir() lets a bare OSError end the run;
    # the directory itself may be a symlink, as a store opened on it follows one
    if not is_real_dir(path, follow_symlinks=True):
        # a thread's file named alone: judged as its thread judges it (a saver's is never sealed by hand)
        return load(path, assume_version=assume_version, written=record_of(path), sealing=file_sealing_advice(path))
    # the thread's files are never followed out of it (see HandoffStore): a link in the primary's place is refused
    primary = primary_of(path)
    hint = "" if lexists(primary) else ThreadDir(path).not_a_thread()
    if hint:
        raise HandoffNotFoundError(path, hint)
    written, sealing = record_of(primary), sealing_advice(ThreadDir(path))
    return load(primary, assume_version=assume_version, follow_symlinks=False, written=written, sealing=sealing)
