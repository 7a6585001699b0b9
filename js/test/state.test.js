// Workflow, Health and the ledger in an async store: the records a step needs read before it,
// its writes applied after (src/store.js), so runners in different processes (here: different
// Workflow and Health objects, as two processes have) share counts, retry tokens, breakers and
// the ledger, over the memory store and over Redis alike.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Health, MemoryStore, Runner, Workflow, compile, counterKey, runKey, storeOperations } from "../src/index.js";
import { createClient } from "redis";

import { RedisStore } from "../src/redis.js";
import { startRedis } from "./redis-server.js";
import { native } from "./support.js";

// One policy per test, so the tests' state never meets.
const retrying = (name, settings) => `policy "${name}" {
  tool { idempotent = true }
  limits { attempts = 3 }
  ${settings}
  backoff constant base 10ms jitter none
  rule transient when code == TRANSIENT -> retry
  default -> stop
}`;
const POLICY = `${retrying("svc.count", "")}
${retrying("svc.tokens", "throttle { max_tokens = 10  token_ratio = 0.5 }")}
${retrying("svc.fleet", "breaker { failures = 4  cooldown = 30s  scope = shared }")}
policy "svc.run" {
  tool { idempotent = true }
  limits { attempts = 3  run_calls = 2 }
  backoff constant base 10ms jitter none
  rule transient when code == TRANSIENT -> retry
  default -> stop
}
policy "pay.charge" {
  tool { idempotent = false  idempotency_keys = true }
  rule transient when code == TRANSIENT and side_effect == none -> retry
  default -> stop
}`;
const { bundle } = compile(POLICY);
const failure = { outcome: "failure", envelope: { code: "TRANSIENT", traceId: "t" }, sideEffect: "none" };

// One "process": its own Workflow and Health over the shared `store`.
function processOn(store) {
  return { workflow: new Workflow({ scope: "agents", store }), health: new Health({ store }) };
}

// Runs operation `operationId` of `tool` with `process`, every call answered by `answer`; the
// done action and the calls made.
async function operation(process, tool, operationId, answer, options = {}) {
  const runner = new Runner(bundle, { tool, operationId }, { ...process, ...options });
  let t = Date.now();
  let calls = 0;
  const done = await runner.run({ clock: () => t, sleep: async (ms) => (t += ms), call: async () => (++calls, answer(calls)) });
  return { done, calls, runner };
}

let server;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server?.stop();
});

const backends = {
  memory: async () => ({ store: new MemoryStore(), close: async () => {} }),
  // A client of the test's own (the form a host that has one passes), the database emptied.
  redis: async () => {
    const client = createClient({ socket: { path: server.socket } });
    await client.connect();
    await client.flushAll();
    const store = await RedisStore.open(client, { timeoutMs: 2000 });
    return { store, close: () => client.quit() };
  },
};

for (const [name, open] of Object.entries(backends)) {
  test(`${name}: an operation's attempts are counted across processes`, async () => {
    const { store, close } = await open();
    try {
      const id = `op-${name}-${Date.now()}`;
      // Process A's first call fails, and A goes no further (it stopped, crashed, moved on).
      const a = new Runner(bundle, { tool: "svc.count", operationId: id }, processOn(store));
      assert.equal((await a.nextAsync()).step, "call");
      await a.reportAsync(failure);
      const counted = await store.count({ operation: counterKey("agents", id, "svc.count"), event: { kind: "read" }, nowMs: Date.now() });
      assert.deepEqual([counted.attempts, counted.repeats], [1, 1]);
      // Process B takes the operation over: its first call is the operation's second attempt, so
      // the budget of 3 attempts leaves it two calls, not three.
      const b = await operation(processOn(store), "svc.count", id, () => failure);
      assert.equal(b.calls, 2);
      assert.deepEqual([b.done.ending, b.done.decision.exhausted, b.done.decision.attempt], ["decided", "attempts", 3]);
      assert.deepEqual(b.runner.conflicts, []);
    } finally {
      await close();
    }
  });

  test(`${name}: a run's calls are counted across its operations and processes`, async () => {
    const { store, close } = await open();
    try {
      // Process A's operation makes the run's two calls (run_calls = 2): its second failure ends it.
      const a = await operation(processOn(store), "svc.run", `run-a-${name}`, () => failure);
      assert.deepEqual([a.calls, a.done.decision.exhausted], [2, "run_calls"]);
      const all = await store.count({ operation: runKey("agents"), event: { kind: "read" }, nowMs: Date.now() });
      const tool = await store.count({ operation: runKey("agents", "svc.run"), event: { kind: "read" }, nowMs: Date.now() });
      assert.deepEqual([all.attempts, tool.attempts], [2, 2]);
      // Process B's new operation of the same run reads the run's count: one call, then the stop.
      const b = await operation(processOn(store), "svc.run", `run-b-${name}`, () => failure);
      assert.deepEqual([b.calls, b.done.decision.exhausted, b.done.decision.rule], [1, "run_calls", "budget:run_calls"]);
      assert.deepEqual(b.runner.conflicts, []);
    } finally {
      await close();
    }
  });

  test(`${name}: retry tokens and a shared breaker are one fleet's`, async () => {
    const { store, close } = await open();
    try {
      const tokens = async () => (await store.tool({ tool: "svc.tokens", nowMs: Date.now() })).milliTokens;
      assert.equal(await tokens(), -1); // full, never spent
      // Two processes, an operation each, two failures before a success: 4 failures take 4
      // tokens, 2 successes give 2 x 0.5 back.
      const answer = (n) => (n < 3 ? failure : { outcome: "success" });
      const [p, q] = [processOn(store), processOn(store)];
      assert.equal((await operation(p, "svc.tokens", "a", answer)).done.ending, "success");
      assert.equal(await tokens(), 8500);
      assert.equal((await operation(q, "svc.tokens", "b", answer)).done.ending, "success");
      assert.equal(await tokens(), 7000);
      // Four failures in a row across the two processes open the circuit for both (scope shared).
      await operation(p, "svc.fleet", "c", () => failure); // 3 failures (the budget): closed
      const h = await store.tool({ tool: "svc.fleet", nowMs: Date.now() });
      assert.deepEqual([h.circuit, h.consecutiveFailures], ["closed", 3]);
      const next = await operation(q, "svc.fleet", "d", () => failure);
      assert.equal(next.calls, 1); // the fourth failure opened it: q's retry is refused
      assert.equal((await store.tool({ tool: "svc.fleet", nowMs: Date.now() })).circuit, "open");
      const refused = await operation(p, "svc.fleet", "e", () => failure);
      assert.equal(refused.calls, 0); // p never calls: the fleet's circuit is open
      assert.equal(refused.done.decision.rule, "circuit:open");
    } finally {
      await close();
    }
  });

  test(`${name}: the ledger: a side effect committed by one process is not made again`, async () => {
    const { store, close } = await open();
    try {
      const id = `charge-${name}-${Date.now()}`;
      const first = await operation(processOn(store), "pay.charge", id, () => ({ outcome: "success" }), { ledger: store });
      assert.deepEqual([first.done.ending, first.calls], ["success", 1]);
      const entry = await store.read({ operation: id, nowMs: Date.now() });
      assert.equal(entry.state, "committed");
      assert.match(entry.idempotencyKey, /^[0-9a-f]{32}$/);
      const again = await operation(processOn(store), "pay.charge", id, () => ({ outcome: "success" }), { ledger: store });
      assert.deepEqual([again.done.ending, again.calls], ["committed", 0]);
    } finally {
      await close();
    }
  });
}

test("a claim another process committed between the read and the write ends the operation", async () => {
  const store = new MemoryStore();
  const id = "raced";
  // The read before the step finds no entry (as it was then); by the write the other process has
  // committed: the store's answer to the claim wins, and the call is not made.
  const stale = Object.create(store);
  stale.read = async ({ operation }) => ({ operation, state: "absent", idempotencyKey: "", updatedMs: 0, leaseUntilMs: 0, claimed: false });
  for (const name of storeOperations) if (name !== "read") stale[name] = store[name].bind(store);
  await store.claim({ operation: id, idempotencyKey: "theirs", leaseMs: 60000, nowMs: Date.now() });
  await store.transition({ operation: id, to: "committed", nowMs: Date.now() });
  const { done, calls, runner } = await operation(processOn(stale), "pay.charge", id, () => ({ outcome: "success" }), { ledger: stale });
  assert.deepEqual([done.ending, calls], ["committed", 0]);
  assert.deepEqual(runner.conflicts.map((c) => [c.op.op, c.staged.claimed, c.store.state]), [["claim", true, "committed"]]);
  assert.equal((await store.read({ operation: id, nowMs: Date.now() })).idempotencyKey, "theirs");
});

test("a store that cannot answer: the step decides as the C++ engine does while its store is down", async () => {
  const down = Object.fromEntries(storeOperations.map((n) => [n, async () => null]));
  const { done, calls, runner } = await operation(processOn(down), "svc.tokens", "down-1", () => failure);
  // The counters fall back to this process's, the retry tokens to the fallback bucket (none): no
  // retry while the store is down, and the decision says why. Nothing unread is written.
  assert.deepEqual([calls, done.decision.exhausted, done.decision.warnings.some((w) => w.kind === "store_unavailable")], [1, "retry_tokens", true]);
  assert.deepEqual(runner.conflicts, []);
});

test("the native command counts on the counters a JavaScript runner wrote to Redis, and the reverse", async () => {
  const client = createClient({ socket: { path: server.socket } });
  await client.connect();
  const dir = mkdtempSync(join(tmpdir(), "recourse-js-state-"));
  try {
    await client.flushAll();
    const store = await RedisStore.open(client, { timeoutMs: 2000 });
    const id = "op-native";
    const a = new Runner(bundle, { tool: "svc.count", operationId: id }, processOn(store));
    await a.nextAsync();
    await a.reportAsync(failure); // attempt 1 failed, counted under agents/op-native/svc.count
    writeFileSync(join(dir, "policy.recourse"), POLICY);
    writeFileSync(join(dir, "envelope.json"), JSON.stringify(failure.envelope));
    writeFileSync(join(dir, "context.json"), JSON.stringify({ tool: "svc.count", operationId: id, workflowId: "agents", sideEffect: "none" }));
    const d = JSON.parse(native(["decide", "--policy", join(dir, "policy.recourse"), "--state", server.url, "-e", join(dir, "envelope.json"), "-c", join(dir, "context.json")]));
    assert.deepEqual([d.route, d.attempt, d.attemptsLeft], ["retry", 2, 1]); // the second attempt
    const counted = await store.count({ operation: counterKey("agents", id, "svc.count"), event: { kind: "read" } });
    // The native call counted here: its attempt; and its failure, a new one (the runner's failure
    // was keyed by the hash of its arguments, which this context does not carry), so repeats
    // restart at 1.
    assert.deepEqual([counted.attempts, counted.repeats], [2, 1]);
  } finally {
    await client.quit();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a store operation that never settles, or answers what is not JSON, reads as unanswered", async () => {
  const store = new MemoryStore();
  const bad = {
    hangs: { tool: () => new Promise(() => {}), timeoutMs: 50 },
    bigint: { tool: async () => ({ circuit: "closed", milliTokens: 10n }) },
    cycle: { tool: async () => { const a = { circuit: "closed" }; a.self = a; return a; } },
  };
  for (const [name, override] of Object.entries(bad)) {
    const odd = { ...Object.fromEntries(storeOperations.map((n) => [n, store[n].bind(store)])), ...override };
    const { done, calls } = await operation(processOn(odd), "svc.tokens", `${name}-1`, () => failure);
    assert.deepEqual([name, calls, done.decision.exhausted, done.decision.warnings.some((w) => w.kind === "store_unavailable")], [name, 1, "retry_tokens", true]);
  }
  store.free();
});

test("a record that does not read as its shape reads as unanswered, as a C++ store's BADRECORD", async () => {
  const store = new MemoryStore();
  const odd = Object.fromEntries(storeOperations.map((n) => [n, store[n].bind(store)]));
  odd.tool = async () => ({ circuit: "ajar" });
  const { done, calls } = await operation(processOn(odd), "svc.tokens", "odd-1", () => failure);
  // The retry tokens are in the tool's record: unread, so the fallback bucket (none) answers.
  assert.deepEqual([calls, done.decision.exhausted, done.decision.warnings.some((w) => w.kind === "store_unavailable")], [1, "retry_tokens", true]);
  assert.throws(() => new Workflow({ store: {} }), /store: bucket\(\) is missing/);
  store.free();
});

test("a half-open probe another process took between the read and the write is not called", async () => {
  const store = new MemoryStore();
  const spec = { failures: 4, ratioMilli: 0, window: 20, minCalls: 10, cooldownMs: 30000, probeLeaseMs: 30000 };
  const now = Date.now();
  for (let i = 0; i < 4; ++i) await store.outcome({ tool: "svc.fleet", operation: `o-${i}`, failed: true, spec, nowMs: now - 60000 });
  // The read before the step sees the cooldown over and no probe out; by the write another
  // process holds the probe.
  const before = await store.tool({ tool: "svc.fleet", nowMs: now });
  assert.equal(await store.probe({ tool: "svc.fleet", operation: "theirs", spec, nowMs: now }), "half_open");
  const racing = Object.fromEntries(storeOperations.map((n) => [n, store[n].bind(store)]));
  let stale = true;
  racing.tool = async (args) => (stale ? ((stale = false), before) : store.tool(args));
  const { done, calls, runner } = await operation(processOn(racing), "svc.fleet", "mine", () => ({ outcome: "success" }));
  assert.equal(calls, 0);
  assert.deepEqual(runner.conflicts.map((c) => [c.op.op, c.staged, c.store]), [["probe", "half_open", "open"]]);
  assert.deepEqual([done.ending, done.decision.rule], ["decided", "circuit:open"]);
  const h = await store.tool({ tool: "svc.fleet", nowMs: Date.now() });
  assert.deepEqual([h.circuit, h.probeOperation], ["open", "theirs"]); // their probe is still theirs
  store.free();
});
