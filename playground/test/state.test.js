// What a link or a saved file carries (state.js), without a browser.
import assert from "node:assert/strict";
import { test } from "node:test";

import { fromFile, fromFragment, toFragment, toJson } from "../state.js";

const state = {
  policy: 'version 1\npolicy "søk" {\n  rule r when field == "😀" -> stop\n  default -> stop\n}\n',
  envelope: '{"code": "RATE_LIMITED"}',
  context: '{"tool": "søk"}',
};

test("a fragment carries the policy, envelope and context, deflated", async () => {
  const fragment = await toFragment(state);
  assert.match(fragment, /^#z=[A-Za-z0-9_-]+$/);
  assert.deepEqual(await fromFragment(fragment), state);
  const plain = `#j=${Buffer.from(JSON.stringify(toJson(state))).toString("base64url")}`;
  assert.deepEqual(await fromFragment(plain), state);
});

test("no fragment is no state; a damaged one is an error", async () => {
  assert.equal(await fromFragment(""), null);
  assert.equal(await fromFragment("#section-2"), null);
  await assert.rejects(fromFragment("#z=AAAA"));
  await assert.rejects(fromFragment(`#j=${Buffer.from('{"policy": 1}').toString("base64url")}`), /not a playground file/);
});

test("a saved file is the state's JSON; a .recourse file is a policy alone", () => {
  assert.deepEqual(fromFile("x.json", JSON.stringify(toJson(state))), state);
  const objects = { "recourse-playground": 1, policy: "p", envelope: { code: "TIMEOUT" }, context: { tool: "t" } };
  assert.deepEqual(fromFile("x.json", JSON.stringify(objects)), {
    policy: "p",
    envelope: '{\n  "code": "TIMEOUT"\n}',
    context: '{\n  "tool": "t"\n}',
  });
  assert.deepEqual(fromFile("p.recourse", "version 1"), { policy: "version 1" });
  assert.throws(() => fromFile("x.json", "{}"), /not a playground file/);
  assert.throws(() => fromFile("x.json", "not json"), SyntaxError);
});
