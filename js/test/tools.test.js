// The authoring tools (C API 1.3): format() as `recourse fmt`, Bundle.dump() as `recourse compile
// --dump` and Bundle.runTests() as `recourse test`, on the bundled example policies.
import assert from "node:assert/strict";
import { test } from "node:test";

import { compile, format } from "../src/index.js";
import { native, policySources } from "./support.js";

const examples = policySources("rules/examples");

test("format() gives `recourse fmt`'s text for every bundled example", () => {
  for (const { path, text } of examples) {
    const out = format(text, path);
    assert.deepEqual(out.diagnostics, [], path);
    assert.equal(out.text, native(["fmt", "-"], { input: text, stdio: ["pipe", "pipe", "pipe"] }), path);
    assert.equal(format(out.text, path).text, out.text, `${path}: formats to itself`);
  }
});

test("format() of a text that does not parse: no text, the error at its line and UTF-16 column", () => {
  const text = 'version 1\npolicy "😀" {\n  rule r when code == TRANSIENT ->\n}\n';
  const out = format(text, "broken.recourse");
  assert.equal(out.text, null);
  assert.equal(out.diagnostics[0].code, "E001");
  assert.equal(out.diagnostics[0].file, "broken.recourse");
  assert.equal(out.diagnostics[0].line, 4);
  assert.equal(out.diagnostics[0].utf16Column, 1);
  assert.throws(() => format(42), TypeError);
});

test("dump() prints the decision tables `recourse compile --dump` prints", () => {
  const { bundle } = compile(examples);
  assert.equal(bundle.dump(), native(["compile", "--dump", "rules/examples"]));
});

test("runTests() runs the test blocks: the same results as `recourse test`", () => {
  const { bundle } = compile(examples);
  const results = bundle.runTests();
  const lines = native(["test", "rules/examples"]).split("\n").filter((l) => l.startsWith("PASS"));
  assert.equal(results.length, lines.length);
  for (const r of results) {
    assert.equal(r.passed, true, `${r.name}: ${r.mismatches.join("; ")}`);
    assert.ok(lines.includes(`PASS ${r.file}:${r.line}:${r.column} ${r.policy}: ${r.name}`), r.name);
  }
  const first = results[0];
  assert.equal(bundle.decide(first.envelope, first.context).route, first.decision.route);
});

test("runTests() reports a failing test with what it expected and what it got", () => {
  const { bundle } = compile(`version 1
policy "orders.create" {
  rule throttled when code == RATE_LIMITED -> retry
  default -> stop
  test "a timeout retries" {
    envelope {"code": "TIMEOUT"}
    expect retry
  }
}`);
  const [r] = bundle.runTests();
  assert.equal(r.passed, false);
  assert.equal(r.line, 5);
  assert.equal(r.expected, "retry");
  assert.match(r.actual, /^stop rule default/);
  assert.equal(r.decision.route, "stop");
  assert.deepEqual(r.envelope, { code: "TIMEOUT" });
  assert.equal(r.context.tool, "orders.create");
});
