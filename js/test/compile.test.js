// compile(): bundles, diagnostics as data (byte offset, character and UTF-16 columns), and the
// policy hashes the native engine gives.
import assert from "node:assert/strict";
import { test } from "node:test";

import { RecourseError, Status, compile, version } from "../src/index.js";
import { bundledPolicies, native, policySources } from "./support.js";

test("a policy compiles to a bundle that decides", () => {
  const { bundle, diagnostics } = compile(`version 1
policy "search.query" {
  rule transient when code == TRANSIENT and retryable -> retry
  default -> stop
}`);
  assert.deepEqual(diagnostics, []);
  const d = bundle.decide({ code: "TRANSIENT", retryable: true }, { tool: "search.query", sideEffect: "none" });
  assert.equal(d.route, "retry");
  assert.equal(d.rule, "transient");
  assert.equal(d.policy, "search.query");
  assert.match(version, /^\d+\.\d+\.\d+$/);
});

test("errors are data: byte offset, character column and UTF-16 column", () => {
  // "é" is 2 bytes, 1 character, 1 UTF-16 unit; "😀" 4 bytes, 1 character, 2 UTF-16 units.
  const text = 'version 1\npolicy "t" {\n  rule r when reason == "héllo 😀" and bogus -> retry\n  default -> stop\n}\n';
  const { bundle, diagnostics } = compile([{ path: "u.recourse", text }]);
  assert.equal(bundle, null);
  assert.deepEqual(
    diagnostics.map(({ code, line, column, utf16Column, offset, message }) => ({ code, line, column, utf16Column, offset, message })),
    [
      { code: "E010", line: 3, column: 15, utf16Column: 15, offset: 37, message: "unknown attribute 'reason'" },
      { code: "E010", line: 3, column: 39, utf16Column: 40, offset: 65, message: "unknown attribute 'bogus'" },
    ],
  );
  // The UTF-16 column indexes the JavaScript string's line.
  const line = text.split("\n")[2];
  assert.equal(line.slice(diagnostics[1].utf16Column - 1).slice(0, 5), "bogus");
});

test("a byte-order mark belongs to no column", () => {
  const { diagnostics } = compile([{ path: "b.recourse", text: '\uFEFFpolicy "t" { rule r when bogus -> retry default -> stop }' }]);
  assert.equal(diagnostics[0].code, "E010");
  assert.equal(diagnostics[0].column, 26);
  assert.equal(diagnostics[0].utf16Column, 26);
  assert.equal(diagnostics[0].offset, 28); // the mark's 3 bytes counted
});

test("bad arguments throw TypeError; a bad context throws RecourseError BAD_INPUT", () => {
  assert.throws(() => compile(42), TypeError);
  assert.throws(() => compile([{ path: "x" }]), TypeError);
  const { bundle } = compile('policy "t" { default -> stop }');
  assert.throws(
    () => bundle.decide({ code: "TRANSIENT" }, { attempt: "two" }),
    (e) => e instanceof RecourseError && e.status === Status.BAD_INPUT && /attempt/.test(e.message),
  );
  bundle.free();
  assert.throws(() => bundle.decide({}, {}), RecourseError);
});

test("every bundled policy has the native engine's hash", () => {
  for (const path of bundledPolicies) {
    const { bundle, diagnostics } = compile(policySources(path));
    assert.ok(bundle, `${path}: ${JSON.stringify(diagnostics.filter((d) => d.severity === "error"))}`);
    const expected = native(["compile", path]).trim().split("\n");
    assert.ok(expected.length > 0);
    for (const line of expected) {
      const [, name, hash] = line.match(/^policy "(.*)" (sha256:[0-9a-f]{64})$/);
      const d = bundle.decide({ code: "UNKNOWN" }, { tool: name, sideEffect: "none" });
      assert.equal(d.policy, name, path);
      assert.equal(d.policyHash, hash, `${path} ${name}`);
    }
  }
});
