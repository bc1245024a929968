"""The breakdown: where the time inside save and load goes, step by step, at each size.

The real ``store.save(content)`` and ``load(path)`` run under a :class:`~bench.probe.Probe` that
wraps the library's internals (validation, dump, encode, hash, render, each durable write and
its mkstemp / write / fsync / rename / directory fsync, the lock, the head lookup, pruning) and
the primitives they call, so the tree shows the code as it is today, whatever order it calls
them in. The wrappers cost about a microsecond per call: the comparison rows below each tree
time the same calls unwrapped.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from bench.baselines import minimal_durable_write, orjson_and_sha256
from bench.probe import Key, Node, Probe, tree_order
from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.timing import Sample, interleaved
from bench.workload import SIZES, build_content
from handoff_files.format import content as content_module
from handoff_files.format import loader
from handoff_files.format import seal as sealing
from handoff_files.foundation import atomic, swap
from handoff_files.foundation.lock import WriterLock
from handoff_files.thread import commit as commit_module
from handoff_files.thread import head as head_module
from handoff_files.thread import store as store_module
from handoff_files.thread.head import HeadTracker
from handoff_files.thread.journal import Journal
from handoff_files.thread.layout import ThreadDir
from handoff_files.thread.store import DEFAULT_KEEP, HISTORY_DIR, HandoffStore

__all__ = ["run_breakdown"]

#: The breakdown shows proportions, not a verdict: a share of the comparison's rounds is enough.
_SHARE: Final = 2
#: A node's own time below this share of the whole call, at every size, gets no ``· self`` row.
_NEGLIGIBLE: Final = 0.01
_DIGITS = re.compile(r"\d{3,}")


def _where(args: Sequence[Any]) -> str:
    """Name the file or directory a call works on, the same at every size and generation."""
    if not args or not isinstance(args[0], str | os.PathLike):
        return "?"
    path = Path(args[0])
    if path.name == HISTORY_DIR:
        return f"{HISTORY_DIR}/"
    if path.parent.name == HISTORY_DIR:
        return f"{HISTORY_DIR}/{_DIGITS.sub('N', path.name)}"
    return path.name if path.suffix else "thread dir"


def _instrument(probe: Probe) -> None:
    """Wrap the internals of save and load, and the primitives under them."""
    probe.wrap(
        store_module,
        "layers_of",
        "validate content",
        own="HandoffContent.model_validate, free-form trees' orjson round trip",
    )
    probe.wrap(content_module, "dump_layers", "model_dump")
    probe.wrap(HandoffStore, "init", "init (mkdir -p)")
    probe.wrap(ThreadDir, "remove_stray_temps", "remove stray temps (list thread dir + history/)")
    probe.wrap_context(WriterLock, "held", "lock")
    probe.wrap(HeadTracker, "current", "head", own="lstat the primary and the journal")
    probe.wrap(ThreadDir, "generations", "list history/", own="match names, build paths")
    probe.wrap(head_module, "scan", "scan (load and verify the newest files)")
    probe.wrap(sealing, "canonical", "canonical encode")
    probe.wrap(sealing, "digest", "hash")
    probe.wrap(sealing, "matches", "hash + compare")
    probe.wrap(commit_module, "render", "render")
    probe.wrap(Journal, "append", "journal append", own="encode the line, cut a torn tail")
    probe.wrap(commit_module, "write_durable", "write_durable", hint=_where)
    probe.wrap(atomic, "_temp_beside", "create temp file")
    probe.wrap(atomic, "write_all", "write")
    probe.wrap(os, "fsync", "fsync")
    probe.wrap(os, "fdatasync", "fdatasync")
    probe.wrap(atomic, "put_in_place", "put in place")
    probe.wrap(swap, "exchange", "exchange names (renameat2)")
    probe.wrap(os, "replace", "rename (os.replace)")
    probe.wrap(os, "link", "link")
    probe.wrap(atomic, "fsync_dir", "fsync dir", hint=_where, own="open + close")
    probe.wrap(commit_module, "_prune", "prune history/", own="sort")
    probe.wrap(os, "listdir", "listdir")
    probe.wrap(os, "unlink", "unlink")
    probe.wrap(loader, "read_bytes", "read file", own="open, fstat, read, close")
    probe.wrap(loader, "parse", "parse", own="orjson.loads, compare with the re-render, depth and format checks")
    probe.wrap(loader, "check_version", "check_version")
    probe.wrap(loader, "_seal_matches", "verify seal")


def _load_without_gc(path: Path) -> None:
    gc.disable()
    try:
        loader.load(path)
    finally:
        gc.enable()


_Trees = tuple[list[Node], list[Node], list[Node], dict[str, Sample], dict[str, Sample]]
_SAVE: Final = "store.save()"
_SAVE_JOURNAL: Final = "store.save(), durability journal"
_LOAD: Final = "load()"
_WARMUP: Final = 2


def _breakdown_size(thread: Path, target: int, count: int, agent_id: str, missing: set[str]) -> _Trees:
    """The save tree, the load tree and the unwrapped comparisons at one size.

    Each round records one probed save and one probed load, then times the comparisons with the
    probe paused, so a slow stretch of the machine lands on the trees and the comparisons alike.
    """
    content = build_content(target)
    store = HandoffStore(thread, agent_id=agent_id)
    journal_first = HandoffStore(thread.parent / f"{thread.name}-journal", agent_id=agent_id, durability="journal")
    # a second thread for the new-store-per-save case: a save from another store object makes
    # the next save of `store` miss its head cache and re-verify the newest file
    other = thread.parent / f"{thread.name}-new-store"
    for _ in range(DEFAULT_KEEP + 2):
        store.save(content)  # the steady state: history/ is full, so every save also prunes one
        journal_first.save(content)
        HandoffStore(other, agent_id=agent_id).save(content)
    primary = store.primary
    data = primary.read_bytes()
    baseline = thread.parent / f"{thread.name}-baseline" / primary.name
    baseline.parent.mkdir(mode=0o700)
    minimal_durable_write(baseline, data)
    save_cases: dict[str, Callable[[], object]] = {
        "store.save(), unwrapped (one store, as above)": lambda: store.save(content),
        "store.save(), durability journal, unwrapped": lambda: journal_first.save(content),
        "HandoffStore(dir).save(): a new store each time": lambda: HandoffStore(other, agent_id=agent_id).save(content),
        "HandoffStore(dir) constructor alone": lambda: HandoffStore(thread, agent_id=agent_id),
        "minimal durable write of the same bytes (baseline)": lambda: minimal_durable_write(baseline, data),
    }
    load_cases: dict[str, Callable[[], object]] = {
        "load(), unwrapped": lambda: loader.load(primary),
        "load() with the garbage collector off": lambda: _load_without_gc(primary),
        "read + orjson.loads + sha256 (baseline)": lambda: orjson_and_sha256(primary),
    }
    times: dict[str, list[float]] = {}
    with Probe() as probe:
        _instrument(probe)
        for round_ in range(_WARMUP + count):
            if round_ == _WARMUP:
                probe.forget()
                times.clear()
            probe.record(lambda: store.save(content), label=_SAVE, own="envelope and glue")
            probe.record(lambda: journal_first.save(content), label=_SAVE_JOURNAL, own="envelope and glue")
            probe.record(lambda: loader.load(primary), label=_LOAD, own="Handoff.model_validate and glue")
            with probe.paused():
                samples = interleaved({**save_cases, **load_cases}, repeats=1, warmup=0, rotate=round_)
            for name, sample in samples.items():
                times.setdefault(name, []).extend(sample.seconds)
        missing.update(probe.missing)
        save_tree, journal_tree, load_tree = probe.tree(_SAVE), probe.tree(_SAVE_JOURNAL), probe.tree(_LOAD)
    return (
        save_tree,
        journal_tree,
        load_tree,
        {name: Sample(name, tuple(times[name])) for name in save_cases},
        {name: Sample(name, tuple(times[name])) for name in load_cases},
    )


def _tree_rows(trees: Sequence[Sequence[Node]]) -> list[list[str]]:
    """One row per node, indented by depth, with its median time and share of the root at each size."""
    by_key = [{node.key: node for node in tree} for tree in trees]
    rows = []
    for key in tree_order(trees):
        depth = len(key) - 1
        cells = ["\u00a0\u00a0" * depth + key[-1]]
        has_children = False
        for nodes, tree in zip(by_key, trees, strict=True):
            node = nodes.get(key)
            root = tree[0].total.median
            cells.append("-" if node is None else f"{ms(node.total.median)} ({node.total.median / root:4.0%})")
            has_children = has_children or any(other[: len(key)] == key and len(other) > len(key) for other in nodes)
        rows.append(cells)
        own = _own_row(key, depth, by_key, trees)
        if has_children and own is not None:
            rows.append(own)
    return rows


def _own_row(
    key: Key, depth: int, by_key: Sequence[Mapping[Key, Node]], trees: Sequence[Sequence[Node]]
) -> list[str] | None:
    """The ``· self`` row under a node with children, or None when its own time is negligible everywhere."""
    label = next((nodes[key].own_label for nodes in by_key if key in nodes and nodes[key].own_label), None)
    cells = ["\u00a0\u00a0" * (depth + 1) + f"· self: {label or 'its own code'}"]
    worth_showing = False
    for nodes, tree in zip(by_key, trees, strict=True):
        node = nodes.get(key)
        root = tree[0].total.median
        cells.append("-" if node is None else f"{ms(node.own.median)} ({node.own.median / root:4.0%})")
        worth_showing = worth_showing or (node is not None and node.own.median >= _NEGLIGIBLE * root)
    return cells if worth_showing else None


def _extra_rows(extras: Sequence[Mapping[str, Sample]]) -> list[list[str]]:
    return [[name, *(ms(samples[name].median) for samples in extras)] for name in extras[0]]


_NOTES: Final = """\
Each tree is the real call under a probe that wraps the library's internals and the primitives under
them (the temp file's creation, `os.fsync`/`fdatasync`, the name exchange, `os.replace`, `os.link`,
`os.listdir`, `os.unlink`). Every row is the median over the passes of the time spent in that call,
children included; its share is of the median of the whole call. A `· self` row is the time a call
spends outside the calls wrapped under it (for `validate content`: pydantic validation; for
`load()`: `Handoff.model_validate`), shown where it reaches 1% at some size. Medians do not add up
exactly. A name called twice under one parent shows as `name #2`. Calls made once per item (orjson
per free-form tree) are not wrapped: the probe's microsecond per call would be most of what they
cost. `gc.collect()` runs before every pass; the collector stays on, except where the library itself
holds it off (a load, a save's validation). Each round records one probed save and one probed load,
then times the comparison rows with the probe removed, in rotating order: a slow stretch of the
shared machine lands on the trees and on the comparisons alike.
"""


def run_breakdown(root: Path, rounds: Mapping[str, int], out: Path, *, agent_id: str, quick: bool) -> None:
    """Time the steps of save and load at every size; print the trees and write them to *out*."""
    measured = []
    missing: set[str] = set()
    for size in SIZES:
        count = max(3, rounds[size.label] // _SHARE)
        print(f"breaking down {size.label} ({count} passes)...", flush=True)
        thread = root / f"steps-{size.label.replace(' ', '')}"
        measured.append(_breakdown_size(thread, size.target, count, agent_id, missing))
    save_trees = [save for save, _, _, _, _ in measured]
    journal_trees = [journal for _, journal, _, _, _ in measured]
    load_trees = [load for _, _, load, _, _ in measured]
    save_extras = [extra for _, _, _, extra, _ in measured]
    load_extras = [extra for _, _, _, _, extra in measured]

    tree_headers = ["step", *(f"{size.label} ms (share)" for size in SIZES)]
    extra_headers = ["for comparison, unwrapped", *(f"{size.label} ms" for size in SIZES)]
    sections = ["## How to read it\n\n" + _NOTES]
    parts = (
        ("Save (durability full, the default)", save_trees, save_extras),
        ("Save, durability journal", journal_trees, None),
        ("Load", load_trees, load_extras),
    )
    for title, trees, extras in parts:
        tree_rows = _tree_rows(trees)
        print(f"\n{title}: median per step")
        print(text_table(tree_headers, tree_rows).replace("\u00a0", " "))
        section = f"## {title}\n\n" + markdown_table(tree_headers, tree_rows)
        if extras is not None:
            extra_rows = _extra_rows(extras)
            print()
            print(text_table(extra_headers, extra_rows))
            section += "\n\n" + markdown_table(extra_headers, extra_rows)
        sections.append(section)
    if missing:
        note = "not in the library any more, so not timed: " + ", ".join(sorted(missing))
        print(f"\n{note}")
        sections.append(f"## Missing\n\n{note}")
    facts = [*machine_facts(root), run_kind(quick=quick)]
    write_report(out, "handoff-files: where the time in save and load goes", facts, sections)
    print(f"\nwrote {out}")
