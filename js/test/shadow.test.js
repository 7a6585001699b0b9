// Shadow policies (docs/embedding.md, "Shadow policies"): a candidate decides beside the live
// bundle, read-only; Bundle.loadCandidate, dropCandidate and shadowCounters bind C API 1.2.
import assert from "node:assert/strict";
import { test } from "node:test";

import { RecourseError, Runner, Status, Workflow, compile } from "../src/index.js";

const LIVE = `policy "p" {
  tool { idempotent = true }
  rule t when code == TRANSIENT -> retry
  rule a when code == PERMISSION -> authorize
  default -> stop
}`;
const CANDIDATE = LIVE.replace("-> authorize", "-> escalate");
const context = { tool: "p", sideEffect: "none" };

test("a candidate decides beside the live bundle, read-only, and its disagreements are counted", () => {
  const { bundle } = compile(LIVE);
  assert.deepEqual(bundle.shadowCounters(), { decisions: 0, disagreements: 0, rules: {}, differences: {} });
  assert.deepEqual(bundle.loadCandidate([{ path: "p.recourse", text: CANDIDATE }]), []);
  assert.equal(bundle.decide({ code: "PERMISSION" }, context).route, "authorize"); // the live decision
  assert.equal(bundle.decide({ code: "TRANSIENT" }, context).route, "retry");
  assert.equal(bundle.decideFields({ code: "PERMISSION" }, context).route, "authorize");
  assert.deepEqual(bundle.shadowCounters(), { decisions: 3, disagreements: 2, rules: { p: { "a -> a": 2 } }, differences: { route: 2 } });
  bundle.dropCandidate();
  bundle.decide({ code: "PERMISSION" }, context);
  assert.equal(bundle.shadowCounters().decisions, 3); // no candidate: nothing shadowed
});

test("a candidate that does not compile leaves both bundles as they were", () => {
  const { bundle } = compile(LIVE);
  bundle.loadCandidate(CANDIDATE);
  assert.throws(
    () => bundle.loadCandidate([{ path: "bad.recourse", text: 'policy "p" {' }]),
    (e) => e instanceof RecourseError && e.status === Status.COMPILE_FAILED && e.diagnostics[0].file === "bad.recourse" && /bad\.recourse:1:/.test(e.message),
  );
  assert.equal(bundle.decide({ code: "PERMISSION" }, context).route, "authorize");
  assert.equal(bundle.shadowCounters().disagreements, 1); // the first candidate still shadows
  // A candidate of a tool the live bundle lacks changes nothing for p; its warnings come back.
  const warnings = bundle.loadCandidate('policy "q" {\n  rule r when code == TRANSIENT -> retry\n  default -> stop\n}');
  assert.ok(warnings.every((d) => d.severity !== "error"));
  bundle.decide({ code: "PERMISSION" }, context);
  assert.equal(bundle.shadowCounters().decisions, 1); // p is no longer shadowed
  assert.throws(() => bundle.loadCandidate(42), TypeError);
});

test("the live decisions and state are the same with and without a candidate", async () => {
  const run = async (candidate) => {
    const { bundle } = compile(`policy "p" {
  tool { idempotent = true }
  limits { attempts = 3 }
  backoff constant base 10ms jitter none
  rule t when code == TRANSIENT -> retry
  default -> stop
}`);
    if (candidate) bundle.loadCandidate(candidate);
    const workflow = new Workflow({ scope: "s" });
    const runner = new Runner(bundle, { tool: "p", operationId: "op-1" }, { workflow });
    let t = 1_000_000;
    const done = await runner.run({ clock: () => t, sleep: async (ms) => (t += ms), call: async () => ({ outcome: "failure", envelope: { code: "TRANSIENT", traceId: "x" }, sideEffect: "none" }) });
    return { done, state: workflow.toJSON(), shadow: bundle.shadowCounters() };
  };
  const without = await run(null);
  const withCandidate = await run('policy "p" {\n  tool { idempotent = true }\n  rule t when code == TRANSIENT -> stop\n  default -> stop\n}');
  assert.deepEqual(withCandidate.done, without.done);
  assert.deepEqual(withCandidate.state, without.state);
  assert.equal(without.done.attempt, 3);
  // Two retries the candidate stops (route, and the delay: 10 ms against none), and the third
  // failure, which the live budget stops (rule budget:attempts, exhausted attempts) and the
  // candidate's rule t stops too.
  assert.deepEqual(withCandidate.shadow, {
    decisions: 3,
    disagreements: 3,
    rules: { p: { "t -> t": 2, "budget:attempts -> t": 1 } },
    differences: { route: 2, delay: 2, rule: 1, exhausted: 1 },
  });
});
