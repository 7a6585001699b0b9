"""The runner, sync and async, against an HTTP server on 127.0.0.1 (http.server in a thread):
429 with Retry-After, 503, a client timeout, a write whose response is lost, a repair, the
decorator and cancellation."""

import asyncio
import json
import threading
import urllib.error

import pytest

import recourse
from policies import ORDERS, SEARCH, WRITE
from server import Server, post


@pytest.fixture
def bundle():
    return recourse.Bundle.from_sources({"orders.recourse": ORDERS, "write.recourse": WRITE,
                                         "search.recourse": SEARCH})


def rejected(failure):
    """This test API's contract: an error status applied nothing; a lost response is unknown."""
    return "none" if isinstance(failure, urllib.error.HTTPError) else None


def caller(url):
    """A call that POSTs the action's arguments with its idempotency key."""
    def call(action):
        return post(url + "/" + action.tool, action.arguments, action.idempotency_key,
                    action.timeout_ms)
    return call


def test_429_with_retry_after_then_success(bundle):
    with Server([(429, {"Retry-After": "1"}, {"error": "slow down"}),
                 (200, {}, {"id": "o-1"})]) as server:
        waits = []
        result = recourse.run(bundle, "orders.create", caller(server.url),
                              {"amount": 5, "currency": "EUR"}, operation_id="op-429",
                              side_effect=rejected, sleep=waits.append, clock=fake_clock(waits))
    assert result.ok and result.value == {"id": "o-1"}
    assert result.ending is recourse.Ending.SUCCESS
    assert waits == [1.0]  # the server's Retry-After, 1 s
    keys = [r[1].get("Idempotency-Key") for r in server.script.requests]
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0]  # a retry resends the same key


def fake_clock(waits, start=1_700_000_000_000):
    """A clock that advances by the waits a test's sleep recorded."""
    return lambda: start + int(sum(waits) * 1000)


def test_503_is_retried_until_the_budget_ends(bundle):
    with Server([(503, {}, {"error": "down"})] * 10) as server:
        waits = []
        result = recourse.run(bundle, "orders.create", caller(server.url), {"amount": 1},
                              side_effect=rejected, sleep=waits.append, clock=fake_clock(waits))
    assert not result.ok
    assert result.ending is recourse.Ending.DECIDED
    assert result.decision.route is recourse.Route.STOP
    assert result.decision.exhausted == "attempts"
    assert len(server.script.requests) == 4  # limits.attempts
    assert isinstance(result.error, urllib.error.HTTPError)


def test_a_timeout_of_a_keyed_write_is_resent_under_its_key(bundle):
    with Server([("apply-then-hang", 0.5), (200, {}, {"id": "o-2"})]) as server:
        def call(action):
            return post(server.url, action.arguments, action.idempotency_key, timeout_ms=100)
        waits = []
        result = recourse.run(bundle, "orders.create", call, {"amount": 2},
                              side_effect=rejected, sleep=waits.append, clock=fake_clock(waits))
    assert result.ok
    keys = [r[1].get("Idempotency-Key") for r in server.script.requests]
    assert keys[0] == keys[1]


def test_a_lost_write_without_keys_is_not_resent(bundle):
    with Server([("apply-then-hang", 0.5), (200, {}, {})]) as server:
        def call(action):
            return post(server.url, action.arguments, timeout_ms=100)
        result = recourse.run(bundle, "orders.write", call, {"row": 1}, sleep=lambda s: None)
    assert not result.ok
    # The outcome is unknown: no blind resend, a person decides (abandoned: no ask given).
    assert result.decision.route is recourse.Route.ESCALATE
    assert result.decision.rule == "gate:unknown_outcome"
    assert len(server.script.requests) == 1
    assert len(server.script.applied) == 1


def test_a_validation_error_is_repaired_through_ask(bundle):
    problem = {"type": "about:blank", "title": "Invalid", "detail": "currency is not supported",
               "errors": [{"pointer": "#/currency", "detail": "use EUR"}]}
    with Server([(422, {}, problem), (200, {}, {"id": "o-3"})]) as server:
        asked = []

        def ask(action):
            asked.append(action)
            return {**action.arguments, "currency": "EUR"}
        result = recourse.run(bundle, "orders.create", caller(server.url),
                              {"amount": 3, "currency": "XXX"}, ask=ask, sleep=lambda s: None,
                              side_effect=rejected)
    assert result.ok
    assert asked[0].step is recourse.Step.REPAIR and asked[0].envelope["field"] == "currency"
    bodies = [json.loads(r[2]) for r in server.script.requests]
    assert bodies[1]["currency"] == "EUR"
    keys = [r[1].get("Idempotency-Key") for r in server.script.requests]
    assert keys[0] != keys[1]  # a changed body takes a new key


def test_the_async_runner(bundle):
    async def main(url):
        async def call(action):
            return await asyncio.to_thread(post, url, action.arguments, action.idempotency_key)
        return await recourse.run_async(bundle, "orders.create", call, {"amount": 4},
                                        side_effect=rejected)
    with Server([(503, {}, {}), (429, {"Retry-After": "0"}, {}), (200, {}, {"ok": 1})]) as s:
        result = asyncio.run(main(s.url))
    assert result.ok and result.value == {"ok": 1}
    assert len(s.script.requests) == 3


def test_cancelling_the_async_task_cancels_the_operation(bundle):
    async def main(url):
        async def call(action):
            return await asyncio.to_thread(post, url, action.arguments)
        task = asyncio.create_task(recourse.run_async(
            bundle, "orders.create", call, {"amount": 4}, side_effect=rejected))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    with Server([(429, {"Retry-After": "20"}, {})]) as s:
        asyncio.run(main(s.url))


def test_cancel_ends_a_wait_of_the_blocking_runner(bundle):
    with Server([(429, {"Retry-After": "20"}, {})]) as server:
        runner = recourse.Runner(bundle, "orders.create", {"amount": 1})
        timer = threading.Timer(0.2, runner.cancel)
        timer.start()
        result = recourse.run(bundle, "orders.create", caller(server.url), runner=runner,
                              side_effect=rejected)
    assert result.ending is recourse.Ending.CANCELLED


def test_guard_sync_and_async(bundle):
    with Server([(503, {}, {}), (200, {}, {"temp": 21})] * 2) as server:
        @recourse.guard("search.query", bundle=bundle, sleep=lambda s: None)
        def search(q):
            return post(server.url, {"q": q})

        @recourse.guard("search.query", bundle=bundle)
        async def search_async(q):
            return await asyncio.to_thread(post, server.url, {"q": q})

        assert search("weather") == {"temp": 21}
        assert asyncio.run(search_async("weather")) == {"temp": 21}
        assert json.loads(server.script.requests[0][2]) == {"q": "weather"}


def test_guard_raises_operation_failed_from_the_last_error(bundle):
    @recourse.guard("orders.write", bundle=bundle)
    def write():
        raise ValueError("bad row")
    with pytest.raises(recourse.OperationFailed) as e:
        write()
    assert isinstance(e.value.__cause__, ValueError)
    assert e.value.result.decision.route is recourse.Route.STOP


def test_the_step_machine_reports_out_of_order(bundle):
    runner = recourse.Runner(bundle, "orders.create", {"amount": 1}, operation_id="op-x")
    with pytest.raises(recourse.RunnerError) as e:
        runner.succeed()
    assert e.value.code == "R003"
    action = runner.next()
    assert action.step is recourse.Step.CALL and action.attempt == 1
    assert action.arguments == {"amount": 1} and action.idempotency_key
    runner.fail({"code": "RATE_LIMITED", "retryable": True, "retryAfterMs": 50},
                side_effect="none")
    wait = runner.next()
    assert wait.step is recourse.Step.WAIT and 0 < wait.wait_ms <= 50
    assert wait.decision.route is recourse.Route.RETRY


def test_a_runner_spec_without_tool_is_r002(bundle):
    with pytest.raises(recourse.RunnerError) as e:
        recourse.Runner(bundle, "", {})
    assert e.value.code == "R002"


def test_the_async_runner_on_a_sqlite_store_steps_off_the_loop(bundle, tmp_path):
    store = recourse.Store(f"sqlite:{tmp_path / 'state.db'}")

    async def main(url):
        async def call(action):
            return await asyncio.to_thread(post, url, action.arguments, action.idempotency_key)
        return await recourse.run_async(bundle, "orders.create", call, {"amount": 6},
                                        store=store, side_effect=rejected)
    with Server([(503, {}, {}), (200, {}, {"id": "o-6"})]) as s:
        result = asyncio.run(main(s.url))
    assert result.ok and result.value == {"id": "o-6"}
    assert len(s.script.requests) == 2
    assert recourse.Health(store).circuit("orders.create") is recourse.Circuit.CLOSED
