"""The keys command: ``handoff keys create [KEYFILE]`` and ``handoff keys show [KEYFILE]``, Ed25519 signing keys.

Only argparse and the standard library are imported here: :func:`register` runs whenever the
parser is built (``handoff --help`` too), and the handler imports the library module it uses.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["cmd_keys", "register"]

Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add ``keys`` through *add* (``main.build_parser``'s ``add(name, handler, help)``)."""
    p = add(
        "keys",
        cmd_keys,
        "make an Ed25519 signing key (create: OpenSSH format, 0600, never over a file) or show one; "
        "prints the line that trusts it in allowed_signers",
    )
    p.add_argument("action", choices=["create", "show"], help="create a new key, or show an existing one")
    p.add_argument(
        "key",
        metavar="KEYFILE",
        nargs="?",
        type=Path,
        help="the private key file (default: the configured key, else ~/.config/handoff-files/signing_key)",
    )
    p.add_argument("--principal", metavar="NAME", help="who the key is, for allowed_signers (default: user@host)")
    p.add_argument("--comment", metavar="TEXT", help="create: the comment on the public line (default: the principal)")


def cmd_keys(args: argparse.Namespace) -> str:
    """``handoff keys create|show [KEYFILE]``: make or show a signing key and its allowed_signers line."""
    import getpass  # noqa: PLC0415 -- imported per command: start-up cost
    import socket  # noqa: PLC0415

    from handoff_files.cli.machine import to_json  # noqa: PLC0415
    from handoff_files.signing import keys  # noqa: PLC0415

    path: Path = args.key or keys.configured_key() or keys.default_key_path()
    principal = args.principal or f"{getpass.getuser()}@{socket.gethostname()}"
    if args.action == "create":
        key = keys.create_key(path, comment=args.comment or principal)
    else:
        key = keys.load_signing_key(path)
    line = keys.allowed_signers_line(key, principal)
    record: dict[str, Any] = {
        "key": str(key.path),
        "public_key": key.public_line,
        "fingerprint": key.fingerprint,
        "allowed_signers": line,
    }
    if args.json:
        return to_json(record)
    made = f"made {key.path} (private, mode 0600) and {key.path.name}.pub\n" if args.action == "create" else ""
    return (
        f"{made}key {key.path}\nfingerprint {key.fingerprint}\n"
        f"to trust what it signs, add this line to allowed_signers ({keys.config_dir() / 'allowed_signers'}, "
        f"or your team's):\n{line}\n"
    )
