"""The package's types: enums with the engine's spellings, dataclasses with the JSON's fields.

Every dataclass field is the JSON key in snake_case (``delayMs`` is ``delay_ms``), with the unit
where the JSON has one (``retryAt``, ms since the epoch, is ``retry_at_ms`` as in C++); a key the
JSON omits is ``None`` here. ``to_dict()`` gives the JSON's shape back (camelCase keys, absent
keys left out): ``Decision.to_dict()`` equals ``json.loads`` of ``recourse decide``'s output
(docs/schema/decision.schema.json).
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple


class _Named(str, enum.Enum):
    """A str enum: each member equals its JSON spelling (``Route.RETRY == "retry"``)."""

    def __str__(self) -> str:
        return self.value


class Route(_Named):
    """What to do next (docs/language.md section 3), from the most to the least permissive."""

    RETRY = "retry"  #: call again, unchanged, after ``delay_ms``
    REPAIR = "repair"  #: call again with the envelope's ``field`` changed
    AUTHORIZE = "authorize"  #: obtain a credential or an approval first
    REPLACE = "replace"  #: call another tool (``target``)
    DEGRADE = "degrade"  #: fall back to a degraded answer (``target``, if any)
    ESCALATE = "escalate"  #: hand the failure to a person
    STOP = "stop"  #: give up


class Code(_Named):
    """The built-in envelope codes (docs/language.md section 2); policies may declare more."""

    TRANSIENT = "TRANSIENT"
    RATE_LIMITED = "RATE_LIMITED"
    TIMEOUT = "TIMEOUT"
    VALIDATION = "VALIDATION"
    PERMISSION = "PERMISSION"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    CONTEXT_OVERFLOW = "CONTEXT_OVERFLOW"
    UNKNOWN = "UNKNOWN"
    PENDING = "PENDING"


class KeyDirective(_Named):
    """What to do with the next call's idempotency key (IETF Idempotency-Key draft)."""

    NONE = "none"  #: send none: the tool takes none, or no call follows
    REUSE = "reuse"  #: send the same key: a retry of the same request
    NEW = "new"  #: send a fresh key: the arguments changed


class SideEffect(_Named):
    """What the failed call did downstream, as the host knows it (context ``sideEffect``)."""

    NONE = "none"
    UNKNOWN = "unknown"
    COMMITTED = "committed"


class Circuit(_Named):
    """A tool's circuit breaker state (context ``circuit``)."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Step(_Named):
    """What a runner's host does next (recourse::Step; docs/embedding.md section 5)."""

    CALL = "call"
    WAIT = "wait"
    REPAIR = "repair"
    AUTHORIZE = "authorize"
    ESCALATE = "escalate"
    DONE = "done"


class Ending(_Named):
    """How an operation ended (recourse::Ending)."""

    NONE = "none"  #: not ended
    SUCCESS = "success"  #: a call succeeded
    DECIDED = "decided"  #: stop, degrade, an abandoned question, or replacements spent
    COMMITTED = "committed"  #: the ledger says the side effect already happened
    DEADLINE = "deadline"  #: the operation's deadline passed
    CANCELLED = "cancelled"  #: cancel() was called


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass
class WarningRecord:
    """A problem met reading the envelope or deciding: ``kind`` (``malformed``, ``duplicate``,
    ``oversized``, ``null``, ``unknown_code``, ``trace_id_minted``, ...), the camelCase ``field``
    it is about ("" for none) and a sentence for people."""

    kind: str
    field: str
    message: str

    def to_dict(self) -> Dict[str, str]:
        return {"kind": self.kind, "field": self.field, "message": self.message}


@dataclass
class Budget:
    """One budget before a decision and after the call it leads to; ``None`` is unlimited."""

    before: Optional[int]
    after: Optional[int]

    def to_dict(self) -> Dict[str, Optional[int]]:
        return {"before": self.before, "after": self.after}


@dataclass
class Budgets:
    """The budgets of a decision: calls, repaired calls, cost units, and ms to the deadline."""

    attempts: Budget
    repairs: Budget
    cost: Budget
    time_ms: Budget

    def to_dict(self) -> Dict[str, Dict[str, Optional[int]]]:
        return {"attempts": self.attempts.to_dict(), "repairs": self.repairs.to_dict(),
                "cost": self.cost.to_dict(), "timeMs": self.time_ms.to_dict()}


@dataclass
class Decision:
    """What the engine decided for one failed call (docs/schema/decision.schema.json).

    Durations are ms, counts are calls. ``jitter_ms`` is set on a retry only; ``reason``,
    ``target``, ``exhausted``, ``backoff_attempt``, ``retry_after_ms`` (the server's valid hint),
    ``retry_at_ms`` (with the context's ``nowMs``: when to send the retry, ms since the epoch),
    ``timeout_ms`` (the next call's per-try timeout) and ``nearest_code`` are ``None`` when the
    JSON omits them. ``model_message`` is the text the next model turn may read
    (recourse::model_text), computed when first read; ``model_message_flags`` says what was
    changed in it.
    """

    route: Route
    delay_ms: int
    jitter_ms: Optional[int]
    rule: str
    reason: Optional[str]
    target: Optional[str]
    policy: str
    policy_hash: str
    exhausted: Optional[str]
    attempt: int
    backoff_attempt: Optional[int]
    attempts_left: int
    repairs_left: int
    retry_after_ms: Optional[int]
    retry_at_ms: Optional[int]
    timeout_ms: Optional[int]
    budgets: Budgets
    idempotency_key: KeyDirective
    warnings: List[WarningRecord]
    nearest_code: Optional[str]
    trace_id: str
    #: The envelope as the engine read it, for model_message (compared by its fields).
    _envelope: Any = field(default=None, repr=False)

    @functools.cached_property
    def _model(self) -> Tuple[str, List[str]]:
        if self._envelope is None:
            return "", []
        return self._envelope.model_message()

    @property
    def model_message(self) -> str:
        """The text the next model turn may read about the failure (recourse::model_text):
        control characters, markup and invisible text stripped, likely secrets redacted,
        instruction-like text flagged, cut at 400 UTF-8 bytes. Computed when first read."""
        return self._model[0]

    @property
    def model_message_flags(self) -> List[str]:
        """What model_message changed: "stripped", "redacted", "instruction_like",
        "truncated"; empty when nothing."""
        return self._model[1]

    def to_dict(self) -> Dict[str, Any]:
        """The decision's JSON as a dict: the keys and order of recourse::to_json(Decision)."""
        out: Dict[str, Any] = {}
        for name in _DECISION_KEYS:
            value = getattr(self, name)
            if value is None or (name == "model_message_flags" and not value):
                continue
            if name == "budgets":
                value = value.to_dict()
            elif name == "warnings":
                value = [w.to_dict() for w in value]
            elif isinstance(value, enum.Enum):
                value = value.value
            out["retryAt" if name == "retry_at_ms" else _camel(name)] = value
        return out


_DECISION_KEYS = [f for f in Decision.__dataclass_fields__ if f != "_envelope"] + [
    "model_message", "model_message_flags"]


@dataclass
class Diagnostic:
    """One problem found in a policy, a context or an input: ``severity`` ("error", "warning",
    "note"), a stable ``code`` (E0xx, W1xx, C001, N001, S00x, R00x), the ``file``, 1-based
    ``line`` and ``column`` (0: no position), byte ``offset``, ``message`` and ``help``."""

    severity: str
    code: str
    file: str
    line: int
    column: int
    offset: int
    message: str
    help: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}: " if self.file else ""
        return f"{where}{self.severity}[{self.code}]: {self.message}"


@dataclass
class Adapted:
    """What an adapter read from a protocol's failure: the ``envelope`` (a dict with the JSON's
    keys), the table row that gave its code (``mapping``, e.g. "http 429"), the adapter's
    ``warnings`` and ``idempotent`` (a trusted MCP server's annotations; else ``None``). Pass it
    to ``decide()`` or a runner as the envelope: its warnings reach the decision."""

    envelope: Dict[str, Any]
    mapping: str
    warnings: List[WarningRecord]
    idempotent: Optional[bool]
    _native: Any = field(default=None, repr=False, compare=False)


@dataclass
class Action:
    """What a runner's host does next (docs/embedding.md section 5, "Actions").

    ``step``: call ``tool`` with ``arguments`` (as given: JSON values come back as Python values),
    sending ``idempotency_key`` when not ``None``, within ``timeout_ms``; wait ``wait_ms``; or
    answer a repair, authorize or escalate question; ``done`` has the ``ending``. ``attempt`` is
    the call's number for its tool, ``elapsed_ms`` the time since the first step. After the first
    failure ``decision`` and ``envelope`` (a dict) are the last decision and what it read.
    """

    step: Step
    ending: Optional[Ending]
    tool: str
    arguments: Any
    idempotency_key: Optional[str]
    timeout_ms: Optional[int]
    wait_ms: int
    attempt: int
    elapsed_ms: int
    decision: Optional[Decision]
    envelope: Optional[Dict[str, Any]]
