"""Merging handoff's entries into one settings file's text: hooks (JSON) and the MCP server (JSON or TOML).

Each merge takes the file's text and returns the new text, what was added and what was found
already there; it only ever adds (:mod:`~handoff_files.hooks.jsonedit`, :mod:`~handoff_files.hooks.tomledit`).
An entry of ours already there is kept as it is, unless it runs on another thread than this
install's: kept beside the new entries, events would go to two threads, so the file is refused
and the person chooses which entry stays.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from handoff_files.format.codec import parse_json
from handoff_files.foundation.errors import HandoffParseError, HandoffValidationError
from handoff_files.hooks import jsonedit, tomledit
from handoff_files.hooks.entries import SERVER_NAMES, Plan, is_our_hook, is_our_server, thread_named
from handoff_files.hooks.formats import Agent

__all__ = ["merge_hooks", "merge_server"]


def _json(text: str, path: Path) -> dict[str, Any]:
    document = parse_json(text.encode("utf-8"), path)
    if not isinstance(document, dict):
        msg = f"holds a JSON {type(document).__name__}, not an object; fix it before installing"
        raise HandoffValidationError(path, msg)
    return document


def _wrong(path: Path, where: str, found: Any, wanted: str) -> HandoffValidationError:
    what = "null" if found is None else f"a {type(found).__name__}"
    msg = f"{where} is {what}, not {wanted}; fix it by hand (or remove it), then install again"
    return HandoffValidationError(path, msg)


def merge_hooks(
    text: str, path: Path, plan: Plan, agent: Agent, words: list[str], *, project: Path
) -> tuple[str, list[str], list[str]]:
    added: list[str] = []
    kept: list[str] = []
    if plan.hooks_shape == "flat":
        document = _json(text, path)
        version = document.get("version")
        if "version" not in document:
            text = jsonedit.add_member(text, (), "version", 1)
            added.append("version: 1")
        elif version != 1:
            shown = json.dumps(version)
            msg = f'"version" is {shown}; this install writes version 1 hooks, so it leaves the file as it is'
            raise HandoffValidationError(path, msg)
    ours = thread_named(plan.hooks[0].command)
    found = _json(text, path).get("hooks")
    events: dict[str, Any] = found if isinstance(found, dict) else {}
    for event, entries in events.items():
        for command in _our_commands(entries if isinstance(entries, list) else [], plan, agent, words):
            _one_thread(path, f"hooks.{event}", (thread_named(command), ours), project)
    for entry in plan.hooks:
        body = entry.body()
        item = body if plan.hooks_shape == "flat" else {"hooks": [body]}
        document = _json(text, path)
        hooks = document.get("hooks")
        if "hooks" not in document:  # a "hooks": null is there: refused below, never replaced
            text = jsonedit.add_member(text, (), "hooks", {entry.event: [item]})
        elif not isinstance(hooks, dict):
            raise _wrong(path, '"hooks"', hooks, "an object")
        elif entry.event not in hooks:
            text = jsonedit.add_member(text, ("hooks",), entry.event, [item])
        elif not isinstance(hooks[entry.event], list):
            raise _wrong(path, f'"hooks"."{entry.event}"', hooks[entry.event], "a list")
        elif _has_hook(hooks[entry.event], plan, agent, words):
            kept.append(f"hooks.{entry.event}: a `handoff hook {agent}` entry is already there")
            continue
        else:
            text = jsonedit.add_item(text, ("hooks", entry.event), item)
        added.append(f"hooks.{entry.event}: {entry.command}")
    return text, added, kept


def _has_hook(entries: list[Any], plan: Plan, agent: Agent, words: list[str]) -> bool:
    return bool(_our_commands(entries, plan, agent, words))


def _our_commands(entries: list[Any], plan: Plan, agent: Agent, words: list[str]) -> list[str]:
    """The commands of *entries* (one event's) that run ``handoff hook AGENT``."""
    hooks = (
        entries
        if plan.hooks_shape == "flat"
        else [
            hook
            for group in entries
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for hook in group["hooks"]
        ]
    )
    return [
        hook["command"]
        for hook in hooks
        if isinstance(hook, dict) and is_our_hook(hook.get("command"), agent, executable=words)
    ]


def _one_thread(path: Path, where: str, threads: tuple[str | None, str | None], project: Path) -> None:
    """Refuse an entry of ours on another thread than this install's: kept beside the new entries, the
    events would go to two threads (an entry is never replaced, so the person chooses which stays).

    :param threads: the ``--thread`` the entry names and the one this install writes (None: the
        project's default, which the hooks find); a relative one is the project's.
    """
    named, ours = threads
    if (None if named is None else project / named) == (None if ours is None else project / ours):
        return
    found = "the project's default thread" if named is None else named
    wanted = "the project's default thread" if ours is None else ours
    msg = (
        f"{where} already runs handoff on {found}, and this install is for {wanted}: kept beside the new entries, "
        f"events would go to two threads; remove that entry, or install again for {found}"
    )
    raise HandoffValidationError(path, msg)


def merge_server(
    text: str, path: Path, form: str, entry: dict[str, Any], words: list[str], *, project: Path
) -> tuple[str, list[str], list[str]]:
    if form == "toml":
        try:
            servers = tomledit.loads(text).get("mcp_servers", {})
        except ValueError as exc:
            msg = f"is not valid TOML ({exc}); fix it before installing"
            raise HandoffParseError(path, msg) from exc
        where = "mcp_servers"
    else:
        servers = _json(text, path).get("mcpServers", {})  # "mcpServers": null is refused below
        where = "mcpServers"
    if not isinstance(servers, dict):
        raise _wrong(path, where, servers, "a table of servers" if form == "toml" else "an object")
    for name, existing in servers.items():
        if is_our_server(existing, executable=words):
            named = thread_named(existing.get("command"), existing.get("args"))
            _one_thread(path, f"{where}.{name}", (named, thread_named(entry["command"], entry["args"])), project)
            same = "the same as" if existing == entry else "not the same as"
            return text, [], [f"{where}.{name}: a `handoff mcp` server is already there ({same} this install's)"]
    name = next((candidate for candidate in SERVER_NAMES if candidate not in servers), None)
    if name is None:
        msg = f"{where} already has servers named {' and '.join(SERVER_NAMES)} that are not handoff's; add it by hand"
        raise HandoffValidationError(path, msg)
    command = shlex.join([entry["command"], *entry["args"]])
    if form == "toml":
        try:
            text = tomledit.append_table(text, ("mcp_servers", name), entry)
        except ValueError as exc:
            msg = f"cannot add [mcp_servers.{name}] at its end ({exc}); add it by hand: command and args of `{command}`"
            raise HandoffValidationError(path, msg) from exc
    elif "mcpServers" not in _json(text, path):
        text = jsonedit.add_member(text, (), "mcpServers", {name: entry})
    else:
        text = jsonedit.add_member(text, ("mcpServers",), name, entry)
    return text, [f"{where}.{name}: {command}"], []
