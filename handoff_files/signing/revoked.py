"""Revoked keys: a list of public key lines; a key on it is never trusted, whatever ``allowed_signers`` says.

The plain form ``ssh-keygen -Y verify -r`` reads: one ``ssh-ed25519 AAAA… [comment]`` per line,
blank lines and ``#`` comments skipped, keys of other types read and passed over. It fails closed:
a binary KRL, or any line that cannot be read (it might have been a revocation), refuses the list.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffNotFoundError, HandoffParseError
from handoff_files.signing.sshsig import parse_key_line
from handoff_files.signing.trustfile import BLANK, KEY_TYPES, MAX_LINE, read_trust_file

__all__ = ["REVOKED_NAME", "load_revoked"]

#: The file's name in the configuration folder (:func:`~handoff_files.signing.keys.config_dir`).
REVOKED_NAME: Final = "revoked_keys"


def load_revoked(path: str | os.PathLike[str], *, missing_ok: bool = False) -> frozenset[bytes]:
    """The Ed25519 keys a revoked-keys file lists (public key lines; comments and other key types skipped).

    :raises HandoffParseError: for a binary KRL, or a line that is not a key.
    :raises HandoffNotFoundError: if it does not exist (without *missing_ok*).
    """
    target = Path(path)
    if missing_ok and not os.path.lexists(target):  # the usual case: one lstat, no error made and caught
        return frozenset()
    try:
        text = read_trust_file(target)  # read (and its owner and mode checked) every time
    except HandoffNotFoundError:
        if missing_ok:
            return frozenset()
        raise
    return _keys(text, os.fspath(target))


@functools.lru_cache(maxsize=16)
def _keys(text: str, where: str) -> frozenset[bytes]:
    """The keys *text* lists, parsed once per text (a refusal is not kept: it is raised again)."""
    target = Path(where)
    keys = set()
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(BLANK + "\r")
        if not line or line.startswith("#"):
            continue
        # fail closed: a line that cannot be read might have been a revocation, so the file is refused
        try:
            if len(line) > MAX_LINE:
                msg = f"longer than {MAX_LINE:,} characters"
                raise ValueError(msg)  # noqa: TRY301 -- one place tells every bad line
            if not KEY_TYPES.fullmatch(line.split()[0]):
                msg = "not a public key line (expected ssh-ed25519 AAAA…)"
                raise ValueError(msg)  # noqa: TRY301
            key = parse_key_line(line)
        except ValueError as exc:
            msg = f"line {number}: {exc}"
            raise HandoffParseError(target, msg) from exc
        if key is not None:
            keys.add(key)
    return frozenset(keys)
