#!/usr/bin/env python3
"""recourse from Python through the C API (recourse/recourse.h) with ctypes, standard library only.

    python3 examples/python/recourse_example.py --library build/librecourse_c.so rules/examples

Loads the policies, decides a few failed calls (JSON in and out, and the plain C structs),
receives the decision log through a callback, reloads with a broken policy (the old bundle stays),
prints the counters, and runs one payment's recovery loop through the runner's step machine. Exits 1 when a decision is not the one expected, so ctest runs it.
"""
import argparse
import ctypes
import json
import sys

ABI_VERSION = 1
UNSET = -1
ABSENT = -(2**63)
ROUTES = ["retry", "repair", "authorize", "replace", "degrade", "escalate", "stop"]
SIDE_EFFECT = {None: 0, "none": 1, "unknown": 2, "committed": 3}


class Envelope(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("code", ctypes.c_char_p),
                ("message", ctypes.c_char_p), ("retryable", ctypes.c_int),
                ("field", ctypes.c_char_p), ("suggestion", ctypes.c_char_p),
                ("retry_after_ms", ctypes.c_int64), ("trace_id", ctypes.c_char_p)]


class Context(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("tool", ctypes.c_char_p),
                ("idempotent", ctypes.c_int), ("side_effect", ctypes.c_int),
                ("attempt", ctypes.c_int64), ("repairs", ctypes.c_int64),
                ("elapsed_ms", ctypes.c_int64), ("arguments", ctypes.POINTER(ctypes.c_char_p)),
                ("argument_count", ctypes.c_size_t), ("max_attempts", ctypes.c_int64),
                ("deadline_ms", ctypes.c_int64), ("operation_id", ctypes.c_char_p),
                ("workflow_id", ctypes.c_char_p), ("lower_retries", ctypes.c_int64),
                ("repeats", ctypes.c_int64), ("cost_spent", ctypes.c_int64),
                ("idempotency_key", ctypes.c_char_p), ("idempotency_key_pinned", ctypes.c_int),
                ("circuit", ctypes.c_int), ("retry_throttled", ctypes.c_int),
                ("now_ms", ctypes.c_int64), ("args_hash", ctypes.c_char_p),
                ("stream_output_emitted", ctypes.c_int),
                ("stream_discard_supported", ctypes.c_int)]


class Decision(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("route", ctypes.c_int),
                ("delay_ms", ctypes.c_int64), ("jitter_ms", ctypes.c_int64),
                ("rule", ctypes.c_char_p), ("reason", ctypes.c_char_p),
                ("target", ctypes.c_char_p), ("policy", ctypes.c_char_p),
                ("policy_hash", ctypes.c_char_p), ("exhausted", ctypes.c_char_p),
                ("trace_id", ctypes.c_char_p), ("attempt", ctypes.c_int64),
                ("attempts_left", ctypes.c_int64), ("repairs_left", ctypes.c_int64),
                ("retry_after_ms", ctypes.c_int64), ("retry_at_ms", ctypes.c_int64),
                ("timeout_ms", ctypes.c_int64), ("warnings", ctypes.c_uint32),
                ("internal", ctypes.c_void_p)]


class Source(ctypes.Structure):
    _fields_ = [("path", ctypes.c_char_p), ("text", ctypes.c_char_p),
                ("text_len", ctypes.c_size_t)]


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)


class RecourseError(Exception):
    """A call that returned a status other than RECOURSE_OK."""


class Engine:
    """One recourse_engine: load policies, decide, reload, log. Thread-safe like the C API."""

    def __init__(self, library, count=True):
        lib = ctypes.CDLL(library)
        self._lib = lib
        lib.recourse_abi_version.restype = ctypes.c_uint32
        if lib.recourse_abi_version() != ABI_VERSION:
            raise RecourseError("the library's ABI is not version %d" % ABI_VERSION)
        lib.recourse_version.restype = ctypes.c_char_p
        lib.recourse_status_string.restype = ctypes.c_char_p
        lib.recourse_engine_new.restype = ctypes.c_void_p
        lib.recourse_engine_free.argtypes = [ctypes.c_void_p]
        lib.recourse_string_free.argtypes = [ctypes.c_void_p]
        out = ctypes.POINTER(ctypes.c_void_p)
        lib.recourse_engine_load_sources.argtypes = [ctypes.c_void_p, ctypes.POINTER(Source),
                                                     ctypes.c_size_t, out]
        lib.recourse_engine_load_paths.argtypes = [ctypes.c_void_p,
                                                   ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.c_size_t, out]
        lib.recourse_engine_decide_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                    ctypes.c_size_t, ctypes.c_char_p,
                                                    ctypes.c_size_t, out, out]
        lib.recourse_context_init.argtypes = [ctypes.POINTER(Context)]
        lib.recourse_engine_decide.argtypes = [ctypes.c_void_p, ctypes.POINTER(Envelope),
                                               ctypes.POINTER(Context), ctypes.POINTER(Decision),
                                               out]
        lib.recourse_decision_release.argtypes = [ctypes.POINTER(Decision)]
        lib.recourse_engine_set_log.argtypes = [ctypes.c_void_p, LOG_FN, ctypes.c_void_p]
        lib.recourse_engine_counters_json.argtypes = [ctypes.c_void_p]
        lib.recourse_engine_counters_json.restype = ctypes.c_void_p
        lib.recourse_engine_generation.argtypes = [ctypes.c_void_p]
        lib.recourse_engine_generation.restype = ctypes.c_uint64

        class Options(ctypes.Structure):
            _fields_ = [("size", ctypes.c_size_t), ("count", ctypes.c_int)]

        self._handle = lib.recourse_engine_new(ctypes.byref(Options(ctypes.sizeof(Options),
                                                                    int(count))))
        if not self._handle:
            raise MemoryError("recourse_engine_new")
        self._log = None

    def close(self):
        if self._handle:
            self._lib.recourse_engine_set_log(self._handle, LOG_FN(), None)
            self._lib.recourse_engine_free(self._handle)
            self._handle = None

    def _take(self, pointer):
        """The text of a library-owned string, freed."""
        if not pointer.value:
            return None
        text = ctypes.string_at(pointer.value).decode()
        self._lib.recourse_string_free(pointer.value)
        return text

    def _check(self, status, error=None):
        if status != 0:
            message = self._lib.recourse_status_string(status).decode()
            detail = self._take(error) if error is not None else None
            raise RecourseError(message + (": " + detail if detail else ""))

    def load_sources(self, sources):
        """Compiles {path: text} as one bundle and swaps it in; returns the diagnostics."""
        items = [(path.encode(), text.encode()) for path, text in sources.items()]
        array = (Source * len(items))(*[Source(p, t, len(t)) for p, t in items])
        diagnostics = ctypes.c_void_p()
        status = self._lib.recourse_engine_load_sources(self._handle, array, len(items),
                                                        ctypes.byref(diagnostics))
        found = json.loads(self._take(diagnostics) or "[]")
        self._check(status)
        return found

    def load_paths(self, paths):
        """Compiles files and directories and swaps the bundle in; returns the diagnostics."""
        array = (ctypes.c_char_p * len(paths))(*[p.encode() for p in paths])
        diagnostics = ctypes.c_void_p()
        status = self._lib.recourse_engine_load_paths(self._handle, array, len(paths),
                                                      ctypes.byref(diagnostics))
        found = json.loads(self._take(diagnostics) or "[]")
        self._check(status)
        return found

    def generation(self):
        return self._lib.recourse_engine_generation(self._handle)

    def decide_json(self, envelope, context):
        """The decision (a dict) for an envelope (JSON text, untrusted) and a context (a dict)."""
        env = envelope.encode()
        ctx = json.dumps(context).encode()
        decision, error = ctypes.c_void_p(), ctypes.c_void_p()
        status = self._lib.recourse_engine_decide_json(self._handle, env, len(env), ctx,
                                                       len(ctx), ctypes.byref(decision),
                                                       ctypes.byref(error))
        self._check(status, error)
        return json.loads(self._take(decision))

    def decide(self, code, tool, side_effect=None, attempt=1, retryable=None):
        """The decision through the plain C structs, as a dict of its main fields."""
        env = Envelope(ctypes.sizeof(Envelope), code.encode(), None,
                       UNSET if retryable is None else int(retryable), None, None, ABSENT, None)
        ctx = Context()
        self._lib.recourse_context_init(ctypes.byref(ctx))
        ctx.tool = tool.encode()
        ctx.side_effect = SIDE_EFFECT[side_effect]
        ctx.attempt = attempt
        out = Decision(size=ctypes.sizeof(Decision))
        error = ctypes.c_void_p()
        self._check(self._lib.recourse_engine_decide(self._handle, ctypes.byref(env),
                                                     ctypes.byref(ctx), ctypes.byref(out),
                                                     ctypes.byref(error)), error)
        try:
            return {"route": ROUTES[out.route], "delayMs": out.delay_ms,
                    "rule": out.rule.decode(), "policy": out.policy.decode(),
                    "policyHash": out.policy_hash.decode(), "traceId": out.trace_id.decode()}
        finally:
            self._lib.recourse_decision_release(ctypes.byref(out))

    def set_log(self, callback):
        """Calls callback(record dict) for each decision (None: stop logging)."""
        if callback is None:
            self._log = LOG_FN()
        else:
            self._log = LOG_FN(lambda user, record, size: callback(json.loads(record[:size])))
        self._check(self._lib.recourse_engine_set_log(self._handle, self._log, None))

    def counters(self):
        return json.loads(self._take(ctypes.c_void_p(
            self._lib.recourse_engine_counters_json(self._handle))))


def expect(what, got, want):
    if got != want:
        print("FAILED: %s: got %r, want %r" % (what, got, want), file=sys.stderr)
        sys.exit(1)


def run_payment(engine):
    """One payment's recovery loop through the runner's step machine (ABI 1.1), on a fake clock:
    a 429 asking for 2 s, the wait, the same idempotency key again, success."""
    lib, c = engine._lib, ctypes
    lib.recourse_abi_minor.restype = c.c_uint32
    if lib.recourse_abi_minor() < 1:
        raise RecourseError("the library predates ABI 1.1")
    out = c.POINTER(c.c_void_p)
    lib.recourse_health_new.restype = lib.recourse_workflow_new.restype = c.c_void_p
    lib.recourse_health_new.argtypes = [c.c_void_p]
    lib.recourse_workflow_new.argtypes = [c.c_void_p, c.c_char_p]
    for name in ("recourse_health_free", "recourse_workflow_free", "recourse_runner_free"):
        getattr(lib, name).argtypes = [c.c_void_p]
    lib.recourse_runner_new.argtypes = [c.c_void_p] * 4 + [c.c_char_p, c.c_size_t, out, out]
    lib.recourse_runner_next.argtypes = [c.c_void_p, c.c_int64, out, out]
    lib.recourse_runner_report.argtypes = [c.c_void_p, c.c_char_p, c.c_size_t, c.c_int64, out]
    health, workflow = lib.recourse_health_new(None), lib.recourse_workflow_new(None, None)
    spec = json.dumps({"tool": "payments.create", "operationId": "order-7",
                       "arguments": {"amount": 1999, "currency": "EUR"}}).encode()
    runner, error = c.c_void_p(), c.c_void_p()
    engine._check(lib.recourse_runner_new(engine._handle, workflow, health, None, spec, len(spec),
                                          c.byref(runner), c.byref(error)), error)
    now, keys = 1700000000000, []
    while True:
        action = c.c_void_p()
        engine._check(lib.recourse_runner_next(runner, now, c.byref(action), c.byref(error)), error)
        a = json.loads(engine._take(action))
        if a["step"] == "done":
            break
        if a["step"] == "wait":
            now += a["waitMs"]  # a real host sleeps here
            continue
        keys.append(a["idempotencyKey"])
        outcome = {"outcome": "success"} if len(keys) > 1 else {
            "outcome": "failure", "sideEffect": "none",
            "raw": {"status": 429, "headers": {"Retry-After": "2"}}}
        text = json.dumps(outcome).encode()
        engine._check(lib.recourse_runner_report(runner, text, len(text), now, c.byref(error)),
                      error)
    print("runner: ", a["ending"], "after", len(keys), "calls and", a["elapsedMs"], "ms")
    expect("runner", (a["ending"], a["elapsedMs"], keys[0] == keys[1]), ("success", 2000, True))
    lib.recourse_runner_free(runner)
    lib.recourse_workflow_free(workflow)
    lib.recourse_health_free(health)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default="build/librecourse_c.so")
    parser.add_argument("rules", nargs="?", default="rules/examples")
    args = parser.parse_args()

    engine = Engine(args.library)
    engine.load_paths([args.rules])
    records = []
    engine.set_log(records.append)

    throttled = '{"code":"RATE_LIMITED","retryable":true,"retryAfterMs":1000,"traceId":"req_1"}'
    d = engine.decide_json(throttled, {"tool": "payments.create", "sideEffect": "none",
                                       "attempt": 2})
    print("json:   ", d["route"], d["delayMs"], "ms, rule", d["rule"])
    expect("route", d["route"], "retry")
    expect("delay", d["delayMs"], 1000)

    s = engine.decide("RATE_LIMITED", "payments.create", side_effect="committed")
    print("struct: ", s["route"], "rule", s["rule"])
    expect("committed payment", (s["route"], s["rule"]), ("stop", "already_charged"))

    try:
        engine.decide_json(throttled, {"tool": "payments.create", "attempt": 0})
        expect("bad context", "accepted", "rejected")
    except RecourseError as e:
        print("error:  ", e)

    generation = engine.generation()
    try:
        engine.load_sources({"broken.recourse": 'policy "x" { rule r when code == NOPE -> stop }'})
        expect("broken reload", "accepted", "rejected")
    except RecourseError as e:
        print("reload: ", e)
    expect("generation after a failed reload", engine.generation(), generation)
    expect("still deciding", engine.decide("RATE_LIMITED", "payments.create", "committed")["rule"],
           "already_charged")

    engine.set_log(None)
    expect("log records", len(records), 3)
    expect("log record", (records[0]["rule"], records[0]["traceId"],
                          records[0]["input"]["context"]["attempt"]), ("throttled", "req_1", 2))
    counters = engine.counters()
    print("counters:", json.dumps(counters["routes"]))
    expect("decisions counted", counters["decisions"], 3)
    run_payment(engine)
    engine.close()


if __name__ == "__main__":
    main()
