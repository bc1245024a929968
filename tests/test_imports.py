"""Import hygiene: `import handoff_files` and an agent's restart load only what they use."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import handoff_files

# what a restart must never pay for; each is imported only by the part that uses it
NEVER_AT_START = (
    "watchdog",
    "ruamel",
    "fsspec",
    "langgraph",
    "langchain_core",
    "handoff_files.inbox",
    "handoff_files.compat",
    "handoff_files.langgraph",
    "cryptography",  # signatures: loaded to sign or check one, never for an unsigned thread
)


def _loaded(code: str, python: str, env: dict[str, str], *args: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([python, "-c", probe, *args], env=env, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _offenders(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


def test_import_handoff_files_loads_none_of_the_integrations(python: str, subprocess_env: dict[str, str]) -> None:
    modules = _loaded("import handoff_files", python, subprocess_env)
    assert _offenders(modules, (*NEVER_AT_START, "pydantic", "orjson", "filelock")) == []


def test_a_restart_loads_no_watcher_yaml_remote_inbox_or_compat(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """Save in one process, restore and acknowledge in a fresh one, as a restarted agent does."""
    thread = tmp_path / "agent-1"
    handoff_files.HandoffStore(thread).save({"narrative": "before the restart"})
    code = (
        "import sys\nfrom handoff_files import HandoffStore\n"
        "store = HandoffStore(sys.argv[1])\nstore.acknowledge(store.restore())"
    )
    modules = _loaded(code, python, subprocess_env, str(thread))
    assert "handoff_files.thread.store" in modules  # the probe did restore
    assert _offenders(modules, NEVER_AT_START) == []


def test_version_and_help_load_no_library_layer(python: str, subprocess_env: dict[str, str]) -> None:
    code = (
        "import sys, runpy\nsys.argv = ['handoff', '--version']\n"
        "try:\n    runpy.run_module('handoff_files', run_name='__main__')\nexcept SystemExit:\n    pass"
    )
    modules = _loaded(code, python, subprocess_env)
    assert _offenders(modules, (*NEVER_AT_START, "pydantic", "handoff_files.thread", "handoff_files.transfers")) == []


@pytest.mark.parametrize("name", sorted(handoff_files.__all__))
def test_every_public_name_resolves_from_the_top_level(name: str) -> None:
    assert getattr(handoff_files, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'HandoffStor'"):
        _ = handoff_files.HandoffStor


def test_watch_and_transfer_stay_functions_after_their_layers_are_imported(
    python: str, subprocess_env: dict[str, str]
) -> None:
    """Importing a submodule binds it on its package: no subpackage may share a public function's name."""
    code = (
        "import handoff_files.transfers.blobs, handoff_files.watchers.directory, handoff_files.inbox.serve\n"
        "import handoff_files\n"
        "from handoff_files import transfer, watch\n"
        "assert callable(transfer) and callable(watch), (transfer, watch)\n"
        "assert callable(handoff_files.transfer) and callable(handoff_files.watch)\n"
        "print('ok')"
    )
    done = subprocess.run([python, "-c", code], env=subprocess_env, capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_no_public_name_is_also_a_subpackage() -> None:
    packages = {path.parent.name for path in Path(handoff_files.__file__).parent.glob("*/__init__.py")}
    assert not packages & set(handoff_files.__all__)
