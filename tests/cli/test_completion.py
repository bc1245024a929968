"""Shell completion: the script the parser makes completes commands, options and choices in a real bash."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from handoff_files.cli.completion import completion_script
from handoff_files.cli.main import build_parser, main

BASH = shutil.which("bash") or "bash"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is needed to run the script")


def complete(line: str) -> list[str]:
    """What bash offers for the last word of *line* (a trailing space starts a new, empty word)."""
    words = line.split(" ")
    script = completion_script(build_parser(), "bash")
    driver = (
        f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\nCOMP_CWORD={len(words) - 1}\n"
        '_handoff\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run([BASH, "-c", driver], capture_output=True, text=True, check=True, cwd="/")
    return [word for word in done.stdout.splitlines() if word]


def test_commands_options_and_choices_complete() -> None:
    assert {"save", "seal", "show"} <= set(complete("handoff s"))
    assert "--dry-run" in complete("handoff prune t --d")
    assert complete("handoff save t --format ") == ["json", "yaml"]
    assert complete("handoff hook c") == ["claude-code", "codex", "cursor"]
    assert {"accept", "list", "request"} <= set(complete("handoff inbox /shared/inbox "))
    assert "--reason" in complete("handoff inbox /shared/inbox reject --r")


def test_every_command_is_in_the_script() -> None:
    script = completion_script(build_parser(), "bash")
    for name in build_parser()._actions[-1].choices:  # type: ignore[union-attr]
        assert f"    {name})" in script


def test_handoff_completion_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "zsh"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == "autoload -U +X bashcompinit && bashcompinit"
    assert "complete -o filenames -F _handoff handoff" in out
    assert subprocess.run([BASH, "-n", "-c", out.replace(out.splitlines()[1], ":")], check=False).returncode == 0
