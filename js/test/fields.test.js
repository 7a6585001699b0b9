// decideFields(), the struct path, gives decide()'s decision on the same inputs: seeded samples
// of the bundled example policies, and contexts of the wrong type are refused as by the JSON path.
import assert from "node:assert/strict";
import { test } from "node:test";

import { RecourseError, Status, compile } from "../src/index.js";
import { policySources, prng, sample } from "./support.js";

test("the struct path decides as the JSON path", () => {
  const { bundle } = compile(policySources("rules/examples"));
  const random = prng(7);
  const tools = ["payments.create", "payments.lookup", "search.query", "files.write", "email.send", "other.tool"];
  let compared = 0;
  for (let i = 0; i < 3000; ++i) {
    const { envelope, context } = sample(random, tools[i % tools.length], ["amount", "query", "path"]);
    if (i % 3 === 0) context.arguments = ["amount", "query"];
    const json = bundle.decide(envelope, context);
    const fields = bundle.decideFields(envelope, context);
    assert.deepEqual(fields, {
      route: json.route,
      delayMs: json.delayMs,
      jitterMs: json.jitterMs ?? 0,
      rule: json.rule,
      reason: json.reason ?? "",
      target: json.target ?? "",
      policy: json.policy,
      policyHash: json.policyHash,
      exhausted: json.exhausted ?? "",
      traceId: json.traceId,
      attempt: json.attempt,
      attemptsLeft: json.attemptsLeft ?? undefined,
      repairsLeft: json.repairsLeft ?? undefined,
      retryAfterMs: json.retryAfterMs,
      retryAt: json.retryAt,
      timeoutMs: json.timeoutMs,
      warnings: fields.warnings,
    }, `sample ${i}: ${JSON.stringify({ envelope, context })}`);
    assert.equal(fields.warnings === 0, json.warnings.length === 0, `sample ${i}: warnings`);
    ++compared;
  }
  assert.equal(compared, 3000);
});

test("the struct path refuses a context of the wrong type", () => {
  const { bundle } = compile('policy "t" { default -> stop }');
  for (const context of [{ attempt: "2" }, { sideEffect: "maybe" }, { idempotent: 1 }, { arguments: [1] }, { circuit: "ajar" }, { attempt: 1.5 }])
    assert.throws(() => bundle.decideFields({ code: "TRANSIENT" }, context), (e) => e instanceof RecourseError && e.status === Status.BAD_INPUT, JSON.stringify(context));
  assert.throws(() => bundle.decideFields({}, { attempt: 0 }), (e) => e.status === Status.BAD_INPUT);
  assert.equal(bundle.decideFields({ code: 7 }, {}).route, "stop"); // an untrusted field of the wrong type is absent
});
