"""Rendering for people: a handoff as a shift-change briefing, and thread history as a table."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from handoff_files.cli.render_checkpoint import checkpoint_lines
from handoff_files.cli.terminal import (
    Style,
    Terminal,
    digest_length,
    fit,
    highlight,
    moment,
    paint,
    short_digest,
    terminal,
)

if TYPE_CHECKING:  # annotations only: each command imports the library modules it uses, so `show` loads no inbox
    from handoff_files.format.model import Handoff
    from handoff_files.langgraph.describe import CheckpointView
    from handoff_files.thread.doctor import Finding
    from handoff_files.thread.journal import Entry
    from handoff_files.thread.results import HistoryEntry, MigrationReport, Restored
    from handoff_files.thread.validate import Validation

__all__ = [
    "briefing",
    "findings_report",
    "history_table",
    "migration_report",
    "one_line",
    "seal_text",
    "short_value",
    "timeline",
    "validation_errors",
    "validation_records",
    "validation_report",
    "wrap",
]


def wrap(text: str, indent: str = "  ", term: Terminal | None = None) -> list[str]:
    """Each paragraph of *text* indented, wrapped to the terminal (:func:`terminal` unless *term* is given)."""
    term = terminal() if term is None else term
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(fit(indent, paragraph, term, indent) if paragraph else [indent])
    return lines


def briefing(
    restored: Restored,
    *,
    term: Terminal | None = None,
    transferred: Mapping[str, Any] | None = None,
    checkpoint: CheckpointView | None = None,
) -> str:
    """Render a handoff for a person taking over a shift: story, dangers, next steps, facts, reasons.

    :param term: where it goes (default: :func:`terminal`): the width it is wrapped to, and colour.
    :param transferred: the record a finished transfer left in the thread (``transferred.json``): where it went.
    :param checkpoint: the LangGraph checkpoint the generation holds: shown first, then only the
        layers that hold something (its state is the checkpoint's record, not repeated).
    """
    t = terminal() if term is None else term
    h = restored.handoff
    out = _head(restored, transferred, t)
    for problem in restored.problems:
        out += fit("note: ", problem, t, "  ")
    if checkpoint is not None:
        out += ["", *checkpoint_lines(checkpoint, t)]

    def section(name: str, lines: list[str], empty: bool) -> None:
        """A section; a checkpoint's empty layer is left out."""
        if not (empty and checkpoint is not None):
            out.extend(["", paint(name, "heading", t), *lines])

    section("NARRATIVE", wrap(h.narrative or "(none)", "  ", t), not h.narrative)
    warnings = [line for w in h.warnings for line in fit(f"  ! [{w.severity}] " if w.severity else "  ! ", w.text, t)]
    section("WARNINGS", warnings or ["  (none)"], not h.warnings)
    priorities = [
        line
        for i, p in enumerate(h.priorities, 1)
        for line in fit(f"  {i}. ", f"{p.task}  ({p.urgency.replace('_', ' ')})", t)
    ]
    section("PRIORITIES", priorities or ["  (none)"], not h.priorities)
    section("STATE", _state_lines(h, t), checkpoint is not None)  # a checkpoint's state is its record, shown above
    section("DECISIONS", _decision_lines(h, t), not h.decisions)
    if h.context is not None:
        context = [f"  {len(h.context.conversation_history)} messages in the conversation history"]
        if h.context.tool_state:
            context += fit("  tool state: ", ", ".join(sorted(h.context.tool_state)), t, "    ")
        section("CONTEXT", context, empty=False)
    return "\n".join(out) + "\n"


def _decision_lines(h: Handoff, t: Terminal) -> list[str]:
    out: list[str] = []
    for d in h.decisions:
        out += fit("  - ", f"[{d.status}] {d.decision}", t)
        out += fit("      because: ", d.reason, t)
        if d.alternatives_considered:
            out += fit("      instead of: ", "; ".join(d.alternatives_considered), t)
        if not d.reversible:
            out.append("      (not reversible)")
    if not h.decisions:
        out.append("  (none)")
    return out


def _head(restored: Restored, transferred: Mapping[str, Any] | None, t: Terminal) -> list[str]:
    """Whose handoff, which generation, when and how it was sealed, where it came from, where the thread went."""
    h = restored.handoff
    if restored.source == "rebuilt":  # made from state.json and the journal: no seal, and nothing was migrated
        sealed = f"created {moment(h.created_at)} (not sealed: rebuilt from state.json and the journal)"
    else:
        sealed = f"sealed {moment(h.created_at)} ({seal_text(h) if h.seal is None else short_digest(str(h.seal))})"
    out = fit("", f"{h.agent_id} / {h.thread_id}, generation {h.generation}, {sealed}", t, "  ")
    out += fit("from: ", f"{restored.source} ({restored.where})", t, "  ")
    signed = restored.signature
    if signed is not None and signed.trusted:
        out += fit("", signed.describe(), t, "  ")
    elif signed is not None:  # said plainly, first thing: this story is not from anyone the user trusts
        said = signed.distrust
        out += highlight(fit("", f"NOT TRUSTED: {said}", t, "  "), 0, "NOT TRUSTED", "bad", t)
    if transferred is not None:
        thread = f" (thread {transferred['thread_id']})" if transferred.get("thread_id") else ""
        out += fit("transferred to: ", f"{transferred['target']}{thread}: this thread is closed", t, "  ")
    return out


def _state_lines(h: Handoff, term: Terminal) -> list[str]:
    s = h.state
    lines = []
    for label, tasks in (("active", s.active_tasks), ("blocked", s.blocked_tasks), ("completed", s.completed_tasks)):
        lines.append(f"  {label} ({len(tasks)}):")
        for task in tasks:
            lines += fit("    - ", task, term)
    lines += fit("  ", f"errors: {s.error_count}   energy: {s.energy_level:.2f}", term)
    if s.session_id is not None:
        lines += fit("  session: ", str(s.session_id), term)
    if s.environment:
        lines += fit("  environment: ", ", ".join(f"{k}={v}" for k, v in sorted(s.environment.items())), term, "    ")
    if s.data:
        lines += fit("  data: ", short_value(s.data), term, "    ")
    return lines


def short_value(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validation_report(results: Iterable[Validation]) -> str:
    """Render the paths that verified, one ``ok`` line each with generation and seal; see :func:`validation_errors`."""
    return "".join(
        f"ok {r.path} (generation {r.handoff.generation}, {seal_text(r.handoff)})\n"
        for r in results
        if r.handoff is not None
    )


def validation_errors(results: Iterable[Validation]) -> str:
    """Render the paths that failed, one line each (``path: reason``), for stderr."""
    return "".join(f"{one_line(str(r.error))}\n" for r in results if r.error is not None)


def validation_records(results: Iterable[Validation]) -> list[dict[str, Any]]:
    """The results of a validation as JSON-ready records: path and ``ok``, then generation and seal, or the error."""
    records: list[dict[str, Any]] = []
    for r in results:
        if r.handoff is not None:
            records.append(
                {"path": r.path, "ok": True, "generation": r.handoff.generation, "seal": seal_text(r.handoff)}
            )
        elif r.error is not None:
            records.append({"path": r.path, "ok": False, "error": r.error.reason})
    return records


def history_table(entries: Iterable[HistoryEntry], *, term: Terminal | None = None, pinned: bool = False) -> str:
    """Render the generations of a thread, newest first, one line each; ``*`` marks the primary's.

    Digests are cut short (:func:`short_digest`), as long as it takes to keep the listed ones apart.
    A generation listed from the primary alone (``history/`` has no verified copy of it) says so.

    :param term: where it goes (default: :func:`terminal`): the width it is wrapped to, and colour.
    :param pinned: the thread is pinned to signed generations: an unsigned one says so.
    """
    from handoff_files.thread.layout import HISTORY_DIR  # noqa: PLC0415 -- the history command has loaded it already

    t = terminal() if term is None else term
    listed = list(entries)
    length = digest_length(e.checksum for e in listed if e.checksum is not None)
    numbers = ["?" if e.generation is None else str(e.generation) for e in listed]
    places = [f"{HISTORY_DIR}/{e.path.name}" if e.path.parent.name == HISTORY_DIR else e.path.name for e in listed]
    number_width = max(map(len, numbers), default=0)
    where_width = max(map(len, places), default=0)
    lines = []
    for e, number, where in zip(listed, numbers, places, strict=True):
        prefix = f"{number:>{number_width}}{'*' if e.current else ' '} {where:<{where_width}}  "
        if e.problem is not None or e.created_at is None:
            lines += highlight(fit(prefix, f"BAD: {e.problem}", t), len(prefix), "BAD", "bad", t)
            continue
        if e.checksum is None:  # an older version's file, migrated in memory: it has no seal to copy yet
            seal, alone = "(no seal: an older version; `handoff migrate` seals it)", ""
        else:
            seal = short_digest(e.checksum, length)
            lost = f"  (no verified {HISTORY_DIR}/ copy: `handoff doctor --repair` writes it)"
            alone = "" if where.startswith(f"{HISTORY_DIR}/") else lost
        signer = "  unsigned" if pinned and e.signature is None and e.checksum is not None else _signer(e)
        lines += fit(prefix, f"{moment(e.created_at)}  {seal}{signer}{alone}", t)
    return "\n".join(lines) + ("\n" if lines else "(no generations)\n")


def _signer(entry: HistoryEntry) -> str:
    """``  signed by alice@example.com``, ``  signed by SHA256:… (not trusted)``, or nothing (unsigned)."""
    if entry.signature is None:
        return ""
    if entry.signature.principal is not None:
        return f"  signed by {entry.signature.principal}"
    return f"  signed by {entry.signature.fingerprint} (not trusted)"


def seal_text(handoff: Handoff) -> str:
    """The seal as ``algorithm:digest``, or what verified an older, migrated file instead (or that nothing did)."""
    if handoff.seal is not None:
        return str(handoff.seal)
    migrated = handoff.lineage.migrated_from
    if migrated is None:  # not sealed and not migrated: a handoff rebuilt from state.json and the journal
        return "no seal"
    return f"{migrated.schema_version} checksum over state; migrated in memory"


def migration_report(report: MigrationReport, *, term: Terminal | None = None) -> str:
    """Render what a migration did, or would do on a dry run, with every assumption it made.

    :param term: where it goes (default: :func:`terminal`): the width it is wrapped to.
    """
    t = terminal() if term is None else term
    if report.handoff is None:
        return f"{report.source} is already {report.original_version}: nothing to do\n"
    step = f"{report.source}: {report.original_version} → {report.handoff.schema_version}"
    if report.receipt is None:
        head = f"{step} (dry run, nothing written)"
    else:
        head = (
            f"{step}, sealed as generation {report.receipt.generation} "
            f"in {report.receipt.path} ({short_digest(report.receipt.checksum)})"
        )
    lines = [*fit("", head, t, "  "), "assumptions the migration made:"]
    for note in report.notes:
        lines += fit("  - ", note, t)
    if report.receipt is not None:
        for problem in report.receipt.problems:
            lines += fit("note: ", problem, t, "  ")
    h = report.handoff
    carried = (
        f"narrative ({len(h.narrative)} chars), {len(h.decisions)} decisions, "
        f"{len(h.priorities)} priorities, {len(h.warnings)} warnings, "
        f"{len(h.state.active_tasks) + len(h.state.blocked_tasks) + len(h.state.completed_tasks)} tasks"
    )
    lines += fit("carried over: ", carried, t, "  ")
    return "\n".join(lines) + "\n"


# each level's word, and its colour on a terminal
_MARKS: Final[dict[str, tuple[str, Style]]] = {
    "ok": ("ok", "good"),
    "warning": ("WARN", "warn"),
    "error": ("BAD", "bad"),
    "repaired": ("FIXED", "good"),
    "unwritten": ("FAIL", "bad"),  # the repair could not be written: nothing lost, nothing changed
    "unrepaired": ("LOST", "bad"),
}


def findings_report(findings: Iterable[Finding], *, term: Terminal | None = None) -> str:
    """Render the doctor's findings, one line each, with what a person can do; on a terminal the level word is coloured.

    :param term: where it goes (default: :func:`terminal`): the width it is wrapped to, and colour.
    """
    t = terminal() if term is None else term
    lines = []
    for f in findings:
        advice = f" — {f.advice}" if f.advice else ""
        word, style = _MARKS[f.level]
        lines += highlight(fit(f"{word:<5} ", f"{f.what}{advice}", t), 0, word, style, t)
    return "\n".join(lines) + "\n"


def timeline(
    entries: Iterable[Entry], problems: Iterable[str], *, among: Iterable[Entry] = (), term: Terminal | None = None
) -> str:
    """Render the journal as a readable timeline, oldest first, and what was damaged.

    Times are UTC, ending in ``Z`` as the journal writes them. A journal-first save's "document"
    line (its whole sealed generation) is left out: the "saved" line after it stands for the save.

    :param among: the whole journal, when *entries* are the lines a window picked from it: none
        picked from a journal that holds some is not an empty journal.
    :param term: where it goes (default: :func:`terminal`): the width it is wrapped to.
    """
    from handoff_files.thread.journal import DOCUMENT  # noqa: PLC0415 -- the log command has loaded it already

    t = terminal() if term is None else term
    shown = [e for e in entries if e.event != DOCUMENT]
    saves = [f"gen {e.generation}" if e.generation is not None else "" for e in shown]
    event_width = max((len(e.event) for e in shown), default=0)
    save_width = max(map(len, saves), default=0)
    lines = []
    for e, generation in zip(shown, saves, strict=True):
        when = e.at.replace("T", " ", 1)
        lines += fit(f"{when}  {e.event:<{event_width}}  {generation:<{save_width}}  ", e.summary, t)
    for problem in problems:
        lines += fit("note: ", problem, t, "  ")
    if lines:
        return "\n".join(lines) + "\n"
    held = sum(e.event != DOCUMENT for e in among)
    if not held:
        return "(the journal is empty)\n"
    return f"(no line matches: the journal holds {held} line{'s' if held > 1 else ''})\n"


def one_line(text: str) -> str:
    """Errors are one line on stderr: a newline in a key or value named in the message is escaped."""
    return text.replace("\r", "\\r").replace("\n", "\\n")
