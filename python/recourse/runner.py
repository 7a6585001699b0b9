"""The recovery loop: a runner per operation (recourse::Runner, docs/embedding.md section 5),
as a step machine (Runner), a function (run), its asyncio form (run_async) and a decorator
(guard).

An operation is one logical tool call, retried, repaired or replaced until it ends. The runner
decides with a Bundle, counts in a Workflow, reads and records tool health in a Health, and
claims each call of a tool that is not idempotent in the store's ledger. Time belongs to the
host: every step takes ``now_ms`` (ms since the epoch; default the system clock), and a wait is
an action the host performs (run() sleeps, run_async() awaits asyncio.sleep).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, Optional, Union

from . import _recourse
from .adapters import _header_pairs, _status, _transport_text, is_response
from .engine import Bundle
from .state import Health, Store, Workflow
from .types import Action, Adapted, Decision, Ending, Step

_UNCHANGED = object()


def now_ms() -> int:
    """The system clock, ms since the epoch."""
    return time.time_ns() // 1_000_000


@dataclass
class Failure:
    """A failed call, for a ``call`` that returns its failure instead of raising it: an
    ``envelope`` (dict, JSON text or Adapted), else a ``raw`` form (docs/adapters.md) read with
    the policy's ``map`` lines, else an ``error`` (an exception) or a ``response`` (an HTTP
    response object). ``side_effect`` ("none", "unknown", "committed") is what the call did
    downstream, if the host knows; absent, the ledger answers for a tool that is not
    idempotent, else it reads as unknown."""

    envelope: Any = None
    raw: Optional[Dict[str, Any]] = None
    error: Optional[BaseException] = None
    response: Any = None
    side_effect: Optional[str] = None


def raw_response(response: Any) -> Dict[str, Any]:
    """An HTTP response object (requests, httpx, urllib) as a raw form: {"protocol": "http",
    "status", "headers", "body"} (the body as text, undecodable bytes replaced)."""
    from .adapters import _content

    headers: Dict[str, Any] = {}
    for name, value in _header_pairs(getattr(response, "headers", None)):
        if name in headers:  # a repeated field: a list of its values
            previous = headers[name]
            headers[name] = (previous if isinstance(previous, list) else [previous]) + [value]
        else:
            headers[name] = value
    return {"protocol": "http", "status": _status(response), "headers": headers,
            "body": _content(response).decode("utf-8", "replace")}


def raw_exception(exc: BaseException) -> Dict[str, Any]:
    """What a call raised as a raw form (see adapters.from_exception for the readings)."""
    import base64

    response = getattr(exc, "response", None)
    if response is not None and _status(response) is not None:
        return raw_response(response)
    if is_response(exc):
        return raw_response(exc)
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if callable(code) and callable(details):  # grpc.RpcError
        status = code()
        trailing = getattr(exc, "trailing_metadata", None)
        metadata = {}
        for key, value in (trailing() if callable(trailing) else None) or ():
            metadata[key] = (base64.b64encode(value).decode() if isinstance(value, bytes)
                             else str(value))
        return {"protocol": "grpc", "status": getattr(status, "name", str(status)),
                "message": details() or "", "metadata": metadata}
    seen = set()
    cause: Optional[BaseException] = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        text = _transport_text(cause)
        if text:
            return {"protocol": "http", "transportError": text}
        cause = cause.__cause__ or cause.__context__
    return {"protocol": "http", "transportError": f"{type(exc).__name__}: {exc}"}


class Runner:
    """One operation's step machine. ``next()`` says what to do; the host does it and reports
    with ``succeed()``, ``fail()``, ``resume()`` or ``abandon()``.

    ``bundle`` decides; ``health`` (default: a Health of its own) and ``store`` (its ledger;
    default: the health's store) may be shared by every runner of the process; ``workflow``
    (default: a new one on the store) counts this loop. ``arguments`` is any JSON value (the
    runner hashes its bytes for the idempotency key). ``operation_id`` keys the ledger, the
    workflow and jitter (default: 128 random bits). ``deadline_ms`` bounds the whole operation
    from the first step; ``max_replacements`` bounds the replacement tools followed (4);
    ``ledger_lease_ms`` is how long a claim before a call holds without a report (60 s).

    Thread rules: one thread at a time (calls from two threads take turns); ``cancel()`` from
    any thread. Each step releases the GIL while the engine and the store work.
    """

    def __init__(self, bundle: Bundle, tool: str, arguments: Any = None, *,
                 operation_id: Optional[str] = None, workflow_id: str = "",
                 store: Optional[Store] = None, health: Optional[Health] = None,
                 workflow: Optional[Workflow] = None, deadline_ms: Optional[int] = None,
                 max_replacements: int = 4, ledger_lease_ms: int = 60_000):
        if store is None:  # the health's store, else a memory store for both and the ledger
            store = health.store if health is not None and health.store else Store()
        self.store = store
        self.health = health if health is not None else Health(store)
        self.workflow = workflow if workflow is not None else Workflow(self.store)
        self.operation_id = operation_id or secrets.token_hex(16)
        self._native = _recourse._Runner(
            bundle._engine, self.workflow._native, self.health._native,
            self.store._native if self.store is not None else None, tool, json.dumps(arguments),
            self.operation_id, workflow_id, deadline_ms, max_replacements, ledger_lease_ms)

    def next(self, now: Optional[int] = None) -> Action:
        """The next action at ``now`` (ms since the epoch; default the clock). Asked again
        without a report, the same action (a wait with the time left)."""
        return self._native.next(now_ms() if now is None else now)

    def succeed(self, now: Optional[int] = None) -> None:
        """Reports that the call succeeded. RunnerError (R003) when no call is out."""
        self._native.report("success", None, None, None, None, None, _now(now))

    def fail(self, failure: Any = None, *, side_effect: Optional[str] = None,
             now: Optional[int] = None) -> None:
        """Reports that the call failed: ``failure`` is an envelope (dict or JSON text), an
        Adapted, a Failure, an exception the call raised, an HTTP response object, or None (an
        empty envelope: UNKNOWN). Exceptions and responses are reported as raw forms, so the
        policy's ``map`` lines apply. RunnerError (R003) when no call is out."""
        envelope, raw = None, None
        if isinstance(failure, Failure):
            side_effect = side_effect or failure.side_effect
            if failure.envelope is not None:
                envelope = failure.envelope
            elif failure.raw is not None:
                raw = failure.raw
            elif failure.error is not None:
                raw = raw_exception(failure.error)
            elif failure.response is not None:
                raw = raw_response(failure.response)
        elif isinstance(failure, BaseException):
            raw = raw_exception(failure)
        elif failure is not None and not isinstance(failure, (dict, str, bytes, Adapted)) \
                and is_response(failure):
            raw = raw_response(failure)
        else:
            envelope = failure if failure is not None else {}
        if envelope is None and raw is None:
            envelope = {}
        self._native.report("failure", envelope, None if raw is None else json.dumps(raw),
                            None, side_effect, None, _now(now))

    def resume(self, arguments: Any = _UNCHANGED, now: Optional[int] = None) -> None:
        """Answers a repair, authorize or escalate question: call again, with new
        ``arguments`` if given (a changed body takes a new idempotency key)."""
        text = None if arguments is _UNCHANGED else json.dumps(arguments)
        self._native.report("resume", None, None, None, None, text, _now(now))

    def abandon(self, now: Optional[int] = None) -> None:
        """Answers a question by ending the operation (ending "decided")."""
        self._native.report("abandon", None, None, None, None, None, _now(now))

    def set_arguments(self, arguments: Any) -> None:
        """Changes the next call's arguments (before a call, during a wait); RunnerError
        (R003) while a call or a question is out."""
        self._native.set_arguments(json.dumps(arguments))

    def cancel(self) -> None:
        """Ends the operation: the next ``next()`` is done ("cancelled"). Any thread."""
        self._native.cancel()
        event = getattr(self, "_wake", None)
        if event is not None:
            event.set()


def _now(now: Optional[int]) -> int:
    return now_ms() if now is None else now


@dataclass
class Result:
    """How an operation ended: ``ok`` when a call succeeded, its ``value`` (what ``call``
    returned), the final ``action`` (``ending``, the last ``decision``), and the last
    ``error`` a call raised (None if none did)."""

    ok: bool
    value: Any
    action: Action
    error: Optional[BaseException] = None

    @property
    def ending(self) -> Ending:
        return self.action.ending

    @property
    def decision(self) -> Optional[Decision]:
        return self.action.decision


class OperationFailed(Exception):
    """Raised by a ``guard``ed function whose operation did not end in a success. ``result``
    is the Result (ending, last decision); the last error the call raised is the cause."""

    def __init__(self, result: Result):
        decision = result.decision
        why = f"{decision.route.value} ({decision.rule})" if decision else "no decision"
        super().__init__(f"{result.action.tool}: {result.ending.value} after {why}")
        self.result = result


SideEffectOf = Optional[Callable[[Any], Optional[str]]]


def _outcome(runner: Runner, value: Any, error: Optional[BaseException],
             is_failure: Callable[[Any], bool], side_effect: SideEffectOf, now: int) -> None:
    """Reports a call's outcome at ``now``."""
    failure = error if error is not None else value
    if error is not None or isinstance(value, Failure) or is_failure(value):
        runner.fail(failure, side_effect=side_effect(failure) if side_effect else None, now=now)
    else:
        runner.succeed(now)


def _http_failure(value: Any) -> bool:
    """The default failure test: an HTTP response object with a status of 400 or more."""
    return is_response(value) and (_status(value) or 0) >= 400


def _answer(runner: Runner, answer: Any, now: int) -> None:
    """Reports ``ask``'s answer: None or False abandons, True resumes, a value resumes with it."""
    if answer is None or answer is False:
        runner.abandon(now)
    elif answer is True:
        runner.resume(now=now)
    else:
        runner.resume(answer, now)


def run(bundle: Bundle, tool: str, call: Callable[[Action], Any], arguments: Any = None, *,
        ask: Optional[Callable[[Action], Any]] = None,
        is_failure: Callable[[Any], bool] = _http_failure,
        side_effect: SideEffectOf = None, sleep: Optional[Callable[[float], None]] = None,
        clock: Optional[Callable[[], int]] = None, **options: Any) -> Result:
    """Runs one operation to its end and returns its Result; never raises for the call's
    failures.

    ``call(action)`` performs a call: ``action.tool`` with ``action.arguments``, sending
    ``action.idempotency_key`` (when not None) within ``action.timeout_ms``. It returns the
    result (a success), or a Failure, or an HTTP response with status >= 400 (``is_failure``
    decides), or raises (the exception is read by from_exception's rules). ``ask(action)``
    answers repair, authorize and escalate: None or False abandons, True resumes, any other
    value resumes with it as the new arguments (default: abandon). ``side_effect(failure)``
    says what a failed call did downstream, as the tool's API documents it ("none" for a
    rejection that applied nothing, "committed", "unknown"); None (the default, or its answer)
    lets the ledger answer: unknown for a tool that is not idempotent, whose policy then will
    not resend blindly. Waits sleep on this thread
    (``sleep(seconds)`` replaces it; cancel() ends the default one); ``clock()`` gives ms since
    the epoch (default: the system clock; a test passes a fake one its ``sleep`` advances).
    ``options`` are Runner's.
    """
    runner = options.pop("runner", None) or Runner(bundle, tool, arguments, **options)
    wake = runner._wake = threading.Event()
    clock = clock or now_ms
    value, error = None, None
    while True:
        action = runner.next(clock())
        if action.step is Step.DONE:
            return Result(action.ending is Ending.SUCCESS, value, action, error)
        if action.step is Step.WAIT:
            (sleep or wake.wait)(action.wait_ms / 1000)
        elif action.step is Step.CALL:
            value, error = None, None
            try:
                value = call(action)
            except Exception as e:  # noqa: BLE001 - the call's failure is the runner's input
                error = e
            _outcome(runner, value, error, is_failure, side_effect, clock())
        else:
            _answer(runner, ask(action) if ask else None, clock())


async def run_async(bundle: Bundle, tool: str, call: Callable[[Action], Awaitable[Any]],
                    arguments: Any = None, *,
                    ask: Optional[Callable[[Action], Any]] = None,
                    is_failure: Callable[[Any], bool] = _http_failure,
                    side_effect: SideEffectOf = None, **options: Any) -> Result:
    """run() for asyncio: ``call`` and ``ask`` may be coroutine functions, waits are
    ``asyncio.sleep``, and cancelling the task cancels the operation (the runner ends
    "cancelled" and CancelledError propagates). Steps on a SQLite or Redis store run in a
    worker thread (``asyncio.to_thread``) so the loop never blocks on the store."""
    runner = options.pop("runner", None) or Runner(bundle, tool, arguments, **options)
    spec = getattr(runner.store, "spec", "memory")
    offload = spec != "memory"

    async def step(fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args) if offload else fn(*args)

    value, error = None, None
    try:
        while True:
            action = await step(runner.next, now_ms())
            if action.step is Step.DONE:
                return Result(action.ending is Ending.SUCCESS, value, action, error)
            if action.step is Step.WAIT:
                await asyncio.sleep(action.wait_ms / 1000)
            elif action.step is Step.CALL:
                value, error = None, None
                try:
                    value = call(action)
                    if inspect.isawaitable(value):
                        value = await value
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001
                    error = e
                await step(_outcome, runner, value, error, is_failure, side_effect, now_ms())
            else:
                answer = ask(action) if ask else None
                if inspect.isawaitable(answer):
                    answer = await answer
                await step(_answer, runner, answer, now_ms())
    except asyncio.CancelledError:
        runner.cancel()
        raise


def guard(tool: str, *, bundle: Optional[Bundle] = None,
          fallbacks: Optional[Dict[str, Callable[..., Any]]] = None,
          key_argument: Optional[str] = None, **options: Any) -> Callable[[Callable[..., Any]],
                                                                         Callable[..., Any]]:
    """A decorator that runs each call of the function as one operation of ``tool``::

        @recourse.guard("weather.get", bundle=bundle, health=health)
        def get_weather(city): return requests.get(URL, params={"city": city}, timeout=5)

    The function is the call: what it raises or returns is read as run() reads ``call``'s. A
    replacement tool a decision names is called through ``fallbacks[tool]`` with the same
    arguments (none there: the call raises LookupError, read as UNKNOWN). ``key_argument`` names a keyword the idempotency
    key is passed in. The operation's arguments are the call's, as JSON ({"args", "kwargs"};
    values JSON cannot hold as their repr). Returns the function's value on a success, else
    raises OperationFailed (from the last error). A coroutine function gets an async wrapper
    (run_async). ``bundle`` defaults to ``recourse.default_bundle``; ``options`` are run()'s
    and Runner's (health, store, deadline_ms, ask, ...)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        def setup(args: Any, kwargs: Any) -> Any:
            arguments = json.loads(json.dumps({"args": list(args), "kwargs": kwargs},
                                              default=repr))

            def call(action: Action) -> Any:
                target = fn if action.tool == tool else (fallbacks or {}).get(action.tool)
                if target is None:
                    raise LookupError(f"no fallback for {action.tool}")
                extra = ({key_argument: action.idempotency_key}
                         if key_argument and action.idempotency_key else {})
                return target(*args, **kwargs, **extra)
            return bundle or _default_bundle(), arguments, call

        def finish(result: Result) -> Any:
            if result.ok:
                return result.value
            raise OperationFailed(result) from result.error

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                b, arguments, call = setup(args, kwargs)
                return finish(await run_async(b, tool, call, arguments, **options))
            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            b, arguments, call = setup(args, kwargs)
            return finish(run(b, tool, call, arguments, **options))
        return wrapper
    return decorate


def _default_bundle() -> Bundle:
    from . import default_bundle

    if default_bundle is None:
        raise RuntimeError("recourse.guard needs bundle= or recourse.default_bundle set")
    return default_bundle
