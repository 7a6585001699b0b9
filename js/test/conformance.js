// The store conformance suite of tests/store_test.cpp, for the package's async stores: the same
// cases with the same values, over MemoryStore and RedisStore. Each part uses its own keys; the
// parts wait on the stores' clocks (the Redis store reads its server's).
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";

let serial = 0;
// A key no other part (or earlier run against a persistent store) uses.
const key = (what) => `${what}-${process.pid}-${Date.now()}-${++serial}`;
const now = () => Date.now();

async function tokens(s) {
  const tool = key("tokens");
  const spec = { maxMilli: 10000, ratioMilli: 500 };
  const bucket = (event, sp = spec) => s.bucket({ tool, event, spec: sp, nowMs: now() });
  assert.equal(await bucket("read"), 10000);
  assert.equal(await bucket("success"), 10000); // full stays full
  for (let i = 0; i < 4; ++i) await bucket("retry");
  assert.equal(await bucket("read"), 6000);
  assert.equal(await bucket("retry"), 5000); // now throttled: <= max/2
  assert.equal(await bucket("success"), 5500);
  assert.equal((await s.tool({ tool, nowMs: now() })).milliTokens, 5500);
  for (let i = 0; i < 20; ++i) await bucket("success");
  assert.equal(await bucket("read"), 10000); // capped at max
  for (let i = 0; i < 12; ++i) await bucket("retry");
  assert.equal(await bucket("read"), 0); // never below 0
  assert.equal(await bucket("success", { maxMilli: 10000, ratioMilli: 100 }), 100); // 0.1 token, exact
}

const breakerSpec = (failures, ratioMilli, window, minCalls, cooldownMs, probeLeaseMs) => ({ failures, ratioMilli, window, minCalls, cooldownMs, probeLeaseMs });

async function breaker(s) {
  const tool = key("breaker");
  const spec = breakerSpec(3, 0, 20, 10, 500, 500);
  const fail = (operation) => s.outcome({ tool, operation, failed: true, spec, nowMs: now() });
  const probe = (operation) => s.probe({ tool, operation, spec, nowMs: now() });
  assert.equal(await probe("op-0"), "closed");
  assert.equal(await fail("op-1"), "closed");
  assert.equal(await fail("op-2"), "closed");
  assert.equal(await fail("op-3"), "open"); // the third consecutive failure opens it
  assert.equal((await s.tool({ tool, nowMs: now() })).consecutiveFailures, 3);
  assert.equal(await probe("op-4"), "open");
  await sleep(600);
  assert.equal(await fail("op-1"), "open"); // in flight while open: no new cooldown
  assert.equal(await probe("op-5"), "half_open"); // the cooldown is over: op-5 probes
  assert.equal(await probe("op-6"), "open"); // the probe is out; others wait
  assert.equal(await probe("op-5"), "half_open"); // the holder may ask again
  assert.equal(await fail("op-6"), "open"); // not the probe: changes nothing
  assert.equal(await fail("op-5"), "open"); // the probe failed: another cooldown
  assert.equal(await probe("op-7"), "open");
  await sleep(600);
  assert.equal(await probe("op-7"), "half_open");
  await sleep(600); // op-7's lease ran out without an outcome: another caller may probe
  assert.equal(await probe("op-8"), "half_open");
  assert.equal(await s.outcome({ tool, operation: "op-8", failed: false, spec, nowMs: now() }), "closed");
  assert.equal(await probe("op-7"), "closed");
  assert.equal(await fail("op-9"), "closed"); // the consecutive count restarted

  const ratio = key("ratio");
  const byRatio = breakerSpec(100, 500, 4, 4, 300, 300);
  const outcome = (failed) => s.outcome({ tool: ratio, operation: "op", failed, spec: byRatio, nowMs: now() });
  await outcome(false);
  await outcome(true);
  assert.equal(await outcome(false), "closed"); // 3 calls: below minCalls
  assert.equal(await outcome(true), "open"); // 2 of 4 failed
  assert.equal((await s.tool({ tool: ratio, nowMs: now() })).window, "1010"); // newest first: 0b0101
}

async function probeLease(s) {
  const tool = key("lease");
  const spec = breakerSpec(1, 0, 20, 10, 300, 150);
  const probe = (operation) => s.probe({ tool, operation, spec, nowMs: now() });
  assert.equal(await s.outcome({ tool, operation: "op-1", failed: true, spec, nowMs: now() }), "open");
  await sleep(350);
  assert.equal(await probe("op-2"), "half_open");
  assert.equal(await probe("op-3"), "open"); // within op-2's lease
  const until = (await s.tool({ tool, nowMs: now() })).probeUntilMs;
  await sleep(200); // op-2 never reported back: its lease (150 ms) ran out
  assert.equal(await probe("op-3"), "half_open");
  const h = await s.tool({ tool, nowMs: now() });
  assert.equal(h.probeOperation, "op-3");
  assert.ok(h.probeUntilMs >= until + 150);
  // A late failure of the lost probe changes nothing: op-3 still holds the probe.
  assert.equal(await s.outcome({ tool, operation: "op-2", failed: true, spec, nowMs: now() }), "open");
  assert.equal(await probe("op-3"), "half_open");
  assert.equal(await probe("op-4"), "open");
  assert.equal(await s.outcome({ tool, operation: "op-3", failed: true, spec, nowMs: now() }), "open"); // reopened
  assert.equal(await probe("op-4"), "open"); // a new cooldown from op-3's failure
}

async function hold(s) {
  const tool = key("hold");
  const spec = breakerSpec(5, 0, 20, 10, 100, 100);
  const probe = (operation) => s.probe({ tool, operation, spec, nowMs: now() });
  assert.equal(await probe("op-1"), "closed");
  const before = now();
  assert.equal(await s.hold({ tool, waitMs: 500, nowMs: now() }), "open"); // a closed circuit opens
  const held = await s.tool({ tool, nowMs: now() });
  assert.equal(held.circuit, "open");
  assert.equal(held.consecutiveFailures, 0); // a wait, not a failure
  assert.ok(held.holdUntilMs >= before + 500);
  assert.equal(await s.hold({ tool, waitMs: 50, nowMs: now() }), "open"); // ends earlier: changes nothing
  assert.equal((await s.tool({ tool, nowMs: now() })).holdUntilMs, held.holdUntilMs);
  await sleep(250); // past the cooldown (100 ms), within the hold
  assert.equal(await probe("op-1"), "open");
  await sleep(350);
  assert.equal(await probe("op-1"), "half_open"); // the hold is over: op-1 probes
  assert.equal(await s.outcome({ tool, operation: "op-1", failed: false, spec, nowMs: now() }), "closed");
  assert.equal((await s.tool({ tool, nowMs: now() })).holdUntilMs, 0); // a success clears it
  // A wait of any size holds, bounded by 10^15 ms.
  const beforeHint = now();
  assert.equal(await s.hold({ tool, waitMs: Number.MAX_SAFE_INTEGER, nowMs: beforeHint }), "open");
  const end = (await s.tool({ tool, nowMs: now() })).holdUntilMs;
  assert.ok(end >= beforeHint - 1000 + 1e15 && end <= now() + 1000 + 1e15);
}

async function control(s) {
  const tool = key("control");
  const spec = breakerSpec(2, 0, 20, 10, 100, 100);
  const probe = (operation) => s.probe({ tool, operation, spec, nowMs: now() });
  const outcome = (operation, failed) => s.outcome({ tool, operation, failed, spec, nowMs: now() });
  const command = (name, waitMs = 0) => s.control({ tool, command: name, waitMs, nowMs: now() });
  await s.bucket({ tool, event: "retry", spec: { maxMilli: 10000, ratioMilli: 100 }, nowMs: now() }); // 9000
  const isolated = await command("isolate");
  assert.equal(isolated.circuit, "open");
  assert.equal(isolated.isolated, true);
  assert.equal(await outcome("op-1", false), "open"); // a success does not close it
  assert.equal(await outcome("op-1", true), "open");
  await sleep(150); // past the cooldown: still no probe
  assert.equal(await probe("op-2"), "open");
  assert.equal((await s.tool({ tool, nowMs: now() })).isolated, true);
  assert.equal((await s.tool({ tool, nowMs: now() })).probeOperation, "");
  const reset = await command("reset");
  assert.deepEqual(
    { circuit: reset.circuit, isolated: reset.isolated, consecutiveFailures: reset.consecutiveFailures, windowCalls: reset.windowCalls, milliTokens: reset.milliTokens },
    { circuit: "closed", isolated: false, consecutiveFailures: 0, windowCalls: 0, milliTokens: 9000 }, // the tokens are kept
  );
  assert.equal(await probe("op-2"), "closed");
  assert.equal(await outcome("op-3", true), "closed"); // counting again from 0: one of two
  // Open: as if tripped now, held for the wait given, then probed as usual.
  const before = now();
  const opened = await command("open", 400);
  assert.equal(opened.circuit, "open");
  assert.equal(opened.isolated, false);
  assert.ok(opened.holdUntilMs >= before + 400 && opened.holdUntilMs <= now() + 400);
  await sleep(150); // past the cooldown (100 ms), within the hold
  assert.equal(await probe("op-4"), "open");
  await sleep(300);
  assert.equal(await probe("op-4"), "half_open");
  assert.equal(await outcome("op-4", false), "closed");
  // Isolating a closed circuit, then opening it by hand, lifts the isolation.
  await command("isolate");
  assert.equal((await command("open")).isolated, false);
  await sleep(150);
  assert.equal(await probe("op-5"), "half_open");
  // A tool never recorded: a reset leaves it closed.
  assert.equal((await s.control({ tool: key("never"), command: "reset", nowMs: now() })).circuit, "closed");
}

async function oneProbe(backend, s) {
  const tool = key("probe");
  const spec = breakerSpec(1, 0, 20, 10, 1000, 1000);
  assert.equal(await s.outcome({ tool, operation: "opener", failed: true, spec, nowMs: now() }), "open");
  const clients = await Promise.all(Array.from({ length: 8 }, () => backend.open({})));
  await sleep(1100); // past the cooldown
  const results = await Promise.all(clients.map((c, i) => c.probe({ tool, operation: `worker-${i}`, spec, nowMs: now() })));
  await Promise.all(clients.map((c) => backend.close(c)));
  assert.equal(results.filter((r) => r === "half_open").length, 1);
  assert.equal(results.filter((r) => r === "open").length, 7);
}

async function noLostUpdate(backend, s) {
  const tool = key("contended");
  const spec = { maxMilli: 1000000, ratioMilli: 100 };
  const clients = await Promise.all(Array.from({ length: 4 }, () => backend.open({})));
  await Promise.all(
    clients.map(async (c) => {
      for (let i = 0; i < 100; ++i) {
        assert.notEqual(await c.bucket({ tool, event: "retry", spec, nowMs: now() }), null);
        assert.notEqual(await c.count({ operation: tool, event: { kind: "attempt", cost: 1 }, nowMs: now() }), null);
      }
    }),
  );
  await Promise.all(clients.map((c) => backend.close(c)));
  assert.equal(await s.bucket({ tool, event: "read", spec, nowMs: now() }), 1000000 - 400 * 1000);
  assert.equal((await s.count({ operation: tool, event: { kind: "read" }, nowMs: now() })).attempts, 400);
}

async function votes(s) {
  const tool = key("votes");
  const vote = (worker, open) => s.vote({ tool, worker, open, voteMs: 60000, nowMs: now() });
  assert.equal(await vote("worker-a", true), 1);
  assert.equal(await vote("worker-b", true), 2);
  assert.equal(await vote("worker-b", true), 2); // one vote per worker
  assert.equal(await vote("worker-c", false), 2);
  assert.equal(await vote("worker-a", false), 1); // withdrawn
}

async function counts(s) {
  const operation = key("count");
  const count = (event, nowMs = now()) => s.count({ operation, event, nowMs });
  assert.equal((await count({ kind: "read" })).attempts, 0);
  const first = now();
  await count({ kind: "attempt", cost: 2 }, first);
  await count({ kind: "failure", failure: "7" });
  await count({ kind: "decision", repair: true });
  await count({ kind: "attempt", cost: 2 });
  const c = await count({ kind: "failure", failure: "7" });
  assert.deepEqual({ attempts: c.attempts, repairs: c.repairs, repeats: c.repeats, cost: c.cost }, { attempts: 2, repairs: 1, repeats: 2, cost: 4 });
  assert.ok(c.startedMs >= first - 1000 && c.startedMs <= now() + 1000);
  assert.equal(c.lastFailure, "7");
  assert.equal((await count({ kind: "failure", failure: "18446744073709551615" })).repeats, 1); // another failure, 2^64 - 1
  assert.equal((await count({ kind: "read" })).lastFailure, "18446744073709551615");
  assert.equal((await count({ kind: "success" })).attempts, 0);
  assert.equal((await count({ kind: "read" })).attempts, 0);
}

async function pushback(s) {
  const operation = key("pushback");
  const count = (event) => s.count({ operation, event, nowMs: now() });
  // A decision before any attempt records nothing, as repairPending does not.
  assert.equal((await count({ kind: "decision", pushback: 1 })).pushbackAttempt, 0);
  await count({ kind: "attempt" });
  assert.equal((await count({ kind: "decision", pushback: 1 })).pushbackAttempt, 1);
  await count({ kind: "attempt" });
  // A decision without a pushback keeps it; a later pushback replaces it.
  assert.equal((await count({ kind: "decision", repair: true })).pushbackAttempt, 1);
  await count({ kind: "attempt" });
  await count({ kind: "failure", failure: "3" });
  assert.equal((await count({ kind: "decision", pushback: 3 })).pushbackAttempt, 3);
  const c = await count({ kind: "read" });
  assert.deepEqual([c.attempts, c.repairs, c.pushbackAttempt], [3, 1, 3]);
  assert.equal((await count({ kind: "success" })).pushbackAttempt, 0); // dropped with the counters
  assert.equal((await count({ kind: "read" })).pushbackAttempt, 0);
}

async function ledger(s) {
  const op = key("ledger");
  const claim = (operation, idempotencyKey, leaseMs = 60000) => s.claim({ operation, idempotencyKey, leaseMs, nowMs: now() });
  const transition = (operation, to) => s.transition({ operation, to, nowMs: now() });
  assert.equal((await s.read({ operation: op, nowMs: now() })).state, "absent");
  let e = await claim(op, "key-1");
  assert.deepEqual([e.claimed, e.state, e.idempotencyKey, e.operation], [true, "pending", "key-1", op]);
  e = await claim(op, "key-2"); // a second worker: the claim is taken
  assert.deepEqual([e.claimed, e.state, e.idempotencyKey], [false, "pending", "key-1"]);
  assert.equal((await transition(op, "committed")).state, "committed");
  assert.equal((await transition(op, "released")).state, "committed");
  e = await claim(op, "key-3");
  assert.deepEqual([e.claimed, e.state], [false, "committed"]);

  const released = key("released");
  await claim(released, "key-a");
  assert.equal((await transition(released, "released")).state, "released");
  e = await claim(released, "key-b"); // nothing happened: claim again
  assert.deepEqual([e.claimed, e.idempotencyKey], [true, "key-a"]); // pinned to the operation

  const lost = key("lost");
  assert.equal((await claim(lost, "key-x", 200)).claimed, true);
  await sleep(300); // the worker died holding the claim: the outcome is unknown
  assert.equal((await s.read({ operation: lost, nowMs: now() })).state, "unknown");
  e = await claim(lost, "key-y");
  assert.deepEqual([e.claimed, e.state], [false, "unknown"]);
  assert.equal((await transition(lost, "committed")).state, "committed");
  assert.equal((await s.read({ operation: lost, nowMs: now() })).idempotencyKey, "key-x");

  const all = await s.entries({ limit: 100000, nowMs: now() });
  assert.equal(all.filter((x) => [op, released, lost].includes(x.operation)).length, 3);
}

async function ttl(backend) {
  const s = await backend.open({ stateTtlMs: 500, ledgerTtlMs: 500 });
  const op = key("ttl");
  const spec = { maxMilli: 10000, ratioMilli: 100 };
  await s.count({ operation: op, event: { kind: "attempt", cost: 1 }, nowMs: now() });
  await s.bucket({ tool: op, event: "retry", spec, nowMs: now() });
  await s.claim({ operation: op, idempotencyKey: "k", leaseMs: 60000, nowMs: now() });
  assert.equal(await s.vote({ tool: op, worker: "worker-a", open: true, voteMs: 500, nowMs: now() }), 1);
  assert.equal(await s.vote({ tool: op, worker: "worker-b", open: true, voteMs: 60000, nowMs: now() }), 2);
  assert.equal((await s.count({ operation: op, event: { kind: "read" }, nowMs: now() })).attempts, 1);
  assert.equal(await s.bucket({ tool: op, event: "read", spec, nowMs: now() }), 9000);
  assert.equal((await s.read({ operation: op, nowMs: now() })).state, "pending");
  await sleep(700);
  assert.equal((await s.count({ operation: op, event: { kind: "read" }, nowMs: now() })).attempts, 0);
  assert.equal(await s.bucket({ tool: op, event: "read", spec, nowMs: now() }), 10000);
  assert.equal((await s.read({ operation: op, nowMs: now() })).state, "absent");
  assert.equal(await s.vote({ tool: op, worker: "worker-c", open: false, voteMs: 500, nowMs: now() }), 0); // a's ran out, b's too (TTL)
  await backend.close(s);
}

/**
 * Runs every part against `backend` ({open(options) -> Promise<store>, close(store)}), one after
 * the other as the C++ suite does (their waits are a few hundred ms on real clocks), on one store
 * opened with the default options.
 */
export async function conformance(backend) {
  const s = await backend.open({});
  try {
    for (const part of [tokens, breaker, probeLease, hold, control, votes, counts, pushback, ledger]) await part(s);
    await oneProbe(backend, s);
    await noLostUpdate(backend, s);
    await ttl(backend);
  } finally {
    await backend.close(s);
  }
}
