"""One vocabulary in the help: THREAD wherever a thread is meant, save's order for import, the history size stated."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import build_parser
from handoff_files.thread.history import DEFAULT_KEEP
from tests.cli.shell import handoff

#: What a positional argument may be called, each name for one kind of thing.
NAMES: Final = {
    "THREAD": "a thread directory (or, where the help says so, its primary or a handoff file)",
    "NEW_THREAD": "a thread directory not made yet",
    "PATH": "a thread directory or a handoff file, many of them (validate)",
    "FILE": "a file a command reads",
    "INBOX": "an inbox folder",
    "DESCRIPTOR": "a descriptor file",
    "CODE": "an acknowledgement code",
    "COMMAND": "the agent's command",
    "A": "a generation",
    "B": "a generation",
    "KEY=VALUE": "an assignment",
    "ID": "a request id",
    "ACTION": "what an inbox or keys command does",
    "KEYFILE": "a private signing key file",
    "AGENT": "a coding agent",
    "SHELL": "a shell",
}
#: The commands whose first positional argument is a thread.
THREAD_FIRST: Final = [
    "init",
    "save",
    "show",
    "seal",
    "migrate",
    "import",
    "export-context",
    "doctor",
    "log",
    "run",
    "history",
    "prune",
    "export",
    "brief",
    "acknowledge",
    "diff",
    "edit",
    "set",
]


def _parsers() -> dict[str, argparse.ArgumentParser]:
    def sub(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(found[0].choices) if found else {}

    parsers = {}
    for name, parser in sub(build_parser()).items():
        parsers[name] = parser
        parsers.update({f"{name} {action}": q for action, q in sub(parser).items()})
    return parsers


def _positionals(parser: argparse.ArgumentParser) -> list[str]:
    return [
        action.metavar if isinstance(action.metavar, str) else action.dest
        for action in parser._actions
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction)
    ]


@pytest.mark.parametrize(("command", "parser"), [pytest.param(n, p, id=n) for n, p in _parsers().items()])
def test_every_positional_argument_has_a_name_of_the_one_vocabulary(
    command: str, parser: argparse.ArgumentParser
) -> None:
    for name in _positionals(parser):
        if name in ("agent", "shell"):  # choices, shown as {claude-code,codex,cursor}: named by AGENT and SHELL
            continue
        assert str(name) in NAMES, f"handoff {command}: {name!r} is not one of {sorted(NAMES)}"
    if command in THREAD_FIRST:
        assert _positionals(parser)[0] == "THREAD"


@pytest.mark.parametrize(
    ("command", "flag", "name"),
    [
        pytest.param("mcp", "--thread", "THREAD", id="mcp-thread"),
        pytest.param("mcp", "--root", "ROOT", id="mcp-root"),
        pytest.param("hook", "--thread", "THREAD", id="hook-thread"),
        pytest.param("install", "--thread", "THREAD", id="install-thread"),
        pytest.param("install", "--project", "PROJECT", id="install-project"),
        pytest.param("adopt", "--agent-id", "AGENT", id="adopt-agent"),
    ],
)
def test_options_naming_a_thread_or_folder_say_which(command: str, flag: str, name: str) -> None:
    assert _parsers()[command]._option_string_actions[flag].metavar == name


# -- import THREAD FILE, as save THREAD FILE ------------------------------------------------------

CONTEXT: Final = b'{"conversation_history":[{"content":"hi","role":"user"}],"metadata":{},"tool_state":{"k":1}}'


def test_import_takes_the_thread_then_the_file_as_save_does(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "context.bin").write_bytes(CONTEXT)
    done = handoff("import", "--from", "sw4rm", tmp_path / "t1", tmp_path / "context.bin", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert HandoffStore(tmp_path / "t1").restore().handoff.context is not None


def test_import_in_the_old_order_still_works_and_says_the_new_one(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    (tmp_path / "context.bin").write_bytes(CONTEXT)
    done = handoff("import", "--from", "sw4rm", tmp_path / "context.bin", tmp_path / "t1", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "handoff: note: the order is `handoff import --from sw4rm THREAD FILE`" in done.stderr
    assert HandoffStore(tmp_path / "t1").restore().handoff.context is not None
    piped = handoff("import", "--from", "sw4rm", "-", tmp_path / "t2", stdin=CONTEXT.decode(), env=subprocess_env)
    assert piped.returncode == 0, piped.stderr


def test_import_of_two_files_says_what_the_order_is(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "a.bin").write_bytes(CONTEXT)
    (tmp_path / "b.bin").write_bytes(CONTEXT)
    done = handoff("import", "--from", "sw4rm", tmp_path / "a.bin", tmp_path / "b.bin", env=subprocess_env)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "the order is `handoff import --from sw4rm THREAD FILE`" in done.stderr
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes() == CONTEXT


# -- the history size ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "where"),
    [
        pytest.param("diff", "description", id="diff"),
        pytest.param("history", "description", id="history"),
        pytest.param("show", "--generation", id="show-generation"),
        pytest.param("prune", "description", id="prune"),
    ],
)
def test_the_help_states_the_default_history_size(command: str, where: str) -> None:
    parser = _parsers()[command]
    text = parser.description if where == "description" else parser._option_string_actions[where].help
    assert f"newest {DEFAULT_KEEP}" in str(text), text


def test_a_generation_pruned_past_the_history_size_says_so_and_how_to_keep_more(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "t1"
    store = HandoffStore(thread)
    for step in range(12):
        store.save({"narrative": f"step {step}."})
    done = handoff("diff", thread, "1", "5", env=subprocess_env)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "holds no generation 1: pruned past the history size (10 kept: 3 to 12)" in done.stderr
    assert "keep=N" in done.stderr
