"""What the MCP tools return: typed results, published to the client as output schemas."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "Acknowledged",
    "Adopted",
    "Checkpoint",
    "Generation",
    "History",
    "Restore",
    "Saved",
    "Shown",
    "ThreadEntry",
    "Threads",
]


class Saved(BaseModel):
    """What handoff_save made durable."""

    thread: str
    generation: int
    checksum: str
    problems: list[str]


class Restore(BaseModel):
    """The briefing of the newest generation (none when nothing was saved yet)."""

    thread: str
    generation: int = Field(description="0 when nothing was saved yet")
    code: str | None = Field(description="give it to handoff_acknowledge once you have read the briefing")
    briefing: str
    omitted: list[str]
    problems: list[str]


class Acknowledged(BaseModel):
    """The generation the agent acknowledged."""

    thread: str
    generation: int
    with_code: bool


class Generation(BaseModel):
    """One generation in the thread's history."""

    generation: int | None
    created_at: str | None
    checksum: str | None
    current: bool
    problem: str | None
    signed: str | None = Field(
        default=None,
        description="who signed it, as the user's allowed_signers names them, or why the signer is not trusted; "
        "null: unsigned",
    )


class History(BaseModel):
    """The thread's generations, newest first, each verified."""

    thread: str
    generations: list[Generation]


class Shown(BaseModel):
    """One generation, whole."""

    thread: str
    generation: int
    handoff: dict[str, Any]


class Checkpoint(BaseModel):
    """A descriptor another agent adopts the generation by (its blob is in the blob store)."""

    descriptor: dict[str, Any]


class Adopted(BaseModel):
    """A verified adoption: the new thread and where it came from."""

    thread: str
    generation: int
    adopted_from: str
    checkpoint_id: str


class ThreadEntry(BaseModel):
    """One thread the server serves."""

    name: str = Field(description="what the thread argument takes")
    thread: str = Field(description="its folder")
    generation: int | None = Field(description="its newest verified generation; none when nothing is saved yet")
    created_at: str | None = Field(description="when that generation was saved")
    problem: str | None = Field(description="why the thread cannot be used as it is, if it cannot")


class Threads(BaseModel):
    """The threads the server serves: those under its root, or its one thread."""

    root: str
    threads: list[ThreadEntry]
