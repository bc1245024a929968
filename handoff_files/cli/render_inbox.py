"""Rendering inbox requests for people: a table of them, and one in full."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from handoff_files.cli.render import one_line, short_value, wrap
from handoff_files.cli.terminal import fit, moment, terminal

if TYPE_CHECKING:  # annotations only: `show` never loads the inbox
    from handoff_files.inbox.request import InboxRequest

__all__ = ["request_detail", "request_table"]


def request_table(
    requests: Iterable[InboxRequest], problems: Iterable[object] = (), *, short_ids: dict[str, str] | None = None
) -> str:
    """Render inbox requests one line each (id, status, priority, who to whom, when, reason), then what was skipped.

    :param short_ids: full id → what to show of it (``HandoffInbox.abbreviate_ids()``); an id not in it is shown whole.
    """
    # imported here: only the inbox commands render requests, and `show` never loads the inbox
    from handoff_files.inbox.request import problem_kind  # noqa: PLC0415 -- see the comment above
    from handoff_files.inbox.status import HandoffStatus  # noqa: PLC0415 -- see the comment above

    shown = [(r, (short_ids or {}).get(r.handoff_id, r.handoff_id)) for r in requests]
    width = max((len(handoff_id) for _, handoff_id in shown), default=0)
    lines = []
    for r, handoff_id in shown:
        deadline = f"  expires {moment(r.expires_at)}" if r.expires_at and r.status is HandoffStatus.PENDING else ""
        who = f"{r.from_agent} → {r.to_agent or '?'}"
        reason = one_line(r.reason if len(r.reason) <= 60 else r.reason[:59] + "…")  # one request, one line
        lines.append(
            f"{handoff_id:<{width}}  {r.status.value:<9} p{r.priority:<3} {who:<28} {moment(r.created_at)}"
            f"{deadline}  {reason}"
        )
    lines += [f"note: skipped {problem_kind(problem)} request: {problem}" for problem in problems]
    return "\n".join(lines) + "\n" if lines else "(no requests)\n"


def request_detail(request: InboxRequest) -> str:
    """Render one inbox request in full: where it stands, who asked whom for what, and when each step happened."""
    r = request
    if r.refused_by is not None:
        return _refused_detail(r)
    out = [
        f"handoff {r.handoff_id}: {r.status.value}",
        f"  {r.from_agent} → {r.to_agent or '?'}, priority {r.priority}",
        *_signature_lines(r),
    ]
    out += wrap(f"reason: {r.reason or '(none)'}", "  ")
    if r.rejection_reason is not None:
        out += wrap(f"rejected because: {r.rejection_reason}", "  ")
    if r.capabilities_required:
        out.append(f"  requires: {', '.join(r.capabilities_required)}")
    if r.descriptor is not None:
        d = r.descriptor
        out.append(f"  checkpoint: {d.source} ({d.checkpoint_id}), blob {d.blob_id[:12]}…")
    for name in ("created_at", "expires_at", "accepted_at", "rejected_at", "completed_at"):
        when = getattr(r, name)
        if when is not None:
            out.append(f"  {name.removesuffix('_at')}: {moment(when)}")
    if r.metadata:
        out.append("  metadata: " + short_value(r.metadata))
    return "\n".join(out) + "\n"


def _refused_detail(r: InboxRequest) -> str:
    """A request refused before it was stored: why, first; and no id, since no request has it."""
    requires = f", requires {', '.join(r.capabilities_required)}" if r.capabilities_required else ""
    out = fit("not stored: ", str(r.rejection_reason), terminal())
    out.append(f"  asked: {r.from_agent} → {r.to_agent or '?'}, priority {r.priority}{requires}")
    out += wrap(f"reason given: {r.reason or '(none)'}", "  ")
    if r.descriptor is not None:
        out.append(f"  checkpoint: {r.descriptor.source} ({r.descriptor.checkpoint_id})")
    return "\n".join(out) + "\n"


def _signature_lines(r: InboxRequest) -> list[str]:
    """Who signed what was asked, and who the last change; nothing for a request nobody signed."""
    asked, changed = r.request_signature, r.change_signature
    if asked is None and changed is None:
        return []
    lines = [f"  requested: {one_line(asked.describe()) if asked is not None else 'unsigned'}"]
    if r.status.value != "PENDING" or changed is None or asked is None or changed.signature != asked.signature:
        lines.append(f"  last change: {one_line(changed.describe()) if changed is not None else 'unsigned'}")
    return lines
