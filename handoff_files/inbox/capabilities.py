"""The capability gate: an agent registry (capabilities and delegation scope) that decides who may hand what to whom."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from handoff_files.format.codec import parse
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import CapabilityError, HandoffError
from handoff_files.foundation.names import check_id

__all__ = ["CAPABILITY_PATTERN", "MAX_REGISTRY_BYTES", "AgentEntry", "AgentRegistry", "check_capabilities"]

#: A capability's name: the same rule as an id (letters, digits, ``.``, ``_``, ``-``; 1 to 64).
CAPABILITY_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
#: A registry file is small: past this it is refused unread.
MAX_REGISTRY_BYTES: Final = 4 * 1024 * 1024

_CAPABILITY: Final = re.compile(CAPABILITY_PATTERN)
_ENTRY_KEYS: Final = ("capabilities", "scope")


@dataclass(frozen=True, slots=True)
class AgentEntry:
    """One registered agent: what it can take on (``capabilities``) and what it may delegate (``scope``)."""

    capabilities: frozenset[str]
    scope: frozenset[str]


def check_capabilities(values: object, what: str, where: str | os.PathLike[str]) -> tuple[str, ...]:
    """Return *values* (a list or tuple of capability names) as a sorted tuple without repeats.

    :param what: named in the error (``"capabilities_required"``, ``"agents.beta.scope"`` …).
    :raises CapabilityError: if it is not a list of valid names (a lone string is refused, not split).
    """
    if not isinstance(values, list | tuple | frozenset | set):
        msg = f"{what} must be a list of capability names, not {type(values).__name__}"
        raise CapabilityError(where, msg)
    for value in values:
        if not isinstance(value, str) or not _CAPABILITY.fullmatch(value):
            msg = (
                f"{what} holds {str(value)[:80]!r}, not a capability name "
                "(1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit)"
            )
            raise CapabilityError(where, msg)
    return tuple(sorted(set(values)))


class AgentRegistry:
    """Agents by id, each with its capabilities and its delegation scope; immutable once built.

    The file form, JSON or YAML::

        {"agents": {"beta": {"capabilities": ["sql", "python"], "scope": ["python"]}}}

    ``capabilities``: what the agent can take on when it is the target of a handoff. ``scope``:
    what it may delegate when it is the source. Either may be left out (empty). A handoff is
    allowed only if the required capabilities are a subset of ``capabilities(target) ∩ scope(source)``.

    :param agents: agent id → :class:`AgentEntry` or a mapping with ``capabilities`` and ``scope``.
    :param source: where the registry came from, named in errors and reasons.
    :raises CapabilityError: if an id, key or capability name is malformed.
    """

    def __init__(self, agents: Mapping[str, AgentEntry | Mapping[str, Any]], *, source: str = "<registry>") -> None:
        self.source = source
        if not isinstance(agents, Mapping):
            msg = f"agents must map agent ids to entries, not {type(agents).__name__}"
            raise CapabilityError(source, msg)
        entries: dict[str, AgentEntry] = {}
        for agent_id, entry in agents.items():
            try:
                check_id(agent_id, "agent id", source)
            except HandoffError as exc:
                raise CapabilityError(source, exc.reason) from exc
            entries[agent_id] = entry if isinstance(entry, AgentEntry) else self._entry(agent_id, entry)
        self._agents: Mapping[str, AgentEntry] = MappingProxyType(dict(sorted(entries.items())))

    def _entry(self, agent_id: str, entry: object) -> AgentEntry:
        if not isinstance(entry, Mapping):
            msg = f"agents.{agent_id} must be an object with capabilities and scope, not {type(entry).__name__}"
            raise CapabilityError(self.source, msg)
        unknown = sorted(set(entry) - set(_ENTRY_KEYS))
        if unknown:
            msg = f"agents.{agent_id} has unknown key(s) {', '.join(map(repr, unknown))}; expected {_ENTRY_KEYS}"
            raise CapabilityError(self.source, msg)
        capabilities = check_capabilities(entry.get("capabilities", []), f"agents.{agent_id}.capabilities", self.source)
        scope = check_capabilities(entry.get("scope", []), f"agents.{agent_id}.scope", self.source)
        return AgentEntry(frozenset(capabilities), frozenset(scope))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AgentRegistry:
        """Read a registry file (JSON or YAML, told apart by content, parsed strictly).

        :raises CapabilityError: if it cannot be read, is not strict JSON or safe YAML, or is malformed.
        """
        where = Path(path)
        try:
            data, _ = read_bytes(where, MAX_REGISTRY_BYTES)
            document = parse(data, where)
        except HandoffError as exc:
            raise CapabilityError(exc.path, exc.reason) from exc
        return cls.from_document(document, source=os.fspath(where))

    @classmethod
    def from_document(cls, document: Mapping[str, Any], *, source: str = "<registry>") -> AgentRegistry:
        """Build a registry from its parsed form, ``{"agents": {...}}``.

        :raises CapabilityError: if the document is malformed.
        """
        if not isinstance(document, Mapping) or set(document) != {"agents"}:
            found = sorted(document) if isinstance(document, Mapping) else type(document).__name__
            msg = f"a registry is an object with exactly one key, 'agents'; found {found}"
            raise CapabilityError(source, msg)
        return cls(document["agents"], source=source)

    @property
    def agents(self) -> Mapping[str, AgentEntry]:
        """The registered agents, sorted by id (a read-only view)."""
        return self._agents

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._agents

    def __repr__(self) -> str:
        return f"<AgentRegistry {self.source}: {len(self._agents)} agent(s)>"

    def gate(self, source: str, target: str, required: Iterable[str]) -> str | None:
        """Whether *source* may hand work needing *required* to *target*: None if so, else the reason.

        Allowed only if both agents are registered and ``required ⊆ capabilities(target) ∩ scope(source)``.
        The reason names what fails: an unknown agent, the capabilities the target lacks, the
        ones outside the source's scope.

        :raises InvalidNameError: if *source* or *target* is not a valid id.
        :raises CapabilityError: if *required* is not a list of capability names.
        """
        check_id(source, "source agent", self.source)
        check_id(target, "target agent", self.source)
        wanted = set(self._required(required))
        unknown = [name for name in (source, target) if name not in self._agents]
        if unknown:
            return f"{' and '.join(unknown)} not in the agent registry ({self.source})"
        reasons = []
        lacking = sorted(wanted - self._agents[target].capabilities)
        if lacking:
            reasons.append(f"{target} lacks {', '.join(lacking)}")
        beyond = sorted(wanted - self._agents[source].scope)
        if beyond:
            reasons.append(f"{', '.join(beyond)} outside {source}'s delegation scope")
        return "; ".join(reasons) or None

    def _required(self, required: Iterable[str]) -> tuple[str, ...]:
        # a lone string is refused, not split into one-letter capabilities
        values = required if isinstance(required, str) else tuple(required)
        return check_capabilities(values, "required capabilities", self.source)

    def route(self, source: str, required: Iterable[str]) -> str | None:
        """The first agent, by sorted id and never *source* itself, that passes :meth:`gate`; None if none does.

        :raises InvalidNameError, CapabilityError: as :meth:`gate`.
        """
        wanted = self._required(required)
        for agent_id in self._agents:
            if agent_id != source and self.gate(source, agent_id, wanted) is None:
                return agent_id
        check_id(source, "source agent", self.source)  # an empty registry still refuses a bad id
        return None

    def no_route_reason(self, source: str, required: Iterable[str]) -> str:
        """Why :meth:`route` found no agent, as one line (for a refused request's reason)."""
        wanted = self._required(required)
        if source not in self._agents:
            return f"{source} not in the agent registry ({self.source})"
        beyond = sorted(set(wanted) - self._agents[source].scope)
        if beyond:
            return f"{', '.join(beyond)} outside {source}'s delegation scope"
        if not wanted:  # any other registered agent would have passed the gate: there is none
            return f"no agent other than {source} in the agent registry ({self.source})"
        needs = wanted[0] if len(wanted) == 1 else f"all of {', '.join(wanted)}"
        return f"no registered agent other than {source} has {needs}"
