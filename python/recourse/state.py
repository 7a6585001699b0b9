"""Cross-call state: stores, Workflow (per-loop budgets) and Health (per-process breakers and
retry tokens), docs/state.md. The runners record into them; a host reads them."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import _recourse
from .types import Circuit


class Store:
    """A state store (recourse::Store): ``"memory"``, ``"sqlite:PATH"`` (created when missing),
    ``"redis://HOST:PORT"`` or ``"redis+unix://PATH"`` (docs/state.md). Thread-safe; share one
    among the Workflows, Healths and runners of a process. Opening raises StoreError: S001 for
    a malformed spec or a kind this build left out, S002 for a store that cannot be opened or
    reached. ``warnings`` holds S003 (a Redis whose persistence is too weak for the ledger, which
    is then refused).

    Limits (recourse::StoreOptions), in ms: ``state_ttl_ms`` keeps tool and operation state
    after its last change (a day), ``ledger_ttl_ms`` ledger entries (a week); ``timeout_ms``
    bounds a Redis connect and each command (50); ``busy_ms`` is how long SQLite waits for
    another writer (200); after a failed call the store fails fast for ``down_ms`` (1000).
    """

    def __init__(self, spec: str = "memory", *, state_ttl_ms: int = 24 * 3600 * 1000,
                 ledger_ttl_ms: int = 7 * 24 * 3600 * 1000, timeout_ms: int = 50,
                 busy_ms: int = 200, down_ms: int = 1000):
        self.spec = spec
        self._native, self.warnings = _recourse._open_store(
            spec, state_ttl_ms, ledger_ttl_ms, timeout_ms, busy_ms, down_ms)

    def __repr__(self) -> str:
        return f"Store({self.spec!r})"


def _native(store: Optional[Store]) -> Any:
    return store._native if store is not None else None


class Workflow:
    """Per-loop budget counters (recourse::Workflow): attempts, repairs, repeats, cost and the
    time since the first call of each (operation, tool), kept in ``store`` (None: a memory store
    of its own) under ``scope``. One per agent loop: not for two threads at once (a runner takes
    its Workflow's lock for each step, so a shared one is safe but serial)."""

    def __init__(self, store: Optional[Store] = None, scope: str = ""):
        self.store = store
        self._native = _recourse._Workflow(_native(store), scope)

    def to_dict(self) -> Dict[str, Any]:
        """The local counters: {"version": 2, "operations": {id: {tool: {...}}}}."""
        return json.loads(self._native.to_json())


class Health:
    """Per-process tool health (recourse::Health): circuit breakers, retry tokens and the
    side-effect ledger's answers, kept in ``store`` (None: a memory store of its own).
    Thread-safe: share one among every runner of the process (and, over SQLite or Redis, of
    the fleet)."""

    def __init__(self, store: Optional[Store] = None):
        self.store = store
        self._native = _recourse._Health(_native(store))

    def circuit(self, tool: str) -> Circuit:
        """``tool``'s circuit as its breaker says now (closed when never recorded)."""
        return self._native.circuit(tool)

    def to_dict(self) -> Dict[str, Any]:
        """The local state: {"tools": {name: {circuit, consecutiveFailures, ...}}}."""
        return json.loads(self._native.to_json())
