"""recourse: decide how an agent recovers when a tool call fails (docs/python.md).

    import recourse
    bundle = recourse.Bundle.from_paths("rules/examples")
    d = bundle.decide({"code": "RATE_LIMITED", "retryAfterMs": 1000},
                      {"tool": "payments.create", "sideEffect": "none", "attempt": 1})
    d.route, d.delay_ms        # (Route.RETRY, 1000)
"""

from . import _recourse
from .adapters import (from_exception, from_grpc, from_http, from_jsonrpc, from_mcp, from_raw,
                       from_response, from_transport_error)
from .engine import Bundle
from .runner import (Failure, OperationFailed, Result, Runner, guard, now_ms, raw_exception,
                     raw_response, run, run_async)
from .state import Health, Store, Workflow
from .errors import (CompileError, ContextError, InputError, RecourseError, RunnerError,
                     StoreError)
from .types import (Action, Adapted, Budget, Budgets, Circuit, Code, Decision, Diagnostic,
                    Ending, KeyDirective, Route, SideEffect, Step, WarningRecord)

_recourse._register(
    Decision=Decision, Budget=Budget, Budgets=Budgets, Warning=WarningRecord,
    Diagnostic=Diagnostic, Action=Action, Adapted=Adapted, Route=Route,
    KeyDirective=KeyDirective, Step=Step, Ending=Ending, Circuit=Circuit,
    RecourseError=RecourseError, CompileError=CompileError, ContextError=ContextError,
    InputError=InputError, StoreError=StoreError, RunnerError=RunnerError)

#: The Bundle a ``guard`` without ``bundle=`` decides with; set it once at start-up.
default_bundle = None

__all__ = [
    "Action", "Adapted", "Budget", "Budgets", "Bundle", "Circuit", "Code", "CompileError",
    "ContextError", "Decision", "Diagnostic", "Ending", "InputError", "KeyDirective",
    "RecourseError", "Route", "RunnerError", "SideEffect", "Step", "StoreError", "WarningRecord",
    "from_exception", "from_grpc", "from_http", "from_jsonrpc", "from_mcp", "from_raw",
    "from_response", "from_transport_error", "Failure", "OperationFailed", "Result", "Runner",
    "guard", "now_ms", "raw_exception", "raw_response", "run", "run_async", "Health", "Store",
    "Workflow", "default_bundle",
]
