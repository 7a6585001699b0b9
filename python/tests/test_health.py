"""Runners in threads sharing one Health over SQLite and over a Redis the test starts: the
shared breaker opens on a failing tool, and every operation ends on the fallback."""

import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

import recourse
from policies import SEARCH


@pytest.fixture
def redis_spec(tmp_path):
    """A redis-server of this test's own on a unix socket, killed by its pid afterwards."""
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed (scripts/deps.sh installs it)")
    sock = tmp_path / "redis.sock"
    server = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--dir", str(tmp_path), "--save", "", "--appendonly", "yes", "--appendfsync", "always"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        spec = f"redis+unix://{sock}"
        for _ in range(500):  # until it answers
            try:
                recourse.Store(spec, timeout_ms=1000)
                break
            except recourse.StoreError:
                time.sleep(0.01)
        yield spec
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait()


def run_threads(spec, threads=8):
    bundle = recourse.Bundle.from_sources({"search.recourse": SEARCH})
    store = recourse.Store(spec, timeout_ms=2000)  # a loaded CI machine answers late
    health = recourse.Health(store)
    calls = {"search.query": 0, "search.cache": 0}
    lock = threading.Lock()
    results = [None] * threads

    def call(action):
        with lock:
            calls[action.tool] += 1
        if action.tool == "search.query":
            raise ConnectionResetError(104, "reset")  # the primary is down
        return {"cached": True}

    def work(i):
        results[i] = recourse.run(bundle, "search.query", call, {"q": i},
                                  operation_id=f"op-{i}", store=store, health=health,
                                  sleep=lambda s: None)
    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return results, calls, health


@pytest.mark.parametrize("backend", ["memory", "sqlite", "redis"])
def test_a_shared_breaker_opens_and_every_operation_ends_on_the_fallback(
        backend, tmp_path, request):
    spec = {"memory": "memory", "sqlite": f"sqlite:{tmp_path / 'state.db'}"}.get(backend)
    if backend == "redis":
        spec = request.getfixturevalue("redis_spec")
    results, calls, health = run_threads(spec)
    assert all(r.ok and r.value == {"cached": True} for r in results)
    assert all(r.action.tool == "search.cache" for r in results)
    assert health.circuit("search.query") is recourse.Circuit.OPEN
    assert calls["search.cache"] == 8
    # Once open, the shared breaker sends the others to the fallback: far fewer primary calls
    # than 8 operations of 5 attempts each.
    assert calls["search.query"] < 8 * 5


def test_a_store_that_cannot_be_opened_raises_store_error(tmp_path):
    with pytest.raises(recourse.StoreError) as e:
        recourse.Store("nosuch:thing")
    assert e.value.code == "S001"
    with pytest.raises(recourse.StoreError) as e:
        recourse.Store(f"redis+unix://{tmp_path}/absent.sock")
    assert e.value.code == "S002"


def test_workflow_and_health_state_as_dicts():
    store = recourse.Store()
    workflow, health = recourse.Workflow(store), recourse.Health(store)
    assert workflow.to_dict()["version"] == 2
    assert health.to_dict()["tools"] == {}
    assert health.circuit("never.called") is recourse.Circuit.CLOSED
