"""The child scripts of the LangGraph cold-restart bench: each run as ``python -c CODE KIND WHERE THREAD ARG``.

Each opens the saver as its docs show (``HandoffSaver(root)``, ``SqliteSaver(sqlite3.connect(path))``),
does one thing, checks what it got, and prints one JSON line on stdout; it exits 3 when what it read
is not what the parent wrote, so a wrong answer is never timed as a fast one.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CHILD_BIG_GET", "CHILD_BIG_PUT", "CHILD_COLD", "CHILD_STATE", "DOC_CHARS", "WINDOW"]

#: the chat thread keeps the last WINDOW messages in each checkpoint
WINDOW: Final = 20
#: the big state is a list of strings of DOC_CHARS characters
DOC_CHARS: Final = 1000

# the imports and the open are timed apart: "imported" is set after the saver's (and LangGraph's) imports
_IMPORT: Final = """\
import json, resource, sys, time
start = time.perf_counter()
kind, where, thread_id = sys.argv[1:4]
if kind == "HandoffSaver":
    from handoff_files import HandoffError as refusals
    from handoff_files.langgraph import HandoffSaver
else:
    import sqlite3
    from langgraph.checkpoint.sqlite import SqliteSaver
    refusals = ()
"""
_OPEN: Final = """\
opening = time.perf_counter()
if kind == "HandoffSaver":
    saver = HandoffSaver(where)
else:
    saver = SqliteSaver(sqlite3.connect(where, check_same_thread=False))
config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
"""

#: a restart's first read through the saver alone: the time of the open + the first get_tuple;
#: exits 3 unless it found the newest checkpoint (metadata step = argv[4])
CHILD_COLD: Final = (
    _IMPORT
    + "imported = time.perf_counter()\n"
    + _OPEN
    + """\
found = saver.get_tuple(config)
done = time.perf_counter()
if found is None or found.metadata.get("step") != int(sys.argv[4]):
    sys.exit(3)
print(json.dumps({"import": imported - start, "read": done - opening, "rss": rss()}))
"""
)

#: a restarted graph's first read: imports the saver and LangGraph, opens the saver, compiles a
#: graph whose state has the thread's channels (messages with add_messages, a step counter) and one
#: node (both timed as "compile"), then times app.get_state(config) alone; exits 3 unless its values
#: are the newest checkpoint's (step = argv[4], the last message that step's answer)
CHILD_STATE: Final = (
    _IMPORT
    + """\
from typing import Annotated, TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
imported = time.perf_counter()
"""
    + _OPEN
    + """\
class Chat(TypedDict):
    messages: Annotated[list, add_messages]
    step: int
def work(state):
    return {"step": state["step"] + 1}
builder = StateGraph(Chat)
builder.add_node("work", work)
builder.add_edge(START, "work")
builder.add_edge("work", END)
app = builder.compile(checkpointer=saver)
compiled = time.perf_counter()
snapshot = app.get_state(config)
done = time.perf_counter()
step = int(sys.argv[4])
messages = snapshot.values.get("messages") or []
if snapshot.values.get("step") != step or not messages or messages[-1].id != f"ai-{step}":
    sys.exit(3)
print(json.dumps({"import": imported - start, "compile": compiled - opening, "read": done - compiled, "rss": rss()}))
"""
)

#: one checkpoint of argv[4] MB of text put as the thread's first; a refusal printed, not raised
CHILD_BIG_PUT: Final = (
    _IMPORT
    + _OPEN
    + f"""\
from langgraph.checkpoint.base import empty_checkpoint
count = int(float(sys.argv[4]) * 1e6) // {DOC_CHARS}
checkpoint = empty_checkpoint()
checkpoint["channel_values"] = {{"documents": [f"{{i:08d}} " + "x" * {DOC_CHARS - 9} for i in range(count)]}}
checkpoint["channel_versions"] = {{"documents": 1}}
before = rss()
start = time.perf_counter()
try:
    saver.put(config, checkpoint, {{"source": "input", "step": 1, "parents": {{}}}}, {{"documents": 1}})
except refusals as exc:
    print(json.dumps({{"refused": str(exc).splitlines()[0]}}))
    sys.exit(0)
print(json.dumps({{"seconds": time.perf_counter() - start, "rss_rise": rss() - before}}))
"""
)

#: the big checkpoint read back in a fresh process: exits 3 unless every document came back
CHILD_BIG_GET: Final = (
    _IMPORT
    + _OPEN
    + f"""\
count = int(float(sys.argv[4]) * 1e6) // {DOC_CHARS}
before = rss()
start = time.perf_counter()
found = saver.get_tuple(config)
seconds = time.perf_counter() - start
documents = None if found is None else found.checkpoint["channel_values"].get("documents")
if not documents or len(documents) != count or sum(map(len, documents)) != count * {DOC_CHARS}:
    sys.exit(3)
print(json.dumps({{"seconds": seconds, "rss_rise": rss() - before}}))
"""
)
