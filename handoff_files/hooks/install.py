"""Installing the hooks: merge the hook entries and the MCP server into an agent's project settings.

The rules: what is there stays, byte for byte, where nothing is added (keys, order, spacing, line
endings); an entry is only ever added, never replaced — a hook that already runs ``handoff hook
AGENT`` or a server that already runs ``handoff mcp`` is left as it is, and named in the report;
a file that is not valid JSON (or TOML), or a value of the wrong type where an entry goes, is
refused with the file named and nothing written anywhere; a second install changes nothing; a
dry run reads and reports but writes nothing. Every file is merged before any is written.

The hooks and the MCP server must use one thread. The MCP entry names the project's own thread
relative to the project (the file is shared; each checkout has its own path), another by its
absolute path;
the hooks, on the default thread ``PROJECT/.handoff/main``, are left without ``--thread`` and find
it from the event's working directory (:mod:`~handoff_files.hooks.location`): the nearest folder
up holding ``.handoff``, within its repository. So install makes ``PROJECT/.handoff`` (mode 0700)
when it is missing; a hook makes nothing in a folder that has none, and a project inside a
larger repository (a monorepo's package) is found as itself, not as the repository's top. That
keeps the hook commands free of this machine's paths: the same settings file works in another
checkout, or on a teammate's machine, wherever ``.handoff`` marks the project (it does once
install has run there). Writing ``--thread ABS`` into every hook would agree too, but would tie
each hook to one folder on one machine. A thread given elsewhere
(``thread=``) is written into the hooks' commands, and no ``.handoff`` folder is made.
"""

from __future__ import annotations

import difflib
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from handoff_files.foundation.atomic import fsync_dir, read_bytes, write_durable
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffValidationError,
    HandoffWriteError,
)
from handoff_files.hooks.entries import (
    command_words,
    mcp_entry,
    plan_for,
)
from handoff_files.hooks.executable import Resolved, resolve_executable
from handoff_files.hooks.formats import AGENTS, Agent
from handoff_files.hooks.location import DEFAULT_THREAD, HANDOFF_DIR, project_to_set_up
from handoff_files.hooks.merge import merge_hooks, merge_server
from handoff_files.hooks.worktree import git_ignores
from handoff_files.thread.trust import is_private, trust, why_untrusted

__all__ = ["FileChange", "InstallReport", "install"]

_SETTINGS_LIMIT: Final = 16 << 20  # a settings file larger than this is not one
#: A merge: the file's text (``{}`` or empty when it is new) and path in; the new text, what was
#: added and what was found already there out.
_Merge = Callable[[str, Path], tuple[str, list[str], list[str]]]


@dataclass(frozen=True, slots=True)
class FileChange:
    """One settings file: what install did to it (or, on a dry run, would do), and what it left alone."""

    path: Path
    action: Literal["created", "updated", "unchanged"]
    added: tuple[str, ...]
    kept: tuple[str, ...]
    before: str | None
    after: str

    def diff(self) -> str:
        """The change as a unified diff (empty when unchanged)."""
        old = [] if self.before is None else self.before.splitlines(keepends=True)
        name = os.fspath(self.path)
        return "".join(
            difflib.unified_diff(
                old, self.after.splitlines(keepends=True), "/dev/null" if self.before is None else name, name
            )
        )


@dataclass(frozen=True, slots=True)
class InstallReport:
    """What ``install`` changed, file by file, with the agent's own notes (trust prompts, restarts).

    ``handoff_dir`` is the project's ``.handoff`` folder when install made it (a dry run: would
    make it), so the hooks find the project by it; None when it was there or the thread is elsewhere.
    """

    agent: Agent
    project: Path
    thread: Path
    dry_run: bool
    files: tuple[FileChange, ...]
    notes: tuple[str, ...]
    handoff_dir: Path | None = None

    @property
    def changed(self) -> bool:
        """Whether a folder or a file was (or, on a dry run, would be) created or updated."""
        return self.handoff_dir is not None or any(change.action != "unchanged" for change in self.files)

    def lines(self) -> list[str]:
        """The report for a person, one line each."""
        verb = {"created": "would create", "updated": "would update"} if self.dry_run else {}
        out: list[str] = []
        if self.handoff_dir is not None:
            out.append(f"{verb.get('created', 'created')} {self.handoff_dir} (the hooks find the project by it)")
        for change in self.files:
            out.append(f"{verb.get(change.action, change.action)} {change.path}")
            out += [f"  + {what}" for what in change.added]
            out += [f"  = {what}" for what in change.kept]
        if not self.changed:
            out.append("nothing to do: every entry is already there")
        elif self.dry_run:
            out.append("dry run: nothing was written")
        return out + [f"note: {note}" for note in self.notes]

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object (``handoff install --json``)."""
        files = [
            {"path": os.fspath(c.path), "action": c.action, "added": list(c.added), "kept": list(c.kept)}
            for c in self.files
        ]
        return {
            "agent": self.agent,
            "project": os.fspath(self.project),
            "thread": os.fspath(self.thread),
            "dry_run": self.dry_run,
            "changed": self.changed,
            "handoff_dir": None if self.handoff_dir is None else os.fspath(self.handoff_dir),
            "files": files,
            "notes": list(self.notes),
        }


def install(
    agent: Agent,
    project: Path | None = None,
    *,
    dry_run: bool,
    thread: Path | None = None,
    executable: str | None = None,
    gitignore: bool = False,
) -> InstallReport:
    """Add the handoff hooks and MCP server to *project*'s settings for *agent*. Writes (unless *dry_run*).

    :param project: the project folder (its ``.claude/``, ``.codex/`` or ``.cursor/`` is made if missing);
        default: the one around the working directory (:func:`~handoff_files.hooks.location.project_to_set_up`:
        the project set up already, else the repository's top), never a nested project in a subfolder.
    :param dry_run: report what would change and write nothing.
    :param thread: the thread the MCP server (and, if not the default, the hooks) use; default
        ``PROJECT/.handoff/main``, which the hooks find by themselves (install makes ``PROJECT/.handoff``).
    :param executable: the ``handoff`` command as the agent will run it, as a shell reads it: a full
        path if it is not on PATH (quoted if it holds a space), or several words (``uv run handoff``).
        Default: the running script, by its absolute path unless ``handoff`` on PATH is this one for
        good (:mod:`~handoff_files.hooks.executable`); a note says when the settings name this machine's path.
    :param gitignore: add ``.handoff/`` to the project's ``.gitignore`` when git does not ignore the
        thread yet (without it, a note offers to).
    :returns: what changed, folder and file by file.
    :raises HandoffNotFoundError: if *project* is not a folder.
    :raises HandoffValidationError: if *executable* is not a command (empty, or an unclosed quote).
    :raises HandoffParseError: if a settings file is not valid JSON (or TOML), naming it.
    :raises HandoffValidationError: if a settings file holds something of the wrong type where an entry goes.
    :raises HandoffWriteError: if a file cannot be written.
    """
    if project is None:
        project = project_to_set_up(Path.cwd())
    if agent not in AGENTS:
        msg = f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}"
        raise HandoffValidationError(project, msg)
    if not project.is_dir():
        msg = "no such project folder"
        raise HandoffNotFoundError(project, msg)
    resolved = resolve_executable() if executable is None else Resolved(executable, None)
    try:
        words = command_words(resolved.command)
    except ValueError as exc:
        msg = f"the executable {resolved.command!r} is not a command ({exc}); give it as a shell reads it"
        raise HandoffValidationError(project, msg) from exc
    project = project.absolute()
    chosen = (project / DEFAULT_THREAD) if thread is None else thread.absolute()
    default = chosen == project / DEFAULT_THREAD
    plan = plan_for(agent, executable=words, thread=None if default else chosen)
    # the project's own thread is named relative to it: the MCP file is shared, every checkout has its own path
    served = chosen.relative_to(project) if chosen.is_relative_to(project) else chosen
    entry = mcp_entry(words, served)
    merges: list[tuple[Path, _Merge]] = [
        (project / plan.hooks_file, lambda text, path: merge_hooks(text, path, plan, agent, words, project=project)),
        (
            project / plan.mcp_file,
            lambda text, path: merge_server(text, path, plan.mcp_format, entry, words, project=project),
        ),
    ]
    changes = [_change(path, merge) for path, merge in merges]  # every file merged before any is written
    ignored, offer = _gitignore(project, chosen, add=gitignore)
    changes += [ignored] if ignored is not None else []
    marker = project / HANDOFF_DIR if default and not (project / HANDOFF_DIR).is_dir() else None
    if not dry_run:
        if marker is not None:
            _make_dir(marker)
        for change in changes:
            _write(change)
    notes = (*_resolved_note(resolved), *offer, *plan.notes, *(() if dry_run else _trusted(chosen)))
    return InstallReport(agent, project, chosen, dry_run, tuple(changes), notes, marker)


def _gitignore(project: Path, thread: Path, *, add: bool) -> tuple[FileChange | None, tuple[str, ...]]:
    """The ``.gitignore`` line that keeps a thread inside *project* out of git (when *add*), or a note
    offering it; neither outside a repository, for a thread elsewhere, or when git ignores it already."""
    if not thread.is_relative_to(project / HANDOFF_DIR):
        return None, ()
    if git_ignores(project, os.fspath(thread.relative_to(project))) is not False:
        return None, ()
    line = f"{HANDOFF_DIR}/"
    if not add:
        why = "git would commit the thread's files (this machine's sessions) with the project"
        return None, (f"{why}: add {line} to .gitignore, or install again with --gitignore, which does",)
    path = project / ".gitignore"
    before = _read(path)
    text = before or ""
    after = text + ("\n" if text and not text.endswith("\n") else "") + line + "\n"
    return FileChange(path, "created" if before is None else "updated", (line,), (), before, after), ()


def _resolved_note(resolved: Resolved) -> tuple[str, ...]:
    """Say, loudly, that the commands name this machine's path, why, and how to write the bare name."""
    if resolved.why is None:
        return ()
    return (
        f"the hooks and the MCP server run {resolved.command}, this machine's path ({resolved.why}), so an agent "
        "runs it whatever its PATH; on another machine install again, or give --executable handoff if the "
        "agent's PATH has it",
    )


def _trusted(thread: Path) -> tuple[str, ...]:
    """Trust an existing *thread* made as the library makes threads (0700/0600, never a git checkout's
    modes); else a note saying the hooks will not brief from it, and how to trust it. A thread not
    made yet needs nothing: the library trusts the folder it makes (:mod:`~handoff_files.thread.trust`).
    """
    try:
        if not thread.is_dir() or why_untrusted(thread) is None:
            return ()
        if is_private(thread):
            trust(thread, how="trusted by handoff install")
            return ()
        why = why_untrusted(thread)
    except HandoffError as exc:
        why = str(exc)
    command = f"handoff trust {shlex.quote(str(thread))}"
    return (f"the hooks will not brief from {thread}: {why}; if you trust it, run `{command}`",)


def _make_dir(path: Path) -> None:
    """Make *path* (mode 0700: threads are private), durably."""
    try:
        path.mkdir(mode=0o700)
        fsync_dir(path.parent)  # the new folder is not durable until its entry is
    except OSError as exc:
        msg = f"cannot create the folder that marks the project for the hooks: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc


def _change(path: Path, merge: _Merge) -> FileChange:
    before = _read(path)
    start = before if before is not None else ("" if path.suffix == ".toml" else "{\n}\n")
    after, added, kept = merge(start, path)
    action: Literal["created", "updated", "unchanged"] = (
        "created" if before is None else ("updated" if after != before else "unchanged")
    )
    return FileChange(path, action, tuple(added), tuple(kept), before, after)


def _read(path: Path) -> str | None:
    try:
        data, _ = read_bytes(path, _SETTINGS_LIMIT)
    except HandoffNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"is not UTF-8 text ({exc.reason} at byte {exc.start}); fix it before installing"
        raise HandoffParseError(path, msg) from exc


def _write(change: FileChange) -> None:
    if change.action == "unchanged":
        return
    target = change.path.resolve()  # a settings file linked elsewhere is edited where it lives
    mode = target.stat().st_mode & 0o7777 if change.before is not None else 0o644
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        msg = f"cannot create the folder: {exc.strerror or exc}"
        raise HandoffWriteError(target.parent, msg) from exc
    write_durable(target, change.after.encode("utf-8"))
    try:
        target.chmod(mode)  # the temp file was made 0600; a settings file keeps its mode
    except OSError as exc:
        msg = f"written, but its mode could not be set back to {mode:o}: {exc.strerror or exc}"
        raise HandoffWriteError(target, msg) from exc
