"""The installed product, tried from outside the checkout: run by the python of a fresh venv holding the wheel.

``python smoke_installed.py SOURCE_TREE [--bare]`` (cwd: an empty folder outside the checkout). With
``--bare`` (the wheel alone, no extras) it checks that each missing extra is one line naming what to
install. Otherwise it checks that:

- ``handoff_files`` is imported from that venv's site-packages, not from the checkout;
- every module of the source tree (``handoff_files/**``, ``migrations/``) imports, and every public name resolves;
- every command and sub-command of ``handoff`` answers ``--help`` from the installed script;
- one real flow works end to end: save → show → brief → a SessionStart hook event → an MCP handshake and
  restore with the SDK's own client over stdio → a LangGraph graph checkpointed by ``HandoffSaver``, read back
  by a second saver.

Prints one line per step; exits 1 with the step's name at the first failure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

LAYERS: dict[str, Any] = {
    "narrative": "Ported the importer's date parsing; the CSV reader is next.",
    "priorities": [{"task": "port the CSV reader", "urgency": "first"}],
    "warnings": [{"text": "old rows are in local time", "severity": "high"}],
    "decisions": [{"decision": "keep the old parser for 1.x", "reason": "users pin it"}],
    "state": {"active_tasks": ["CSV reader"], "data": {"ported": 12}},
}
BIN = Path(sys.executable).parent
HANDOFF = str(BIN / "handoff")


def fail(step: str, detail: str) -> None:
    """Stop the smoke at *step*, saying why."""
    print(f"smoke: FAILED at {step}: {detail}", file=sys.stderr)
    raise SystemExit(1)


def handoff(*args: str, stdin: str | None = None, cwd: Path | None = None) -> str:
    """Run the installed ``handoff`` script; fail the smoke unless it exits 0 with no traceback."""
    done = subprocess.run([HANDOFF, *args], input=stdin, capture_output=True, text=True, cwd=cwd, check=False)
    if done.returncode != 0 or "Traceback" in done.stderr:
        fail(f"handoff {' '.join(args)}", f"exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def source_modules(tree: Path) -> list[str]:
    """Every module of the source tree, as the wheel should install it."""
    names = []
    for path in sorted((tree / "handoff_files").rglob("*.py")):
        parts = path.relative_to(tree).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    names += [f"handoff_files.migrations.{p.stem}" for p in sorted((tree / "migrations").glob("*.py"))]
    return [n.removesuffix(".__init__") for n in names]


def check_imports(tree: Path) -> None:
    """The package comes from site-packages; every module imports; every public name resolves."""
    import handoff_files

    where = Path(handoff_files.__file__).resolve()
    if tree.resolve() in where.parents or "site-packages" not in where.parts:
        fail("import", f"handoff_files was imported from {where}, not from the venv's site-packages")
    modules = source_modules(tree)
    for name in modules:
        if name == "handoff_files.__main__":
            continue  # runs the CLI when imported; `python -m handoff_files --version` checks it below
        try:
            importlib.import_module(name)
        except Exception as exc:  # any failure to import is the finding
            fail("import", f"{name}: {type(exc).__name__}: {exc}")
    for public in handoff_files.__all__:
        try:
            getattr(handoff_files, public)
        except Exception as exc:  # any failure to resolve is the finding
            fail("public names", f"handoff_files.{public}: {type(exc).__name__}: {exc}")
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "--version"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        fail("python -m handoff_files --version", done.stderr)
    print(f"smoke: {len(modules)} modules import, {len(handoff_files.__all__)} public names resolve")


def commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of *parser* (``("inbox", "list")`` …), found from its sub-parsers."""
    found = [prefix]
    for action in parser._actions:  # argparse keeps its sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += commands(sub, (*prefix, name))
    return found


def check_help() -> None:
    """Each command and sub-command answers ``--help`` from the installed script."""
    from handoff_files.cli.main import build_parser

    paths = commands(build_parser())
    for path in paths:
        text = handoff(*path, "--help")
        if "usage:" not in text:
            fail(f"handoff {' '.join(path)} --help", "no usage line")
    print(f"smoke: {len(paths)} commands answer --help")


def check_flow(work: Path) -> None:
    """save → show → brief → SessionStart hook → MCP over stdio → LangGraph on HandoffSaver."""
    layers = work / "layers.json"
    layers.write_text(json.dumps(LAYERS))
    thread = work / "importer-fix"
    handoff("save", str(thread), str(layers))
    if "CSV reader" not in handoff("show", str(thread)):
        fail("show", "the saved priority is not shown")
    brief = json.loads(handoff("brief", str(thread), "--json"))
    if "date parsing" not in brief["text"] or not brief.get("code"):
        fail("brief", f"no briefing with a code: {brief}")
    print("smoke: save, show and brief work")
    check_hook(work, layers)
    check_mcp(thread)
    check_langgraph(work / "graphs")


def check_hook(work: Path, layers: Path) -> None:
    """`handoff install claude-code`, a saved handoff, then a SessionStart event answered with the briefing."""
    project = work / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)  # noqa: S607 -- git from PATH, as hooks use it
    handoff("install", "claude-code", "--project", str(project))
    handoff("save", str(project / ".handoff" / "main"), str(layers))
    event = {
        "session_id": "smoke-1",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    reply = json.loads(handoff("hook", "claude-code", stdin=json.dumps(event), cwd=project))
    context = reply.get("hookSpecificOutput", {}).get("additionalContext", "")
    if "date parsing" not in context:
        fail("hook claude-code SessionStart", f"no briefing in the reply: {reply}")
    print("smoke: a SessionStart hook event is answered with the briefing")


def check_mcp(thread: Path) -> None:
    """The SDK's own client starts `handoff mcp` over stdio, lists the tools and restores the thread."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=HANDOFF, args=["mcp", "--thread", str(thread)], env=dict(os.environ))

    async def session() -> tuple[list[str], str]:
        with anyio.fail_after(120):
            async with Client(params) as client:
                tools = [tool.name for tool in (await client.list_tools()).tools]
                restored = await client.call_tool("handoff_restore", {})
                text = "".join(block.text for block in restored.content if block.type == "text")
                return tools, text

    tools, text = anyio.run(session)
    if "handoff_restore" not in tools or "date parsing" not in text:
        fail("mcp", f"tools {tools}; restore said {text[:300]!r}")
    print(f"smoke: MCP handshake over stdio, {len(tools)} tools, restore returns the briefing")


def check_langgraph(root: Path) -> None:
    """A two-node graph on HandoffSaver runs twice on one thread; a second saver reads its state back."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from handoff_files import HandoffSaver

    class State(TypedDict):
        count: int

    def step(state: State) -> State:
        return {"count": state["count"] + 1}

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    config: Any = {"configurable": {"thread_id": "smoke"}}
    app = graph.compile(checkpointer=HandoffSaver(root))
    app.invoke({"count": 0}, config)
    app.invoke({"count": 41}, config)
    values = graph.compile(checkpointer=HandoffSaver(root)).get_state(config).values
    if values != {"count": 42}:
        fail("langgraph", f"a second saver read {values}")
    print("smoke: a LangGraph graph checkpointed by HandoffSaver is read back by a new saver")


def check_bare(work: Path) -> None:
    """Without extras: the core imports none of them, and each missing extra is one line naming what to install."""
    import handoff_files

    for extra, name in (("langgraph", "HandoffSaver"), ("remote", "FsspecBlobStore")):
        try:
            getattr(handoff_files, name)
        except ImportError as exc:
            if f"pip install 'handoff-files[{extra}]'" not in str(exc) or "\n" in str(exc):
                fail(f"bare install: {name}", f"not one line naming the extra: {exc}")
        else:
            fail(f"bare install: {name}", "imported without its extra (is the venv really bare?)")
    loaded = [m for m in ("langgraph", "mcp", "fsspec") if m in sys.modules]
    if loaded:
        fail("bare install", f"importing handoff_files imported {loaded}")
    done = subprocess.run([HANDOFF, "mcp", "--thread", str(work / "t")], capture_output=True, text=True, check=False)
    if done.returncode != 1 or done.stderr.count("\n") != 1 or "handoff-files[mcp]" not in done.stderr:
        fail("bare install: handoff mcp", f"exit {done.returncode}, stderr {done.stderr!r}")
    print("smoke: without extras, each missing extra is one line naming what to install")


def main() -> int:
    """Run every check from the current folder (which must be outside the checkout)."""
    tree = Path(sys.argv[1])
    work = Path.cwd()
    if tree.resolve() in [work.resolve(), *work.resolve().parents]:
        fail("setup", f"run this from a folder outside the checkout, not {work}")
    if sys.argv[2:] == ["--bare"]:
        check_bare(work)
        return 0
    check_imports(tree)
    check_help()
    check_flow(work)
    print("smoke: the installed product works")
    return 0


if __name__ == "__main__":
    sys.exit(main())
