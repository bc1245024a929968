"""Start-up cost: ``handoff --version`` and ``handoff show`` load and build only what they use (issue 21).

Timings are noisy; what makes them is not: the modules a run imports (``-X importtime`` lists
each one) and the argparse parsers it builds (one per subcommand, ~0.5 ms each, some thirty of them).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import handoff_files
from tests.cli.shell import handoff

# what --version never needs: argparse and what it brings (typing, re, gettext, its help formatter's
# shutil and locale), pathlib, the library's validation and encoding, the editing and history
# commands' helpers (dataclasses pulls in inspect, ~15 ms): the version line is answered first
NOT_FOR_VERSION = (
    "argparse",
    "typing",
    "re",
    "pathlib",
    "shutil",
    "handoff_files.cli.main",
    "pydantic",
    "pydantic_core",
    "orjson",
    "blake3",
    "ruamel",
    "watchdog",
    "filelock",
    "dataclasses",
    "inspect",
    "datetime",
    "textwrap",
    "handoff_files.format",
    "handoff_files.thread",
    "handoff_files.cli.machine",
)
# what `handoff show THREAD` (no --json) never needs: the JSON output, the YAML codec, the watcher,
# the transfer layer (the thread was not handed on) and the LangGraph reader (no checkpoint)
NOT_FOR_SHOW = (
    "ruamel",
    "watchdog",
    "fsspec",
    "handoff_files.cli.machine",
    "handoff_files.transfers",
    "handoff_files.langgraph",
    "handoff_files.inbox",
)


#: What the ``handoff`` script pip writes runs, then the modules the run imported, on stderr's last line
#: (those ``site`` loaded before it are not the run's: an editable install's finder brings re, pathlib …)
_SCRIPT = """\
import sys
before = set(sys.modules)
from handoff_files.cli.start import main
try:
    code = main()
finally:
    sys.stderr.write("\\n" + repr(sorted(set(sys.modules) - before)) + "\\n")
sys.exit(code)
"""


def _imported(*argv: str | Path, env: dict[str, str]) -> set[str]:
    """The modules a run of the ``handoff`` script with ARGV imported (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *map(str, argv)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: list[str] = ast.literal_eval(done.stderr.strip().splitlines()[-1])
    return set(found)


def _offenders(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


def test_version_imports_no_library_layer_and_no_help_formatter(subprocess_env: dict[str, str]) -> None:
    modules = _imported("--version", env=subprocess_env)
    assert "handoff_files.cli.start" in modules  # the probe did run the CLI
    assert _offenders(modules, NOT_FOR_VERSION) == []


def test_show_imports_no_json_output_yaml_watcher_or_transfer(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    handoff_files.HandoffStore(tmp_path / "t").save({"narrative": "before the restart"})
    modules = _imported("show", tmp_path / "t", env=subprocess_env)
    assert "handoff_files.thread.locate" in modules  # the probe did restore
    assert _offenders(modules, NOT_FOR_SHOW) == []


# counts the argparse parsers a run builds, then runs the CLI as `python -m handoff_files` does
_COUNT_PARSERS = """\
import argparse, runpy, sys
built = []
init = argparse.ArgumentParser.__init__
def counted(self, *args, **kwargs):
    built.append(kwargs.get("prog"))
    init(self, *args, **kwargs)
argparse.ArgumentParser.__init__ = counted
sys.argv = ["handoff", *sys.argv[1:]]
try:
    runpy.run_module("handoff_files", run_name="__main__")
except SystemExit as exc:
    print(f"exit {exc.code} parsers {len(built)}", file=sys.stderr)
"""


def _parsers_built(*argv: str | Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _COUNT_PARSERS, *map(str, argv)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    return done.stderr.strip().splitlines()[-1]


def test_a_command_builds_its_own_parser_not_every_one(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    handoff_files.HandoffStore(tmp_path / "t").save({"narrative": "before the restart"})
    assert _parsers_built("show", tmp_path / "t", env=subprocess_env) == "exit 0 parsers 2"  # handoff, handoff show
    assert _parsers_built("--version", env=subprocess_env) == "exit 0 parsers 0"
    assert _parsers_built("--version", "--json", env=subprocess_env) == "exit 0 parsers 1"  # not alone: argparse's


def test_help_and_an_unknown_command_still_list_every_command(subprocess_env: dict[str, str]) -> None:
    listed = handoff("--help", env=subprocess_env)
    assert listed.returncode == 0
    assert all(f"    {name} " in listed.stdout for name in ("init", "save", "show", "inbox", "trust", "set"))
    unknown = handoff("shwo", env=subprocess_env)
    assert unknown.returncode == 2
    assert "invalid choice: 'shwo' (choose from 'init', 'save', 'show'," in unknown.stderr
