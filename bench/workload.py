"""The workload: seeded, realistic handoff content of a chosen size (bulk in the conversation history)."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = ["SEED", "SIZES", "Size", "build_content"]

SEED: Final = 20_240_611


@dataclass(frozen=True, slots=True)
class Size:
    """A target size for a rendered handoff file."""

    label: str
    target: int


SIZES: Final = (Size("2 KB", 2 * 1024), Size("100 KB", 100 * 1024), Size("1 MB", 1024 * 1024))

# the envelope the store adds (ids, generation, created_at, parent, lineage, seal) renders to about this
_ENVELOPE_BYTES: Final = 430
_MESSAGE_OVERHEAD: Final = 260
_START: Final = dt.datetime(2025, 1, 15, 9, 0, tzinfo=dt.UTC)

_VOCABULARY: Final = (
    "the a an and or but if then so because while after before when this that these those it its we they "
    "agent session handoff state file files test tests suite run runs build error errors warning retry "
    "timeout lock thread generation seal checksum journal history primary restore save load parse "
    "encode decode schema version migration field value key list map index cache queue worker request "
    "response client server endpoint token budget context message tool call result output input path "
    "directory disk write read fsync rename commit branch merge patch diff review change fix bug issue "
    "failure flaky slow fast latency throughput memory process restart crash signal user customer "
    "report table figure measure benchmark baseline median ratio goal plan next first second third "
    "decide decided defer deferred reverse revisit because reason alternative option choice trade-off "
    "cost risk safe unsafe strict loose valid invalid missing present stale fresh old new current "
    "previous known unknown expected found should must will would could can cannot still already "
    "again only also not never always often rarely probably clearly mostly partly fully nearly "
    "database migration column row query transaction rollback replica primary-key foreign-key "
    "deploy staging production rollout canary monitor alert dashboard metric log trace span "
    "python module function class method argument return raise except import package dependency"
)
_WORDS: Final = tuple(_VOCABULARY.split())
_ROLES: Final = ("user", "assistant", "assistant", "tool")
_TOOLS: Final = ("run_tests", "read_file", "apply_patch", "search_code", "query_db")
_STATUSES: Final = ("unchanged", "modified", "added", "reviewed")
_SEVERITIES: Final = ("info", "low", "medium", "high", "critical")
_URGENCIES: Final = ("first", "primary", "after_primary", "if_time_permits")


def _sentence(rng: random.Random, low: int = 8, high: int = 22) -> str:
    words = rng.choices(_WORDS, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random, words: int) -> str:
    out: list[str] = []
    count = 0
    while count < words:
        sentence = _sentence(rng)
        out.append(sentence)
        count += sentence.count(" ") + 1
    return " ".join(out)


def _stamp(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _state_data(rng: random.Random, target: int) -> dict[str, Any]:
    if target < 8_000:
        return {"branch": "fix/retry-budget", "tests": {"passed": 212, "failed": 2}, "p99_ms": 388.0}
    files = {
        f"src/pkg/module_{i:03d}.py": {
            "lines": rng.randint(40, 900),
            "status": rng.choice(_STATUSES),
            "coverage": round(rng.uniform(0.4, 1.0), 3),
            "owners": rng.sample(["ana", "bo", "chen", "dee", "eli"], k=2),
        }
        for i in range(max(2, target // 25_000))
    }
    runs = [
        {
            "id": i + 1,
            "passed": rng.randint(100, 400),
            "failed": rng.randint(0, 6),
            "duration_s": round(rng.uniform(3.0, 90.0), 2),
            "failures": [f"tests/test_{rng.choice(_WORDS)}.py::test_{j}" for j in range(rng.randint(0, 3))],
        }
        for i in range(max(1, target // 50_000))
    ]
    return {
        "repo": {"url": "https://example.org/acme/service.git", "branch": "fix/retry-budget", "dirty": True},
        "files": files,
        "test_runs": runs,
        "metrics": {"p50_ms": 41.5, "p99_ms": 388.0, "error_rate": 0.0125, "requests": 120_431},
    }


def _layers(rng: random.Random, target: int) -> dict[str, Any]:
    # a small handoff is the layers alone, kept short; a large one has more of everything
    scale = 1 if target < 8_000 else 3
    return {
        "state": {
            "session_id": "sess-7f3a",
            "timestamp": _stamp(_START),
            "active_tasks": [_sentence(rng, 3, 7) for _ in range(scale)],
            "completed_tasks": [_sentence(rng, 3, 7) for _ in range(scale)],
            "blocked_tasks": [_sentence(rng, 3, 7) for _ in range(scale)],
            "environment": {"PYTHON": "3.11", "CI": "true"},
            "error_count": 3,
            "energy_level": 0.62,
            "data": _state_data(rng, target),
        },
        "narrative": " ".join(_sentence(rng, 6, 14) for _ in range(3 if scale == 1 else 5)),
        "decisions": [
            {
                "decision": _sentence(rng, 4, 8),
                "reason": _sentence(rng, 6, 12),
                "alternatives_considered": [_sentence(rng, 2, 5) for _ in range(scale)],
                "reversible": rng.random() < 0.7,
                "status": rng.choice(("decided", "decided", "deferred", "reversed")),
            }
            for _ in range(scale + 1)
        ],
        "priorities": [
            {"task": _sentence(rng, 3, 7), "urgency": _URGENCIES[min(i, len(_URGENCIES) - 1)]} for i in range(scale + 1)
        ],
        "warnings": [{"text": _sentence(rng, 4, 10), "severity": rng.choice(_SEVERITIES)} for _ in range(scale + 1)],
    }


def _message(rng: random.Random, index: int, words: int) -> dict[str, Any]:
    role = _ROLES[index % len(_ROLES)]
    # every field present, as the store's model_dump writes it, so the size estimate holds
    message: dict[str, Any] = {
        "role": role,
        "content": _paragraph(rng, words),
        "timestamp": _stamp(_START + dt.timedelta(seconds=37 * index)),
        "tool_call_id": None,
        "name": None,
        "metadata": None,
    }
    if role == "tool":
        message["tool_call_id"] = f"call_{index:05d}"
        message["name"] = rng.choice(_TOOLS)
    elif role == "assistant":
        message["metadata"] = {"model": "agent-large", "tokens": {"in": rng.randint(500, 9000), "out": words * 2}}
    return message


def _rendered_size(content: dict[str, Any]) -> int:
    # the primary is orjson's 2-space rendering; the envelope is estimated
    return len(orjson.dumps(content, option=orjson.OPT_INDENT_2)) + 1 + _ENVELOPE_BYTES


def build_content(target: int, *, seed: int = SEED) -> dict[str, Any]:
    """Build the five layers plus a ``context`` whose saved file is about *target* bytes.

    The layers are what an agent writes (a short narrative, a few tasks, decisions, priorities
    and warnings, some ``state.data``); the bulk is ``context.conversation_history``, messages of
    a few hundred words each, the last one trimmed to land near the target.

    :param target: the wanted size of the saved primary file, in bytes.
    :param seed: the generator's seed: the same seed and target give the same content.
    :returns: a plain dict, as an agent passes to ``HandoffStore.save``.
    """
    rng = random.Random(f"{seed}:{target}")
    content = _layers(rng, target)
    messages: list[dict[str, Any]] = []
    context = {
        "conversation_history": messages,
        "tool_state": {"open_files": ["src/pkg/module_001.py"], "cwd": "/srv/app"},
        "metadata": {"source": "bench", "seed": seed},
    }
    size = _rendered_size({**content, "context": context})
    while size < target:
        message = _message(rng, len(messages), rng.randint(150, 400))
        # what a message adds around its content: keys, role, timestamp, metadata, indentation
        room = target - size - _MESSAGE_OVERHEAD
        if room < 80:
            break
        if len(message["content"]) > room:
            message["content"] = message["content"][:room].rsplit(" ", 1)[0] + "."
        messages.append(message)
        size = _rendered_size({**content, "context": context})
    if messages:
        # a handoff too small for one message carries no context block at all
        content["context"] = context
    return content
