"""Helpers of the store conformance suite: a tiny blueprint, and a board driven through Kernel + Store.

``Board`` proposes with a real kernel and appends to the store under test (committing or
aborting the kernel's decision), so the suite checks stores with the records the runtime writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..blueprint import CompiledBlueprint, compile_blueprint
from ..kernel import Kernel, Proposal, Record, replay
from ..scheduling.invocation import Invocation
from ..stores import AgendaChanges, AppendResult, ClaimRequest, LoadedBoard, Store

WORKERS = ("w0", "w1", "w2")

OpenStore = Callable[[], Awaitable[Store]]
"""Opens another handle on the store under test."""


def blueprint_json(*, max_patch_bytes: int = 8 << 20) -> dict[str, Any]:
    """Three workers appending entries to /entries and writing notes under /notes."""
    return {
        "name": "storetest",
        "schema": {
            "type": "object",
            "required": ["entries", "notes"],
            "additionalProperties": False,
            "properties": {
                "entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["author", "text"],
                        "additionalProperties": False,
                        "properties": {
                            "author": {"type": "string"},
                            "text": {"type": "string"},
                            "n": {"type": "integer"},
                        },
                    },
                },
                "notes": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "initial_state": {"entries": [], "notes": {}},
        "workers": {w: {"reads": ["/entries", "/notes"], "writes": ["/entries/-", "/notes/*"]} for w in WORKERS},
        "limits": {"max_patch_bytes": max_patch_bytes, "max_steps": 100000},
    }


_COMPILED: dict[int, CompiledBlueprint] = {}


def compiled(max_patch_bytes: int = 8 << 20) -> CompiledBlueprint:
    """The compiled test blueprint (cached)."""
    if max_patch_bytes not in _COMPILED:
        _COMPILED[max_patch_bytes] = compile_blueprint(blueprint_json(max_patch_bytes=max_patch_bytes))
    return _COMPILED[max_patch_bytes]


def entry(worker: str, text: str, n: int | None = None) -> list[dict[str, Any]]:
    """A patch appending one entry."""
    value: dict[str, Any] = {"author": worker, "text": text}
    if n is not None:
        value["n"] = n
    return [{"op": "add", "path": "/entries/-", "value": value}]


def inv(
    inv_id: str, worker: str = "w0", *, priority: int = 0, order: int = 0, binding: tuple[str, ...] = ()
) -> Invocation:
    """An invocation (binding defaults to the id, so keys differ unless asked otherwise)."""
    return Invocation(inv_id, worker, priority, order, binding=binding or (inv_id,))


@dataclass
class Board:
    """A kernel and its board in a store: ``step`` proposes, appends and commits (or aborts)."""

    store: Store
    board_id: str
    kernel: Kernel
    records: list[Record] = field(default_factory=list)

    @classmethod
    async def create(
        cls, store: Store, *, board_id: str | None = None, agenda: list[Invocation] | None = None
    ) -> Board:
        bp = compiled()
        info = await store.create_board(bp.spec.to_json(), bp.initial_state(), board_id=board_id, agenda=agenda or [])
        return cls(store, info.board_id, Kernel(bp))

    @classmethod
    async def load(cls, store: Store, board_id: str) -> Board:
        loaded = await store.load_board(board_id)
        return cls(store, board_id, kernel_from(loaded))

    def prepare(self, worker: str, patch: Any, *, invocation: str | None = None) -> Any:
        return self.kernel.prepare(Proposal(worker, patch, invocation=invocation))

    async def step(
        self,
        worker: str,
        patch: Any,
        *,
        invocation: str | None = None,
        agenda: AgendaChanges | None = None,
        with_state: bool = True,
        claim: ClaimRequest | None = None,
    ) -> tuple[Record, AppendResult]:
        """Prepare ``patch`` for ``worker`` and append it; commit on success, abort on failure."""
        decision = self.prepare(worker, patch, invocation=invocation)
        try:
            result = await self.store.append(
                self.board_id,
                decision.record,
                agenda=agenda,
                state=self.kernel.state if with_state else None,
                claim=claim,
            )
        except BaseException:
            self.kernel.abort(decision)
            raise
        rec = self.kernel.commit(decision)
        self.records.append(rec)
        return rec, result


def kernel_from(loaded: LoadedBoard, blueprint: CompiledBlueprint | None = None) -> Kernel:
    """Rebuild a kernel from a loaded board (snapshot + tail replay); asserts the tail verifies."""
    bp = blueprint or compile_blueprint(loaded.blueprint)
    report = replay(
        bp,
        loaded.start_state,
        loaded.records,
        start_version=loaded.start_version,
        start_seq=loaded.start_seq,
        start_hash=loaded.start_hash,
    )
    assert report.ok, str(report)
    last = loaded.records[-1] if loaded.records else None
    return Kernel(
        bp,
        report.state,
        version=report.version,
        seq=last.seq if last else loaded.start_seq,
        last_hash=last.hash if last else loaded.start_hash,
    )
