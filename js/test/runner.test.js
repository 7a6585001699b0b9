// The runner from JavaScript: the step machine, run() with node:test's fake timers (the waits
// are the policy's backoff, and an AbortSignal ends one at once), and Workflow and Health.
import assert from "node:assert/strict";
import { mock, test } from "node:test";

import { Health, RecourseError, Runner, Status, Workflow, compile } from "../src/index.js";

const policy = `version 1
policy "api.get" {
  tool { idempotent = true }
  limits { attempts = 3 }
  backoff exponential base 1s factor 2 max 10s jitter none
  rule transient when code == TRANSIENT -> retry
  default -> stop
}`;

const transient = { outcome: "failure", envelope: { code: "TRANSIENT", retryable: true }, sideEffect: "none" };

test("the step machine: call, wait, call, done", () => {
  const { bundle } = compile(policy);
  const runner = new Runner(bundle, { tool: "api.get", operationId: "op-1", arguments: { id: 7 } });
  const t0 = 1_700_000_000_000;
  let a = runner.next(t0);
  assert.equal(a.step, "call");
  assert.deepEqual(a.arguments, { id: 7 });
  assert.equal(a.attempt, 1);
  runner.report(transient, t0 + 10);
  a = runner.next(t0 + 10);
  assert.equal(a.step, "wait");
  assert.equal(a.waitMs, 1000);
  assert.equal(a.decision.rule, "transient");
  a = runner.next(t0 + 1010);
  assert.equal(a.step, "call");
  assert.equal(a.attempt, 2);
  runner.report({ outcome: "success" }, t0 + 1020);
  a = runner.next(t0 + 1020);
  assert.deepEqual([a.step, a.ending], ["done", "success"]);
  // A report that answers nothing is refused and changes nothing.
  assert.throws(() => runner.report({ outcome: "success" }, t0 + 1030), (e) => e instanceof RecourseError && e.status === Status.BAD_INPUT);
  assert.throws(() => new Runner(bundle, { tool: "api.get" }), (e) => e.status === Status.BAD_INPUT);
});

test("run() waits the backoff on timers and spends the attempts", async () => {
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_700_000_000_000 });
  try {
    const { bundle } = compile(policy);
    const workflow = new Workflow();
    const runner = new Runner(bundle, { tool: "api.get", operationId: "op-2" }, { workflow, health: new Health() });
    const calls = [];
    const done = runner.run({ call: async (a) => (calls.push([a.attempt, Date.now()]), transient) });
    // Each wait is a pending timer: nothing more happens until the fake clock moves.
    for (const ms of [1000, 2000]) {
      await new Promise((r) => setImmediate(r));
      assert.equal(calls.length, ms === 1000 ? 1 : 2);
      mock.timers.tick(ms);
    }
    const end = await done;
    assert.deepEqual([end.step, end.ending, end.decision.rule], ["done", "decided", "budget:attempts"]);
    assert.deepEqual(calls, [
      [1, 1_700_000_000_000],
      [2, 1_700_000_001_000],
      [3, 1_700_000_003_000],
    ]);
    assert.ok(JSON.stringify(workflow.toJSON()).includes("op-2"));
  } finally {
    mock.timers.reset();
  }
});

test("an AbortSignal ends a wait at once and cancels the operation", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { bundle } = compile(policy);
    const runner = new Runner(bundle, { tool: "api.get", operationId: "op-3" });
    const controller = new AbortController();
    let calls = 0;
    const done = runner.run({ call: async () => (++calls, transient), signal: controller.signal });
    await new Promise((r) => setImmediate(r));
    assert.equal(calls, 1);
    controller.abort();
    const end = await done;
    assert.deepEqual([end.step, end.ending, calls], ["done", "cancelled", 1]);
  } finally {
    mock.timers.reset();
  }
});

test("run() passes its signal to the call, whose abort ends the operation", async () => {
  const { bundle } = compile(policy);
  const runner = new Runner(bundle, { tool: "api.get", operationId: "op-5" });
  const controller = new AbortController();
  let seen;
  const done = runner.run({
    signal: controller.signal,
    call: (action, signal) =>
      new Promise((_, reject) => {
        seen = signal;
        signal.addEventListener("abort", () => reject(signal.reason));
      }),
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(seen, controller.signal);
  controller.abort();
  const end = await done;
  assert.deepEqual([end.step, end.ending], ["done", "cancelled"]);
});

test("a rejected call is a failure read as a transport error", async () => {
  const { bundle } = compile(`version 1
policy "api.get" {
  tool { idempotent = true }
  limits { attempts = 2 }
  backoff exponential base 1ms max 1ms jitter none
  rule timeout when code == TIMEOUT -> retry
  default -> stop
}`);
  const runner = new Runner(bundle, { tool: "api.get", operationId: "op-4" });
  let calls = 0;
  const end = await runner.run({
    call: async () => {
      if (++calls === 1) throw Object.assign(new Error("The operation was aborted due to timeout"), { name: "TimeoutError" });
      return { outcome: "success" };
    },
  });
  assert.deepEqual([end.ending, calls], ["success", 2]);
});

test("Health: breakers are per tool and shared by runners", () => {
  const { bundle } = compile(`version 1
policy "flaky" {
  tool { idempotent = true }
  breaker { failures = 2 cooldown = 30s }
  rule transient when code == TRANSIENT -> retry
  default -> stop
}`);
  const health = new Health();
  const t0 = 1_700_000_000_000;
  for (const op of ["a", "b"]) {
    const runner = new Runner(bundle, { tool: "flaky", operationId: op }, { health });
    runner.next(t0);
    runner.report(transient, t0);
  }
  assert.equal(health.circuit("flaky"), "open");
  assert.equal(health.circuit("other"), "closed");
});

test("spec.idempotent, the host's fact, outranks the policy's and must be a boolean", () => {
  const { bundle } = compile(`version 1
policy "orders.write" {
  tool { idempotent = false }
  rule lost when code == TIMEOUT -> retry
  default -> stop
}`);
  const lost = { outcome: "failure", envelope: { code: "TIMEOUT" } }; // no side effect known
  const decided = (spec) => {
    const runner = new Runner(bundle, { tool: "orders.write", operationId: "op-6", ...spec }, { health: new Health() });
    runner.next(1000);
    runner.report(lost, 1000);
    return runner.next(1000).decision.rule;
  };
  assert.equal(decided({}), "gate:unknown_outcome");
  assert.equal(decided({ idempotent: true }), "lost");
  assert.throws(() => new Runner(bundle, { tool: "orders.write", operationId: "op-7", idempotent: "yes" }), (e) => e.status === Status.BAD_INPUT && /idempotent must be a boolean/.test(e.message));
});
