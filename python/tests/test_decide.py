"""decide() from dicts and from JSON text: the engine's field rules, the typed results, errors."""

import json
import threading

import pytest

import recourse
from recourse import _recourse

CONTEXT = {"tool": "payments.create", "sideEffect": "none", "attempt": 1,
           "operationId": "op-1", "nowMs": 1_700_000_000_000}


def json_writable(value):
    """Whether JSON text can carry `value` (no NaN, no lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    except (ValueError, UnicodeEncodeError):
        return False
    return True


def both(bundle, envelope, context=CONTEXT):
    """The decision from the dict and from its JSON text, which must be equal."""
    from_dict = bundle.decide(envelope, context)
    from_text = bundle.decide(json.dumps(envelope), json.dumps(context))
    assert from_dict == from_text
    return from_dict


def test_rate_limit_retries_after_the_servers_wait(bundle):
    d = both(bundle, {"code": "RATE_LIMITED", "retryable": True, "retryAfterMs": 1000,
                      "traceId": "req-1"})
    assert d.route is recourse.Route.RETRY
    assert d.rule == "throttled"
    assert d.delay_ms == 1000
    assert d.retry_after_ms == 1000
    assert d.retry_at_ms == 1_700_000_001_000
    assert d.policy == "payments.create"
    assert d.policy_hash.startswith("sha256:")
    assert d.trace_id == "req-1"
    assert d.warnings == []
    assert d.idempotency_key in (recourse.KeyDirective.REUSE, recourse.KeyDirective.NONE)
    assert isinstance(d.budgets.attempts, recourse.Budget)


@pytest.mark.parametrize("envelope,kind,field", [
    ({"code": "RATE_LIMITED", "retryAfterMs": -1}, "malformed", "retryAfterMs"),
    ({"code": "RATE_LIMITED", "retryAfterMs": "1000"}, "malformed", "retryAfterMs"),
    ({"code": "RATE_LIMITED", "retryAfterMs": float("nan")}, "malformed", "retryAfterMs"),
    ({"code": "RATE_LIMITED", "retryable": "yes"}, "malformed", "retryable"),
    ({"code": "RATE_LIMITED", "retryable": 1}, "malformed", "retryable"),
    ({"code": ""}, "malformed", "code"),
    ({"code": "X" * 65}, "oversized", "code"),
    ({"code": None}, "null", "code"),
    ({"code": ["RATE_LIMITED"]}, "malformed", "code"),
    ({"code": "TRANSIENT", "field": {"name": "amount"}}, "malformed", "field"),
    ({"code": "TRANSIENT", "traceId": "\ud800"}, "malformed", "traceId"),
])
def test_a_malformed_field_is_absent_with_a_warning(bundle, envelope, kind, field):
    d = bundle.decide(envelope, CONTEXT)
    assert any(w.kind == kind and w.field == field for w in d.warnings), d.warnings
    if json_writable(envelope):
        assert d == both(bundle, envelope)  # the JSON reader reads the same dict alike


@pytest.mark.parametrize("value,expected", [(1000.0, 1000), (0.5, 1), (1e-300, 1), (-0.0, 0),
                                            (2 ** 70, 2 ** 63 - 1), (True, None)])
def test_retry_after_numbers_read_as_the_json_reader_reads_them(bundle, value, expected):
    d = both(bundle, {"code": "RATE_LIMITED", "retryable": True, "retryAfterMs": value})
    assert d.retry_after_ms == expected


def test_unknown_keys_are_ignored_and_an_absent_trace_id_is_minted(bundle):
    d = both(bundle, {"code": "TRANSIENT", "retryable": True, "extra": {"deep": [1, 2]}})
    assert d.trace_id.startswith("local-")
    assert [w.kind for w in d.warnings] == ["trace_id_minted"]


def test_an_envelope_that_is_not_json_is_decided_as_unreadable(bundle):
    for envelope in ("not json", b"[1,2]", 42):
        d = bundle.decide(envelope, CONTEXT)
        assert d.route is recourse.Route.STOP
        assert d.rule == "unreadable_envelope"


@pytest.mark.parametrize("context,message", [
    ({"tool": "payments.create", "attempt": 0}, "context.attempt must be an integer in [1, "),
    ({"tool": "payments.create", "attempt": 1.0}, "context.attempt must be an integer"),
    ({"tool": "payments.create", "attempt": True}, "context.attempt must be an integer"),
    ({"tool": "payments.create", "attempt": 2 ** 64}, "context.attempt must be an integer"),
    ({"tool": "payments.create", "sideEffect": "maybe"}, "context.sideEffect must be \"none\""),
    ({"tool": 7}, "context.tool must be a string"),
    ({"tool": "x", "arguments": ["a", 1]}, "context.arguments must be a list of strings"),
    ({"tool": "x", "idempotent": "true"}, "context.idempotent must be true or false"),
    ({"tool": "x", "operationId": "\udc80"}, "context.operationId is not valid UTF-8"),
    ({"tool": "x" * 4097}, "context.tool is longer than 4096 bytes"),
])
def test_a_malformed_context_raises_with_its_diagnostic(bundle, context, message):
    with pytest.raises(recourse.ContextError) as e:
        bundle.decide({"code": "TRANSIENT"}, context)
    assert str(e.value).startswith(message)
    assert e.value.code == "C001"
    assert e.value.diagnostics[0].severity == "error"
    if json_writable(context):
        with pytest.raises(recourse.ContextError) as t:
            bundle.decide({"code": "TRANSIENT"}, json.dumps(context))
        assert str(t.value) == str(e.value)


def test_context_errors_come_in_the_fields_order_whatever_the_dicts_order(bundle):
    context = {"repairs": -1, "tool": 1, "attempt": 0}
    with pytest.raises(recourse.ContextError) as e:
        bundle.decide({}, context)
    assert [d.message.split(" ")[0] for d in e.value.diagnostics] == [
        "context.tool", "context.attempt", "context.repairs"]


def test_a_key_given_alone_is_pinned_unless_the_next_key_rotates(bundle):
    base = {"tool": "payments.create", "sideEffect": "unknown", "idempotencyKey": "k1"}
    for extra in ({}, {"nextAttemptIdempotencyKey": "k1"}, {"nextAttemptIdempotencyKey": "k2"},
                  {"idempotencyKeyPinned": False}):
        both(bundle, {"code": "TIMEOUT", "retryable": True}, {**base, **extra})


def test_enums_use_the_engines_spellings():
    assert [c.value for c in recourse.Code] == _recourse.BUILTIN_CODES
    assert [r.value for r in recourse.Route] == _recourse.ROUTES
    assert [k.value for k in recourse.KeyDirective] == _recourse.KEY_DIRECTIVES
    assert [s.value for s in recourse.Step] == _recourse.STEPS
    assert [e.value for e in recourse.Ending] == _recourse.ENDINGS
    assert [s.value for s in recourse.SideEffect] == _recourse.SIDE_EFFECTS
    assert [c.value for c in recourse.Circuit] == _recourse.CIRCUITS
    assert recourse.Route.RETRY == "retry"


def test_compile_errors_carry_positions():
    with pytest.raises(recourse.CompileError) as e:
        recourse.Bundle.from_sources({"bad.recourse": "version 1\npolicy \"x\" {\n  nonsense\n}\n"})
    d = e.value.diagnostics[0]
    assert d.file == "bad.recourse" and d.line == 3 and d.code.startswith("E")
    assert str(d).startswith("bad.recourse:3:")


def test_a_failed_reload_keeps_the_bundle_in_use(root):
    b = recourse.Bundle.from_paths(root / "rules" / "examples")
    generation = b.generation
    with pytest.raises(recourse.CompileError):
        b.reload_sources({"bad.recourse": "version 1\npolicy {"})
    assert b.generation == generation
    assert b.decide({"code": "RATE_LIMITED", "retryable": True}, CONTEXT).route is \
        recourse.Route.RETRY


def test_log_and_counters_see_every_decision(root):
    b = recourse.Bundle.from_paths(root / "rules" / "examples", count=True)
    records = []
    b.set_log(records.append)
    b.decide({"code": "RATE_LIMITED", "retryable": True}, CONTEXT)
    b.decide("garbage", CONTEXT)
    b.set_log(None)
    assert [r["route"] for r in records] == ["retry", "stop"]
    assert records[0]["input"]["context"]["tool"] == "payments.create"
    assert b.counters()["decisions"] == 2
    assert b.counters()["routes"] == {"retry": 1, "stop": 1}


def test_threads_decide_in_parallel_with_the_same_results(bundle):
    envelope = {"code": "TRANSIENT", "retryable": True, "traceId": "t"}
    expected = bundle.decide(envelope, CONTEXT)
    results, errors = [], []

    def work():
        try:
            for _ in range(500):
                results.append(bundle.decide(envelope, CONTEXT) == expected)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 2000 and all(results)


LIVE = """policy "p" {
  tool { idempotent = true }
  rule t when code == TRANSIENT -> retry
  rule a when code == PERMISSION -> authorize
  default -> stop
}"""
CANDIDATE = LIVE.replace("-> authorize", "-> escalate")


def test_a_shadow_candidate_decides_beside_the_live_policy_read_only():
    bundle = recourse.Bundle.from_sources({"p.recourse": LIVE})
    records = []
    bundle.set_log(records.append)
    bundle.load_candidate_sources({"p.recourse": CANDIDATE})
    with pytest.raises(recourse.CompileError):
        bundle.load_candidate_sources({"p.recourse": "policy \"p\" {"})
    context = {"tool": "p", "sideEffect": "none"}
    assert bundle.decide({"code": "PERMISSION"}, context).route is recourse.Route.AUTHORIZE
    assert bundle.decide({"code": "TRANSIENT"}, context).route is recourse.Route.RETRY
    assert records[0]["shadow"]["differences"] == ["route"]
    assert records[0]["shadow"]["result"]["route"] == "escalate"
    assert "shadow" not in records[1]
    assert bundle.shadow_counters() == {"decisions": 2, "disagreements": 1,
                                        "rules": {"p": {"a -> a": 1}},
                                        "differences": {"route": 1}}
    bundle.drop_candidate()
    bundle.decide({"code": "PERMISSION"}, context)
    assert "shadow" not in records[2]
    assert bundle.shadow_counters()["decisions"] == 2
