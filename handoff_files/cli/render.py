"""Rendering for people: a handoff as a shift-change briefing, and thread history as a table."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # annotations only: each command imports the library modules it uses, so `show` loads no inbox
    from handoff_files.format.model import Handoff
    from handoff_files.inbox.lifecycle import InboxRequest
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
    "request_detail",
    "request_table",
    "seal_text",
    "timeline",
    "to_json",
    "validation_errors",
    "validation_records",
    "validation_report",
]

_WIDTH = 88


def _wrap(text: str, indent: str = "  ") -> list[str]:
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, _WIDTH, initial_indent=indent, subsequent_indent=indent) or [indent])
    return lines


def briefing(restored: Restored) -> str:
    """Render a handoff for a person taking over a shift: story, dangers, next steps, facts, reasons."""
    h = restored.handoff
    out = [
        f"{h.agent_id} / {h.thread_id}, generation {h.generation}, sealed {h.created_at:%Y-%m-%d %H:%M:%S %Z}"
        f" ({seal_text(h)})",
        f"from: {restored.source} ({restored.path})",
    ]
    out += [f"note: {problem}" for problem in restored.problems]
    out += ["", "NARRATIVE", *_wrap(h.narrative or "(none)")]
    out += ["", "WARNINGS"]
    out += [f"  ! [{w.severity}] {w.text}" if w.severity else f"  ! {w.text}" for w in h.warnings] or ["  (none)"]
    out += ["", "PRIORITIES"]
    out += [f"  {i}. {p.task}  ({p.urgency.replace('_', ' ')})" for i, p in enumerate(h.priorities, 1)] or ["  (none)"]
    out += ["", "STATE", *_state_lines(h)]
    out += ["", "DECISIONS"]
    for d in h.decisions:
        out.append(f"  - [{d.status}] {d.decision}")
        out.append(f"      because: {d.reason}")
        if d.alternatives_considered:
            out.append(f"      instead of: {'; '.join(d.alternatives_considered)}")
        if not d.reversible:
            out.append("      (not reversible)")
    if not h.decisions:
        out.append("  (none)")
    if h.context is not None:
        out += ["", "CONTEXT", f"  {len(h.context.conversation_history)} messages in the conversation history"]
        if h.context.tool_state:
            out.append(f"  tool state: {', '.join(sorted(h.context.tool_state))}")
    return "\n".join(out) + "\n"


def _state_lines(h: Handoff) -> list[str]:
    s = h.state
    lines = []
    for label, tasks in (("active", s.active_tasks), ("blocked", s.blocked_tasks), ("completed", s.completed_tasks)):
        lines.append(f"  {label} ({len(tasks)}):")
        lines += [f"    - {task}" for task in tasks]
    lines.append(f"  errors: {s.error_count}   energy: {s.energy_level:.2f}")
    if s.session_id is not None:
        lines.append(f"  session: {s.session_id}")
    if s.environment:
        lines.append("  environment: " + ", ".join(f"{k}={v}" for k, v in sorted(s.environment.items())))
    if s.data:
        lines.append("  data: " + _short(s.data))
    return lines


def _short(value: Any, limit: int = 200) -> str:
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


def history_table(entries: Iterable[HistoryEntry]) -> str:
    """Render the generations of a thread, newest first, one line each; ``*`` marks the primary's."""
    from handoff_files.thread.layout import HISTORY_DIR  # noqa: PLC0415 -- the history command has loaded it already

    lines = []
    for e in entries:
        where = e.path.name if e.path.parent.name != HISTORY_DIR else f"{HISTORY_DIR}/{e.path.name}"
        number = "?" if e.generation is None else str(e.generation)
        mark = "*" if e.current else " "
        if e.problem is not None or e.created_at is None:
            lines.append(f"{number:>6}{mark} {where:<24} BAD: {e.problem}")
        else:
            lines.append(f"{number:>6}{mark} {where:<24} {e.created_at:%Y-%m-%d %H:%M:%S}  {e.checksum}")
    return "\n".join(lines) + ("\n" if lines else "(no generations)\n")


def seal_text(handoff: Handoff) -> str:
    """The seal as ``algorithm:digest``, or what verified an older, migrated file instead."""
    if handoff.seal is not None:
        return str(handoff.seal)
    migrated = handoff.lineage.migrated_from
    version = migrated.schema_version if migrated is not None else "an older version"
    return f"{version} checksum over state; migrated in memory"


def migration_report(report: MigrationReport) -> str:
    """Render what a migration did, or would do on a dry run, with every assumption it made."""
    if report.handoff is None:
        return f"{report.source} is already {report.original_version}: nothing to do\n"
    if report.receipt is None:
        head = f"{report.source}: {report.original_version} → 2.0 (dry run, nothing written)"
    else:
        head = (
            f"{report.source}: {report.original_version} → 2.0, sealed as generation {report.receipt.generation} "
            f"in {report.receipt.path} ({report.receipt.checksum})"
        )
    lines = [head, "assumptions the migration made:"]
    lines += [f"  - {note}" for note in report.notes]
    if report.receipt is not None:
        lines += [f"note: {problem}" for problem in report.receipt.problems]
    h = report.handoff
    lines.append(
        f"carried over: narrative ({len(h.narrative)} chars), {len(h.decisions)} decisions, "
        f"{len(h.priorities)} priorities, {len(h.warnings)} warnings, "
        f"{len(h.state.active_tasks) + len(h.state.blocked_tasks) + len(h.state.completed_tasks)} tasks"
    )
    return "\n".join(lines) + "\n"


_MARKS: Final = {"ok": "ok  ", "warning": "WARN", "error": "BAD ", "repaired": "FIXED", "unrepaired": "LOST"}


def findings_report(findings: Iterable[Finding]) -> str:
    """Render the doctor's findings, one line each, with what a person can do."""
    lines = []
    for f in findings:
        advice = f" — {f.advice}" if f.advice else ""
        lines.append(f"{_MARKS[f.level]:<5} {f.what}{advice}")
    return "\n".join(lines) + "\n"


def timeline(entries: Iterable[Entry], problems: Iterable[str]) -> str:
    """Render the journal as a readable timeline, oldest first, and what was damaged."""
    lines = []
    for e in entries:
        when = e.at.replace("T", " ").rstrip("Z")
        generation = f"gen {e.generation}" if e.generation is not None else ""
        lines.append(f"{when}  {e.event:<11} {generation:<10} {e.summary}")
    lines += [f"note: {problem}" for problem in problems]
    return "\n".join(lines) + "\n" if lines else "(the journal is empty)\n"


def request_table(requests: Iterable[InboxRequest], problems: Iterable[object] = ()) -> str:
    """Render inbox requests one line each (id, status, priority, who to whom, when, reason), then what was skipped."""
    # imported here: only the inbox commands render requests, and `show` never loads the inbox
    from handoff_files.inbox.status import HandoffStatus  # noqa: PLC0415 -- see the comment above

    lines = []
    for r in requests:
        deadline = (
            f"  expires {r.expires_at:%Y-%m-%d %H:%M:%S}" if r.expires_at and r.status is HandoffStatus.PENDING else ""
        )
        who = f"{r.from_agent} → {r.to_agent or '?'}"
        reason = r.reason if len(r.reason) <= 60 else r.reason[:59] + "…"
        lines.append(
            f"{r.handoff_id}  {r.status.value:<9} p{r.priority:<3} {who:<28} {r.created_at:%Y-%m-%d %H:%M:%S}"
            f"{deadline}  {reason}"
        )
    lines += [f"note: skipped a damaged request: {problem}" for problem in problems]
    return "\n".join(lines) + "\n" if lines else "(no requests)\n"


def request_detail(request: InboxRequest) -> str:
    """Render one inbox request in full: where it stands, who asked whom for what, and when each step happened."""
    r = request
    out = [
        f"handoff {r.handoff_id}: {r.status.value}",
        f"  {r.from_agent} → {r.to_agent or '?'}, priority {r.priority}",
    ]
    out += _wrap(f"reason: {r.reason or '(none)'}", "  ")
    if r.rejection_reason is not None:
        out += _wrap(f"rejected because: {r.rejection_reason}", "  ")
    if r.capabilities_required:
        out.append(f"  requires: {', '.join(r.capabilities_required)}")
    if r.descriptor is not None:
        d = r.descriptor
        out.append(f"  checkpoint: {d.source} ({d.checkpoint_id}), blob {d.blob_id[:12]}…")
    for name in ("created_at", "expires_at", "accepted_at", "rejected_at", "completed_at"):
        moment = getattr(r, name)
        if moment is not None:
            out.append(f"  {name.removesuffix('_at')}: {moment:%Y-%m-%d %H:%M:%S %Z}")
    if r.metadata:
        out.append("  metadata: " + _short(r.metadata))
    return "\n".join(out) + "\n"


def one_line(text: str) -> str:
    """Errors are one line on stderr: a newline in a key or value named in the message is escaped."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def to_json(value: Any) -> str:
    """Machine output for ``--json``."""
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False, default=str) + "\n"
