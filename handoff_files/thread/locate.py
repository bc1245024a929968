"""Locating: from a path a person gives (a thread directory or a file in one) to the store or file it names."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handoff_files.format.loader import load
from handoff_files.foundation.atomic import Stamp
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, UntrustedSignerError
from handoff_files.foundation.names import check_folder_path
from handoff_files.thread.history import find_generation, load_generation
from handoff_files.thread.kind import file_sealing_advice
from handoff_files.thread.layout import HISTORY_DIR, MIRROR_NAME, PRIMARY_NAMES, ThreadDir
from handoff_files.thread.mirror import primary_stamp
from handoff_files.thread.pins import pin_of
from handoff_files.thread.results import MigrationReport, Restored
from handoff_files.thread.settings import choose_format
from handoff_files.thread.signatures import checked_signer, signer_report, untrusted
from handoff_files.thread.store import HandoffStore

__all__ = ["is_pinned", "migrate_path", "open_handoff", "primary_of", "record_of", "thread_of"]


def thread_of(path: str | os.PathLike[str], **options: Any) -> HandoffStore:
    """Return the store for *path*: a thread directory, or a primary file inside one.

    :param options: :class:`HandoffStore`'s keywords (``lock_timeout``, ``on_lock_wait`` …).
    :raises HandoffNotFoundError: if *path* does not exist.
    """
    if _is_url(path):
        return HandoffStore(path, **options)
    check_folder_path(path, "a thread folder")
    target = Path(path)
    if target.is_dir():
        return HandoffStore(target, **options)
    if not target.exists():
        msg = "no such file or thread directory"
        raise HandoffNotFoundError(target, msg)
    store = HandoffStore(target.parent, **options)
    if store.primary.resolve() != target.resolve():
        msg = f"not a thread's primary file (expected {store.primary.name} in a thread directory)"
        raise HandoffError(target, msg)
    return store


def open_handoff(
    path: str | os.PathLike[str],
    *,
    assume_version: str | None = None,
    generation: int | None = None,
    allowed_signers: Path | None = None,
    require_signed: bool = False,
    accept_rollback: bool = False,
) -> Restored:
    """Read what *path* holds: a thread directory is restored, a file is loaded and verified.

    A signed generation's ``signature`` says who signed it, as *allowed_signers* (default: the
    user's) sees it.

    :param generation: read this generation of the thread at *path* (its directory or primary)
        from ``history/`` instead, verified: no recovery ladder, never another generation.
    :param require_signed: only a generation a trusted key signed (a file or *generation*: refused if not).
    :param accept_rollback: a pinned thread older than its rollback anchor is restored and anchored there.
    :raises HandoffError: as :meth:`HandoffStore.restore` or :func:`load` do, or
        :func:`~handoff_files.thread.history.load_generation` with *generation*; ``SignatureError``
        for a file read on its own whose signature does not verify.
    """
    if _is_url(path):  # a thread on object storage: restored, or one generation read and verified
        store = HandoffStore(path, signing_key=False, allowed_signers=allowed_signers, require_signed=require_signed)
        if generation is None:
            return store.restore(accept_rollback=accept_rollback)
        from handoff_files.thread.bucketstore import BucketThreadStore  # noqa: PLC0415 -- a bucket's only

        assert isinstance(store, BucketThreadStore)  # noqa: S101 -- what HandoffStore makes of a URL
        restored = store.generation(generation)
        return _required(restored, require_signed or store.pinned())
    check_folder_path(path, "a thread folder")
    target = Path(path)
    if generation is not None:
        layout = thread_of(target).layout
        found = find_generation(layout, generation)
        handoff = load_generation(layout, generation)
        report = signer_report(handoff, found, allowed_signers=allowed_signers)
        return _required(Restored(handoff, "history", found, signature=report), require_signed or is_pinned(found))
    if target.is_dir():
        store = HandoffStore(target, signing_key=False, allowed_signers=allowed_signers, require_signed=require_signed)
        return store.restore(accept_rollback=accept_rollback)
    if not target.exists():
        msg = "no such file or thread directory"
        raise HandoffNotFoundError(target, msg)
    sealing = file_sealing_advice(target)  # a file of a LangGraph saver's thread is never sealed by hand
    handoff = load(target, assume_version=assume_version, written=record_of(target), sealing=sealing)
    report = checked_signer(handoff, target, allowed_signers=allowed_signers)
    return _required(Restored(handoff, "file", target, signature=report), require_signed or is_pinned(target))


def _required(restored: Restored, require_signed: bool) -> Restored:
    """*restored*, unless a trusted signature was required and it has none.

    :raises UntrustedSignerError: then, naming why.
    """
    if require_signed and (restored.signature is None or not restored.signature.trusted):
        why = untrusted(restored.signature)
        msg = (
            f"generation {restored.handoff.generation} is not signed by a key allowed_signers trusts ({why}), and "
            "signed generations are required (--require-signed, or its thread folder is pinned to them)"
        )
        raise UntrustedSignerError(restored.path, msg)
    return restored


def _is_url(path: str | os.PathLike[str]) -> bool:
    """Whether *path* is a URL (``s3://…``; another scheme is refused by the store, never read as a folder)."""
    return isinstance(path, str) and "://" in path


def is_pinned(path: Path) -> bool:
    """Whether the thread folder *path* is, or holds the file *path* (its primary, or in ``history/``), is pinned."""
    folder = path if path.is_dir() else path.parent.parent if path.parent.name == HISTORY_DIR else path.parent
    try:
        return pin_of(folder) is not None
    except HandoffError:
        return False


def record_of(path: Path) -> Callable[[], Stamp | None] | None:
    """The thread's record of *path* as its writer left it, if *path* is a thread's primary file.

    A primary named by its file is judged as the thread judges it: the ``state.json`` beside it
    tells a person's edit from damage exactly (see :func:`~handoff_files.format.loader.load`).
    Any other file has no record (None): its content alone decides.
    """
    if path.name not in PRIMARY_NAMES:
        return None
    return primary_stamp(path.parent / MIRROR_NAME)


def primary_of(path: str | os.PathLike[str]) -> Path:
    """Return the file to verify for *path*: a thread directory's primary, or *path* itself.

    Reads only: no store is opened, so nothing in the thread is touched (not even a dead
    writer's temp files).

    The directory's name does not matter: a thread's ids are in its files (its name only
    proposes them for a first save).

    :raises HandoffError: if the thread holds both a JSON and a YAML primary.
    """
    target = Path(path)
    if not target.is_dir():
        return target
    layout = ThreadDir(target)
    return layout.primary(choose_format(layout, None))


def migrate_path(
    path: str | os.PathLike[str], *, dry_run: bool = False, assume_version: str | None = None, **options: Any
) -> MigrationReport:
    """Migrate *path*: a thread directory's primary, or an older file whose folder is the thread.

    Rewrites files unless *dry_run* (see :meth:`HandoffStore.migrate`).

    :param options: :class:`HandoffStore`'s keywords (``lock_timeout``, ``on_lock_wait`` …).
    """
    if _is_url(path):  # a bucket thread's generations are written at the current version: nothing to migrate
        raise HandoffError(os.fspath(path), "a thread on object storage is written at the current version only")
    target = Path(path)
    if target.is_dir():
        return HandoffStore(target, **options).migrate(dry_run=dry_run, assume_version=assume_version)
    if not target.exists():
        msg = "no such file or thread directory"
        raise HandoffNotFoundError(target, msg)
    return HandoffStore(target.parent, **options).migrate(target, dry_run=dry_run, assume_version=assume_version)
