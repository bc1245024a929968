"""The layers: every module imports only from layers below it, and no import cycle exists.

Every import counts: at module level, inside functions (lazy), and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGE: Final = ROOT / "handoff_files"
MIGRATIONS: Final = ROOT / "migrations"

#: Bottom to top; each module may import from its own package and from any layer below.
#: Packages that share a rank are siblings and never import each other.
LAYERS: Final[dict[str, int]] = {
    "foundation": 0,
    "format": 1,
    "signing": 1,  # SSHSIG signatures and who is trusted (a sibling of format: neither imports the other)
    "storage": 1,  # the seam to a folder or a bucket (issue 23): foundation only, the thread layers above it
    "migrations": 2,  # the steps use format's constants; format finds them by name (importlib), not by import
    "thread": 3,
    "watchers": 4,
    "transfers": 4,
    "langgraph": 4,  # the LangGraph checkpointer, on the thread layer (the optional extra)
    "uptake": 4,  # the briefing written for a model, on the thread layer
    "inbox": 5,
    "run": 6,
    "hooks": 6,  # coding-agent hooks (Claude Code, Codex, Cursor) and their installer
    "mcp_server": 6,  # the MCP server (the optional extra)
    "cli": 7,
    "testing": 7,
    "compat": 7,
    "__main__": 8,
    "__init__": 8,  # the facade re-exports every layer
}

#: The deliberate exceptions: (importer, imported) module names, each with its reason.
EXCEPTIONS: Final[dict[tuple[str, str], str]] = {
    ("handoff_files.foundation.errors", "handoff_files.format.model"): (
        "type-only: UnsealedEditError carries the parsed Handoff so `handoff seal` can accept the edit"
    ),
    ("handoff_files.cli.commands", "handoff_files.compat.sw4rm"): (
        "lazy, in `handoff import --from sw4rm` and `handoff export-context --to sw4rm` only: "
        "the two commands whose job is the SW4RM conversion"
    ),
    ("handoff_files.thread.store", "handoff_files.thread.bucketstore"): (
        "lazy, in HandoffStore.__new__ for a URL only: `HandoffStore('s3://…')` makes the subclass that keeps a "
        "thread on object storage (as pathlib's Path makes a PosixPath), which stands on the store it extends"
    ),
    ("handoff_files.langgraph.saver", "handoff_files.langgraph.bucket_saver"): (
        "lazy, in HandoffSaver.__new__ for a URL only: `HandoffSaver('s3://…')` makes the subclass that keeps "
        "checkpoints on object storage, as HandoffStore does"
    ),
    ("handoff_files.watchers.watcher", "handoff_files.watchers.polling"): (
        "lazy, in watch() for a URL only: a bucket thread's watch polls, and extends the folder's Watcher"
    ),
}


def _module_name(path: Path) -> str:
    if path.is_relative_to(MIGRATIONS):
        parts = ["handoff_files", "migrations", *path.relative_to(MIGRATIONS).with_suffix("").parts]
    else:
        parts = ["handoff_files", *path.relative_to(PACKAGE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()  # a package is named by its folder: the top level is "handoff_files" itself
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    paths = [*PACKAGE.rglob("*.py"), *MIGRATIONS.rglob("*.py")]
    return {_module_name(path): path for path in sorted(paths)}


MODULES: Final = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours an import names: the longest known prefix (``from pkg import module`` included)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            found = _resolve(target) if target.startswith("handoff_files") else None
            if found is not None and found != module:
                yield found


GRAPH: Final = {module: sorted(set(_imports(module, path))) for module, path in MODULES.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    if module == "handoff_files":
        return "__init__"
    return parts[1]


def test_every_module_belongs_to_a_layer() -> None:
    unknown = sorted({_layer(module) for module in MODULES} - set(LAYERS))
    assert not unknown, f"packages with no layer: {unknown}; add them to LAYERS"


def test_no_module_imports_from_a_layer_above_or_beside_its_own() -> None:
    wrong = []
    for module, imported in GRAPH.items():
        here = _layer(module)
        for target in imported:
            there = _layer(target)
            if there == here or (module, target) in EXCEPTIONS:
                continue
            if LAYERS[there] >= LAYERS[here]:
                wrong.append(f"{module} ({here}) imports {target} ({there})")
    assert not wrong, "\n".join(wrong)


def test_the_exceptions_are_still_needed() -> None:
    """An exception whose import is gone is removed from the list, so the list stays short and true."""
    stale = [pair for pair in EXCEPTIONS if pair[1] not in GRAPH.get(pair[0], [])]
    assert not stale, f"exceptions no longer used: {stale}"


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), exception edges left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if (node, target) in EXCEPTIONS:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in GRAPH:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) not in {"compat", "cli"}))
def test_no_core_module_imports_compat(module: str) -> None:
    assert not [target for target in GRAPH[module] if _layer(target) == "compat"]


def test_the_checker_sees_an_import_through_the_top_level_package(tmp_path: Path) -> None:
    """``from handoff_files import X`` in a lower layer is an upward import (to the facade)."""
    source = tmp_path / "probe.py"
    source.write_text("from handoff_files import HandoffInbox\nimport handoff_files\n", encoding="utf-8")
    assert set(_imports("handoff_files.format.probe", source)) == {"handoff_files"}
    assert LAYERS[_layer("handoff_files")] > LAYERS["format"]


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """The parser counts an import inside a function and one under TYPE_CHECKING, as the rules require."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from handoff_files.thread.store import HandoffStore\n"
        "def f():\n    from handoff_files.compat import sw4rm\n",
        encoding="utf-8",
    )
    found = set(_imports("handoff_files.format.probe", source))
    assert found == {"handoff_files.thread.store", "handoff_files.compat.sw4rm"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_is_at_most_400_lines(module: str) -> None:
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= 400, f"{module} has {lines} lines; split it by concept"
