"""The ``handoff`` command: its parser and ``main()`` (parse → one library call → render → exit code).

Only argparse and the errors are loaded here: a command's handler module (and, inside it, the
library modules it uses) is imported when that command runs, so ``handoff --version`` and
``handoff --help`` start fast.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from handoff_files.cli.agents_parser import Add, add_agent_commands
from handoff_files.cli.arguments import OUTPUT_RULE, agent, count, keep, positive, seconds, thread_id, wait
from handoff_files.cli.commands_edit import register as add_edit_commands
from handoff_files.cli.commands_history import register as add_history_commands
from handoff_files.cli.commands_history import since
from handoff_files.cli.commands_keys import register as add_keys_commands
from handoff_files.cli.commands_trust import register as add_trust_commands
from handoff_files.cli.commands_verify import register as add_verify_commands
from handoff_files.cli.exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from handoff_files.cli.lazy import handler as _handler
from handoff_files.cli.safe_output import safe_streams
from handoff_files.cli.transfer_parser import add_transfer_commands
from handoff_files.foundation.errors import HandoffError
from handoff_files.foundation.version import __version__

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["build_parser", "main"]


# the commands that take a thread's writers' lock, and so may wait for another writer
_WRITERS: Final = frozenset(
    {"init", "save", "seal", "migrate", "import", "doctor", "acknowledge", "edit", "set", "prune"}
)
# the commands that write a new sealed generation, and so may sign it
_SIGNERS: Final = frozenset({"save", "seal", "migrate", "import", "edit", "set", "adopt"})
_OUTPUT_HELP: Final = f"write exactly these bytes to FILE instead of stdout: {OUTPUT_RULE}"
# no --json: their stdout is another protocol (MCP over stdio; the coding agent's own hook replies)
_NOT_JSON: Final = frozenset({"mcp", "hook", "completion"})
# --json added by the command itself, in a group with the options it cannot go with (log: --follow)
_OWN_JSON: Final = frozenset({"log"})
_JSON_HELP: Final = "print machine-readable JSON (docs/cli-json.md)"
_VERSION_HELP: Final = "show program's version number and exit"  # argparse's own words for its version action
# history/'s default size (thread.history.DEFAULT_KEEP; a test keeps them equal): the parser imports no store
_KEEP: Final = 10
# what history/ keeps by default, true of a plain thread and of a LangGraph saver's (HandoffSaver keeps every one)
_KEPT: Final = f"history/ keeps the newest {_KEEP} by default; a LangGraph saver every checkpoint"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that help, usage and version text that cannot be written is a failure."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse ignores an OSError here: `handoff --help > /dev/full` would exit 0 having printed nothing
        out = file or sys.stderr
        try:
            out.write(message)
            getattr(out, "flush", lambda: None)()
        except OSError:
            if out is sys.stdout:
                raise  # main says the output could not be written, exit 1
            # a usage error that cannot be told on stderr: its exit code, 2, still says it


class _Version(argparse.Action):
    """``--version``: the version line as it is (argparse's own action wraps it as help text, loading its formatter)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=_VERSION_HELP)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        # as argparse's version action writes: through _Parser's, which makes an unwritable stdout a failure
        parser._print_message(f"{parser.prog} {__version__}\n", sys.stdout)
        parser.exit()


class _Unbuilt:
    """Stands in for the parser of a subcommand this run does not build: every call is taken and ignored."""

    def __getattr__(self, name: str) -> Callable[..., _Unbuilt]:
        return self._ignore

    def _ignore(self, *args: object, **kwargs: object) -> _Unbuilt:
        return self


# typed as the parser it stands in for: the commands' registration code calls it as one
_UNBUILT: Final = cast("argparse.ArgumentParser", _Unbuilt())


def build_parser(*, only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: one subcommand per library verb.

    :param only: build this subcommand alone ("": none), the one the command line names: argparse
        builds a parser per subcommand, ~25 ms for all of them, which one run does not need. None
        (the default), or a name no subcommand has, builds them all, as help and completion need.
    :returns: a parser whose namespaces carry ``func``, the handler to call with them.
    """
    parser = _Parser(
        prog="handoff",
        description="Sealed five-layer handoff files: save, show, validate and seal an agent's handoffs.",
    )
    parser.add_argument("--version", action=_Version)
    # prog given: argparse would otherwise build a help formatter to find this same prefix
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", prog=parser.prog)

    def add(name: str, func: Callable[[argparse.Namespace], str], help_text: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return _UNBUILT
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name not in _NOT_JSON and name not in _OWN_JSON:
            p.add_argument("--json", action="store_true", help=_JSON_HELP)
        if name in _WRITERS:
            p.add_argument(
                "--wait",
                type=wait,
                metavar="S",
                help="seconds to wait for another writer's lock, saying who holds it (default 30; 0: fail at once)",
            )
        if name in _SIGNERS:
            signing = p.add_mutually_exclusive_group()
            signing.add_argument(
                "--sign-with",
                metavar="KEYFILE",
                help="sign the new generation with this OpenSSH Ed25519 key file (default: the configured key, if any)",
            )
            signing.add_argument("--no-sign", action="store_true", help="do not sign, even with a key configured")
        # an unrecognized argument is told in this command's usage, not the top level's
        p.set_defaults(func=func, usage_error=p.error)
        return p

    # in this order in `handoff --help`
    _add_file_commands(add)
    _add_context_commands(add)
    add_transfer_commands(add)  # export, adopt, inbox
    _add_care_commands(add)
    add_history_commands(add)  # diff
    add_agent_commands(add)
    add_edit_commands(add)  # edit, set
    add_trust_commands(add)  # trust
    add_verify_commands(add)  # verify
    add_keys_commands(add)  # keys
    if only and only not in sub.choices:
        return build_parser()  # argparse's error for an unknown command lists every command
    return parser


def _add_file_commands(add: Add) -> None:
    """The subcommands that write, read, verify, seal and migrate a thread's handoffs."""
    p = add("init", _handler("commands", "init"), "create a thread directory (mode 0700) ready for saves")
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument("--format", choices=["json", "yaml"], help="primary file format (default: json)")
    _add_id_options(p)

    p = add(
        "save",
        _handler("commands", "save"),
        "seal the five layers from FILE (JSON or YAML; - or none: stdin) as the next generation",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument("file", nargs="?", metavar="FILE", help="content file, JSON or YAML (default: stdin)")
    p.add_argument("--format", choices=["json", "yaml"], help="primary file format for a new thread")
    p.add_argument(
        "--durability",
        choices=["journal", "full"],
        help="journal (default): return once its journal line is flushed; full: once its own history/ file is too",
    )
    _add_id_options(p)

    p = add(
        "show",
        _handler("commands_show", "show"),
        "show a handoff for a person taking over: narrative, warnings, priorities, state",
    )
    p.add_argument("path", metavar="THREAD", help="thread directory (restored), or a handoff file (loaded)")
    p.add_argument("--assume-version", metavar="V", help="the version of a file that does not say")
    p.add_argument(
        "--generation",
        type=positive,
        metavar="N",
        help=f"generation N as history/ keeps it, verified ({_KEPT})",
    )
    p.add_argument(
        "--require-signed",
        action="store_true",
        help="show only a generation a key in allowed_signers signed, as a pinned thread does",
    )
    p.add_argument("--accept-rollback", action="store_true", help="a pinned thread rolled back: accept, anchor it here")

    p = add(
        "validate",
        _handler("commands", "validate"),
        "verify handoff files; exit 1 if any fails, one line per bad file on stderr",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="handoff files or thread directories")
    p.add_argument("--assume-version", metavar="V", help="the version of files that do not say")

    p = add("seal", _handler("commands", "seal"), "accept a person's edit of the primary as the next sealed generation")
    p.add_argument("path", metavar="THREAD", help="thread directory or its primary file")
    p.add_argument("--yes", action="store_true", help="seal a primary that reads as corrupt without asking")

    p = add(
        "migrate",
        _handler("commands", "migrate"),
        "rewrite an older (0.8 or 1.0) handoff as the next sealed generation (format 2.1)",
    )
    p.add_argument("path", metavar="THREAD", help="thread directory (its primary) or the older file inside it")
    p.add_argument("--dry-run", action="store_true", help="show what would change and write nothing")
    p.add_argument("--assume-version", metavar="V", help="the version of a file that does not say")


def _add_id_options(p: argparse.ArgumentParser) -> None:
    """``--thread-id`` and ``--agent-id``: a first save's ids, where the folder's name will not do."""
    p.add_argument("--thread-id", type=thread_id, metavar="ID", help="the thread's id (default: the folder's name)")
    p.add_argument("--agent-id", type=agent, metavar="ID", help="the agent's id (default: the thread's)")


def _add_context_commands(add: Add) -> None:
    """The subcommands that convert a thread's context block to and from another framework's (SW4RM's)."""
    p = add(
        "import",
        _handler("commands", "import"),
        "save another framework's context FILE (- for stdin) as the context of THREAD's next generation "
        "(THREAD FILE, as for save; FILE THREAD, the older order, is still read when it can be told apart)",
    )
    p.add_argument("--from", dest="source_format", choices=["sw4rm"], required=True, help="FILE's format")
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument("file", metavar="FILE", help="context file (sw4rm: serialize_context bytes), or - for stdin")
    p.add_argument("--format", choices=["json", "yaml"], help="primary file format for a new thread")
    _add_id_options(p)

    p = add(
        "export-context",
        _handler("commands", "export_context"),
        "write a thread's context block in another framework's format",
    )
    p.add_argument("--to", dest="target_format", choices=["sw4rm"], required=True, help="output format")
    p.add_argument("dir", metavar="THREAD", help="thread directory (restored), or a handoff file")
    p.add_argument("-o", "--output", metavar="FILE", help=_OUTPUT_HELP)


def _add_care_commands(add: Add) -> None:
    """The subcommands that look after a thread: check and repair it, read its journal, run its agent, list it."""
    p = add(
        "doctor",
        _handler("commands", "doctor"),
        "check every channel of a thread and what a person can do; exit 1 on errors",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory, or its primary file")
    p.add_argument("--repair", action="store_true", help="rebuild what can be rebuilt, and say what could not")

    p = add("log", _handler("commands", "log"), "show the thread's journal as a readable timeline")
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument("-n", "--lines", type=count, metavar="N", help="only the last N lines")
    p.add_argument("--since", type=since, metavar="WHEN", help="only lines since WHEN: an ISO 8601 time or 10m, 2h, 1d")
    one_document = p.add_mutually_exclusive_group()  # --follow never ends: no one JSON document could hold it
    one_document.add_argument("--json", action="store_true", help=_JSON_HELP)
    one_document.add_argument(
        "-f", "--follow", action="store_true", help="print each new line as it is written, until Ctrl-C (exit 130)"
    )

    p = add(
        "run",
        _handler("commands", "run"),
        "run an agent on a thread: restart it when it dies, check it acknowledges its context",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory (HANDOFF_DIR in the agent's environment)")
    p.add_argument("--max-restarts", type=count, default=10, metavar="N", help="restarts before giving up (default 10)")
    p.add_argument(
        "--ack-timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="seconds the agent has to acknowledge (default 10)",
    )
    p.add_argument(
        "--restart-on-missing-ack",
        action="store_true",
        help="restart an agent that does not acknowledge its context (default: stop it and exit 1)",
    )
    p.add_argument(
        "--require-code",
        action="store_true",
        help="count only an acknowledgement with the briefing's code (`handoff brief`); default: report it",
    )
    p.add_argument("agent_command", nargs="+", metavar="COMMAND", help="the agent's command, after --")

    p = add(
        "history",
        _handler("commands", "history"),
        f"list a thread's generations, newest first, each verified; * marks the one a restore returns ({_KEPT})",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory")

    p = add(
        "prune",
        _handler("commands_langgraph", "prune"),
        f"keep a thread's newest generation files in history/ (saves keep the newest {_KEEP} by default), or "
        "each LangGraph thread's newest checkpoints under a HandoffSaver root (a folder or s3://…); remove the rest",
    )
    p.add_argument("root", metavar="THREAD", help="a thread (folder or s3://…), or a HandoffSaver's root (the same)")
    p.add_argument(
        "--keep",
        type=keep,
        required=True,
        metavar="N",
        help="generation files (or checkpoints per thread) kept, 1 or more",
    )
    p.add_argument("--thread", action="append", metavar="ID", help="only this LangGraph thread id (repeatable)")
    p.add_argument(
        "--dry-run", action="store_true", help="say what would be removed, and remove nothing (takes no lock)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI: parse *argv*, call the command's handler, print what it renders.

    :param argv: the arguments (default: ``sys.argv[1:]``).
    :returns: the exit code: 0 ok, 1 a :class:`HandoffError` (one line on stderr; with ``--json``,
        its ``{"error": {"kind", "path", "reason"}}`` on stdout too), 2 usage (argparse exits with it),
        3 a save that committed its generation but left a copy unwritten, 130 interrupted (Ctrl-C:
        one line, no traceback; a write under way finishes or leaves nothing).
    """
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(only=_command_named(words))
        args, extra = parser.parse_known_args(words)
        if extra:  # exits 2, with the usage of the command typed (argparse's own would give the top level's)
            getattr(args, "usage_error", parser.error)(_unrecognized(args, extra, words))
        args.failed = False
        args.exit_code = None
        with safe_streams():  # text another agent or a repository wrote never drives the terminal
            try:
                output = args.func(args)
            except BrokenPipeError:
                raise  # the reader of what the command printed went away: not a failure of the command
            except (HandoffError, OSError) as exc:  # OSError: the net under a path the library never got to
                from handoff_files.cli.machine import in_cli_words, report_failure  # noqa: PLC0415 -- only an error

                report_failure(in_cli_words(exc, args), machine=getattr(args, "json", False))
                return EXIT_ERROR
            sys.stdout.write(output)
            sys.stdout.flush()
    except KeyboardInterrupt:
        print("handoff: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `handoff log | head`: the reader has all it wanted
        from handoff_files.cli.machine import quiet_stdout  # noqa: PLC0415 -- only a failed stdout needs it

        quiet_stdout()  # stdout's buffer can no longer be flushed: point it at nothing so the exit is quiet
        return EXIT_OK
    except OSError as exc:  # stdout itself cannot be written (`> /dev/full`, a full disk, an I/O error)
        print(f"handoff: <stdout>: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        from handoff_files.cli.machine import quiet_stdout  # noqa: PLC0415 -- only a failed stdout needs it

        quiet_stdout()
        return EXIT_ERROR
    if args.exit_code is not None:
        return int(args.exit_code)
    return EXIT_ERROR if args.failed else EXIT_OK


def _command_named(words: Sequence[str]) -> str | None:
    """The one subcommand *words* need built ("" for none, None for all), as :func:`build_parser` takes it.

    The top level has no option that takes a value, so a first word that is not an option names
    the command; ``--version`` first is printed before any command is looked for.
    """
    first = words[0] if words else ""
    if first == "--version":
        return ""
    return first if first and not first.startswith("-") else None


def _unrecognized(args: argparse.Namespace, extra: list[str], words: list[str]) -> str:
    """What argparse would say of *extra*; for ``run``, that the agent's own options need ``--`` before the command."""
    said = f"unrecognized arguments: {' '.join(extra)}"
    command = getattr(args, "agent_command", None)
    if args.command != "run" or not command or command[0] not in words:
        return said
    start = words.index(command[0], words.index("run") + 1)  # where the agent's command begins
    fixed = shlex.join(words[words.index("run") + 1 : start]) + " -- " + shlex.join(words[start:])
    return f"{said} (the agent's command has options of its own: put it after --, as in: handoff run {fixed})"


if __name__ == "__main__":
    sys.exit(main())
