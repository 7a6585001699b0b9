// The WebAssembly engine decides as the native one: on every line of the bundled traces and on
// seeded samples of every bundled policy's domain. The native decisions come from
// `recourse replay --log` (one run per trace), whose records carry the context as decided (the
// workflow's counts and the tool's health filled in); the WebAssembly engine decides the line's
// own envelope (or, for a raw form, the adapter's reading of it) with that context.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { adapt, compile } from "../src/index.js";
import { bundledPolicies, native, policySources, prng, root, sample } from "./support.js";

const tmp = mkdtempSync(join(tmpdir(), "recourse-js-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

// Replays `lines` (trace objects) natively against `policy`; the log records, one per failure.
function nativeRecords(policy, lines, name) {
  const trace = join(tmp, `${name}.jsonl`);
  const log = join(tmp, `${name}.log.jsonl`);
  writeFileSync(trace, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  native(["replay", "--policy", policy, "--log", log, trace]);
  return readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

// Compares each failure line's WebAssembly decision with its native record; the count compared.
function compare(bundle, lines, records, label) {
  const failures = lines.filter((l) => l.outcome === undefined);
  assert.equal(records.length, failures.length, `${label}: one record per failure`);
  failures.forEach((line, i) => {
    const record = records[i];
    const envelope = line.raw ? adapt(line.raw, { nowMs: record.input.context.nowMs }).envelope : line.envelope;
    const decision = bundle.decideJson(line.raw ? JSON.stringify(record.input.envelope) : JSON.stringify(envelope), JSON.stringify(record.input.context));
    const expected = line.raw ? { ...record.result, warnings: JSON.parse(decision).warnings } : record.result;
    assert.deepEqual(JSON.parse(decision), expected, `${label} line ${i + 1}`);
  });
  return failures.length;
}

test("every bundled trace line decides as natively", () => {
  const { bundle } = compile(policySources("rules/examples"));
  let compared = 0;
  for (const file of readdirSync(join(root, "rules/traces")).filter((f) => f.endsWith(".jsonl")).sort()) {
    const lines = readFileSync(join(root, "rules/traces", file), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    compared += compare(bundle, lines, nativeRecords("rules/examples", lines, file), file);
  }
  assert.equal(compared, 73 + 22 + 15);
});

test("samples of every bundled policy's domain decide as natively", () => {
  let compared = 0;
  for (const path of bundledPolicies) {
    const { bundle } = compile(policySources(path));
    const names = native(["compile", path]).trim().split("\n").map((l) => l.match(/^policy "(.*)" /)[1]);
    const random = prng(42);
    const lines = names.flatMap((name) => Array.from({ length: 300 }, () => sample(random, name === "*" ? "unlisted.tool" : name, ["amount", "query", "path"])));
    compared += compare(bundle, lines, nativeRecords(path, lines, path.replaceAll("/", "_")), path);
  }
  assert.ok(compared >= 300 * 30, `${compared} compared`);
});
