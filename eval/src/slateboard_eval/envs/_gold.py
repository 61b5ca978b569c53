"""A gold action sequence as a policy that follows the episode."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["GoldTracker"]


class GoldTracker:
    """Follows the commands executed since a reset against a gold (walkthrough) sequence.

    ``remaining()`` is the rest of the gold sequence while every executed command matched it in
    order, and ``()`` once one did not (the gold path no longer applies from that state)."""

    def __init__(self, gold: Sequence[str] = ()) -> None:
        self.gold = tuple(gold)
        self.done = 0
        self.on_path = True

    def reset(self, gold: Sequence[str]) -> None:
        """A new episode with this gold sequence."""
        self.gold = tuple(gold)
        self.done = 0
        self.on_path = True

    def executed(self, command: str) -> None:
        """Record one executed command."""
        if self.on_path and self.done < len(self.gold) and command.strip() == self.gold[self.done]:
            self.done += 1
        else:
            self.on_path = False

    def remaining(self) -> tuple[str, ...]:
        """The gold commands still to play from here (``()`` when off the path)."""
        return self.gold[self.done :] if self.on_path else ()
