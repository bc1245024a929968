"""The keys command: ``handoff keys create [KEYFILE]`` and ``handoff keys show [KEYFILE]``, Ed25519 signing keys.

Only argparse and the standard library are imported here: :func:`register` runs whenever the
parser is built (``handoff --help`` too), and the handler imports the library module it uses.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["cmd_keys", "register"]

Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add ``keys`` through *add* (``main.build_parser``'s ``add(name, handler, help)``)."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "handoff-files"
    p = add(
        "keys",
        cmd_keys,
        "make an Ed25519 signing key (create: OpenSSH format, 0600, never over a file) or show one; "
        "prints the line that trusts it in allowed_signers",
    )
    p.add_argument("action", metavar="ACTION", choices=["create", "show"], help="create a new key, or show one")
    p.add_argument(
        "key",
        metavar="KEYFILE",
        nargs="?",
        type=_key_file,
        help=f"the private key file (default: the configured key, else {config / 'signing_key'})",
    )
    p.add_argument(
        "--principal",
        metavar="NAME",
        type=_principal,
        help="who the key is, for allowed_signers (default: create, user@host; show, the comment of KEYFILE.pub)",
    )
    p.add_argument("--comment", metavar="TEXT", help="create: the comment on the public line (default: the principal)")


def _key_file(text: str) -> Path:
    if not text:
        msg = "an empty path"
        raise argparse.ArgumentTypeError(msg)
    return Path(text)


def _principal(text: str) -> str:
    from handoff_files.signing.keys import check_principal  # noqa: PLC0415 -- only when the option is given

    try:
        return check_principal(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def cmd_keys(args: argparse.Namespace) -> str:
    """``handoff keys create|show [KEYFILE]``: make or show a signing key and its allowed_signers line."""
    from handoff_files.cli.machine import to_json  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.signing import keys  # noqa: PLC0415

    if args.action == "show" and args.comment is not None:
        args.usage_error("--comment is for create: show reads the comment of KEYFILE.pub")
    path: Path = args.key or keys.configured_key() or keys.default_key_path()
    if args.action == "create":
        principal = args.principal or _user_at_host()
        key = keys.create_key(path, comment=args.comment if args.comment is not None else principal)
    else:
        key = keys.load_signing_key(path)
        principal = args.principal or _named_in_pub(path) or _user_at_host()
    line = keys.allowed_signers_line(key, principal)
    record: dict[str, Any] = {
        "key": str(key.path),
        "public_key": key.public_line,
        "fingerprint": key.fingerprint,
        "allowed_signers": line,
    }
    if args.json:
        return to_json(record)
    made = f"made {key.path} (private, mode 0600) and {key.path}.pub\n" if args.action == "create" else ""
    return (
        f"{made}key {key.path}\nfingerprint {key.fingerprint}\n"
        f"to trust what it signs, add this line to allowed_signers ({keys.config_dir() / 'allowed_signers'}, "
        f"or your team's):\n{line}\n"
    )


def _user_at_host() -> str:
    import getpass  # noqa: PLC0415 -- imported per command: start-up cost
    import socket  # noqa: PLC0415

    from handoff_files.signing.keys import check_principal  # noqa: PLC0415

    try:
        return check_principal(f"{getpass.getuser()}@{socket.gethostname()}")
    except (ValueError, OSError, KeyError):
        return "me"


def _named_in_pub(path: Path) -> str | None:
    """The comment of *path*.pub (``create`` writes the principal there), if allowed_signers can hold it."""
    from handoff_files.foundation.atomic import read_bytes  # noqa: PLC0415
    from handoff_files.foundation.errors import HandoffError  # noqa: PLC0415
    from handoff_files.signing.keys import check_principal  # noqa: PLC0415

    try:
        words = read_bytes(path.with_name(path.name + ".pub"), 16 * 1024)[0].decode().split()
        return check_principal(words[2]) if len(words) == 3 else None
    except (HandoffError, UnicodeDecodeError, ValueError):
        return None
