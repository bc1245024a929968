"""Hypothesis strategies for handoff content, shared by the test modules."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import strategies as st

_text = st.text(
    alphabet=st.characters(codec="utf-8"),  # utf-8 has no lone surrogates
    min_size=1,
    max_size=40,
)
_any_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=80)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _any_text
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_any_text, children, max_size=4),
    max_leaves=12,
)

aware_datetimes = st.datetimes(
    min_value=dt.datetime(2000, 1, 1),
    max_value=dt.datetime(2100, 1, 1),
    timezones=st.just(dt.UTC),
)

states = st.fixed_dictionaries(
    {},
    optional={
        "session_id": st.none() | st.integers(min_value=0, max_value=10**9) | _text,
        "timestamp": st.none() | aware_datetimes.map(lambda d: d.isoformat().replace("+00:00", "Z")),
        "active_tasks": st.lists(_text, max_size=4),
        "completed_tasks": st.lists(_text, max_size=4),
        "blocked_tasks": st.lists(_text, max_size=4),
        "environment": st.dictionaries(_text, _any_text, max_size=3),
        "error_count": st.integers(min_value=0, max_value=10**6),
        "energy_level": st.floats(min_value=0.0, max_value=1.0),
        "data": st.dictionaries(_any_text, json_values, max_size=4),
    },
)

decisions = st.fixed_dictionaries(
    {"decision": _text, "reason": _text},
    optional={
        "alternatives_considered": st.lists(_text, max_size=3),
        "reversible": st.booleans(),
        "status": st.sampled_from(["decided", "deferred", "reversed"]),
    },
)
priorities = st.fixed_dictionaries(
    {"task": _text, "urgency": st.sampled_from(["first", "primary", "after_primary", "if_time_permits"])}
)
warnings = st.fixed_dictionaries(
    {"text": _text},
    optional={"severity": st.none() | st.sampled_from(["info", "low", "medium", "high", "critical"])},
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool"]), "content": _any_text},
    optional={
        "name": st.none() | _text,
        "tool_call_id": st.none() | _text,
        "metadata": st.none() | st.dictionaries(_any_text, json_values, max_size=3),
    },
)
contexts = st.fixed_dictionaries(
    {},
    optional={
        "conversation_history": st.lists(messages, max_size=3),
        "tool_state": st.dictionaries(_any_text, json_values, max_size=3),
        "metadata": st.dictionaries(_any_text, json_values, max_size=3),
    },
)

#: A plain mapping of the five layers (and sometimes a context), as an agent passes to save().
contents = st.fixed_dictionaries(
    {
        "state": states,
        "narrative": _any_text,
        "decisions": st.lists(decisions, max_size=3),
        "priorities": st.lists(priorities, max_size=3),
        "warnings": st.lists(warnings, max_size=3),
    },
    optional={"context": contexts},
)
