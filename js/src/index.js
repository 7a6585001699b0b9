// recourse for JavaScript: the engine on WebAssembly (docs/javascript.md). Compile policies,
// decide how to recover from a failed tool call, explain a decision, read HTTP responses and the
// official SDKs' errors through the adapters, drive the recovery loop (Runner) with async waits
// and an AbortSignal, and keep its state in an async store (store.js; recourse/redis). The
// types are in index.d.ts.
import { FieldsPath } from "./fields.js";
import { RecourseError, Status, allocString, callOut, check, jsonText, readString, takeString, wasm } from "./wasm.js";

export { RecourseError, Status };
export { fromResponse, fromOpenAIError, fromAnthropicError, adapt } from "./adapters.js";
export { Runner, Workflow, Health } from "./runner.js";
export { MemoryStore, STORE_TIMEOUT_MS, counterKey, runKey, storeOperations } from "./store.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The engine's version ("major.minor.patch") and C ABI version. */
export const version = readString(wasm._recourse_version());
export const abi = { version: wasm._recourse_abi_version(), minor: wasm._recourse_abi_minor() };

// Frees an engine handle (and its struct path's memory) once its Bundle is collected
// (Bundle.free() does it at once).
const engines = new FinalizationRegistry((held) => release(held));

function release(held) {
  held.fields?.free();
  wasm._recourse_engine_free(held.handle);
}

// The UTF-16 column (1-based, what a JavaScript string index + 1 and editors using UTF-16 count)
// of the position `offset` bytes into `bytes`: the code units of the text from the start of its
// line (after "\n", "\r", or a byte-order mark at the start of the text, grammar/lines.hpp).
function utf16Column(bytes, offset) {
  let start = Math.min(offset, bytes.length);
  while (start > 0 && bytes[start - 1] !== 0x0a && bytes[start - 1] !== 0x0d) --start;
  if (start === 0 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
  return decoder.decode(bytes.subarray(start, Math.max(start, offset))).length + 1;
}

function normalizeSources(sources) {
  if (typeof sources === "string") return [{ path: "policy.recourse", text: sources }];
  if (!Array.isArray(sources)) throw new TypeError("compile: sources must be a string or an array of {path, text}");
  return sources.map((s, i) => {
    if (!s || typeof s.text !== "string") throw new TypeError(`compile: sources[${i}].text must be a string`);
    return { path: typeof s.path === "string" ? s.path : `source${i}.recourse`, text: s.text };
  });
}

// The diagnostics JSON of the engine, each with its utf16Column in the source it names.
function readDiagnostics(json, sources) {
  const bytesOf = new Map(sources.map((s) => [s.path, encoder.encode(s.text)]));
  return JSON.parse(json || "[]").map((d) => {
    const bytes = bytesOf.get(d.file);
    return { ...d, utf16Column: bytes && d.line ? utf16Column(bytes, d.offset) : d.column };
  });
}

/**
 * The canonical layout of one policy file's text (`recourse fmt`, docs/language.md,
 * "Formatting"). Returns { text, diagnostics }: `text` is null when the text does not parse or
 * would not format to the same policies (the diagnostics say why; positions as compile()'s).
 * `path` names the file in the diagnostics.
 */
export function format(text, path = "policy.recourse") {
  if (typeof text !== "string") throw new TypeError("format: text must be a string");
  const p = allocString(path);
  const t = allocString(text);
  const [status, formatted, diagnosticsJson] = callOut(2, [p, t], (out, diagnostics) =>
    wasm._recourse_format(p.ptr, t.ptr, t.len, out, diagnostics));
  if (status !== Status.OK && status !== Status.COMPILE_FAILED) check(status, diagnosticsJson);
  return { text: formatted, diagnostics: readDiagnostics(diagnosticsJson, [{ path, text }]) };
}

/**
 * Compiles policy sources as one bundle. Returns { bundle, diagnostics }: `bundle` is null when
 * any source has an error (never half a bundle); `diagnostics` are data, with byte `offset`,
 * character `column` (code points) and `utf16Column`.
 */
export function compile(sources) {
  const handle = wasm._recourse_engine_new(0);
  if (!handle) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
  const { status, diagnostics } = loadSources(handle, normalizeSources(sources), wasm._recourse_engine_load_sources);
  if (status !== Status.OK) {
    wasm._recourse_engine_free(handle);
    if (status === Status.COMPILE_FAILED) return { bundle: null, diagnostics };
    check(status);
  }
  return { bundle: new Bundle(handle), diagnostics };
}

// Compiles `list` ({path, text}[]) into `handle` with `load` (recourse_engine_load_sources or
// recourse_engine_load_candidate_sources): { status, diagnostics } (each with its utf16Column).
function loadSources(handle, list, load) {
  const texts = list.flatMap((s) => [allocString(s.path), allocString(s.text)]);
  const sp = wasm.stackSave();
  let status, diagnosticsJson;
  try {
    const array = wasm.stackAlloc(12 * list.length); // recourse_source: path, text, text_len
    for (let i = 0; i < list.length; ++i) {
      wasm.HEAPU32[(array >> 2) + 3 * i] = texts[2 * i].ptr;
      wasm.HEAPU32[(array >> 2) + 3 * i + 1] = texts[2 * i + 1].ptr;
      wasm.HEAPU32[(array >> 2) + 3 * i + 2] = texts[2 * i + 1].len;
    }
    [status, diagnosticsJson] = callOut(1, texts, (out) => load(handle, array, list.length, out));
  } finally {
    wasm.stackRestore(sp);
  }
  return { status, diagnostics: readDiagnostics(diagnosticsJson, list) };
}

/** Compiled policies: decide() and explain() with them. Immutable; free() releases it at once. */
export class Bundle {
  #held;
  constructor(handle) {
    this.#held = { handle, fields: null };
    engines.register(this, this.#held, this);
  }

  /** The C API's engine handle (for Runner); throws after free(). */
  get handle() {
    if (!this.#held.handle) throw new RecourseError("the bundle was freed", Status.INVALID_ARGUMENT);
    return this.#held.handle;
  }

  /**
   * The decision for a failed call: `envelope` (untrusted: a malformed field reads as absent,
   * with a warning; anything but an object decides stop, warning unreadable_envelope) and
   * `context` (trusted, read strictly: a wrong type or range throws a RecourseError BAD_INPUT).
   * Both are objects or JSON text. Returns the decision's JSON (docs/schema/decision.schema.json).
   */
  decide(envelope, context = {}) {
    return JSON.parse(this.decideJson(jsonText(envelope), jsonText(context)));
  }

  /** decide() on JSON text in and out. */
  decideJson(envelopeJson, contextJson = "") {
    const e = allocString(envelopeJson);
    const c = allocString(contextJson);
    const [status, decision, error] = callOut(2, [e, c], (out, err) =>
      wasm._recourse_engine_decide_json(this.handle, e.ptr, e.len, c.ptr, c.len, out, err));
    check(status, error);
    return decision;
  }

  /**
   * Why the decision came out as it did (the reference interpreter walking the rules):
   * { policy, rules: [{rule, line, column, matched, tests: [{test, value, result}]}], guard,
   * decision }. Throws a RecourseError BAD_INPUT for a bad context or no policy for the tool.
   */
  explain(envelope, context = {}) {
    const e = allocString(jsonText(envelope));
    const c = allocString(jsonText(context));
    const [status, explanation, error] = callOut(2, [e, c], (out, err) =>
      wasm._recourse_engine_explain_json(this.handle, e.ptr, e.len, c.ptr, c.len, out, err));
    check(status, error);
    return JSON.parse(explanation);
  }

  /**
   * decide() through the C structs (recourse_engine_decide), with no JSON on either side: the
   * fast path for hot loops. `envelope` and `context` are objects with the schema's keys; an
   * envelope field of the wrong type reads as absent, but without the JSON path's warning, and
   * an envelope's keys beyond the struct's (code, message, retryable, field, suggestion,
   * retryAfterMs as an integer, traceId) are not read. Returns the decision's scalar fields:
   * {route, delayMs, jitterMs, rule, reason, target, policy, policyHash, exhausted, traceId,
   * attempt, attemptsLeft, repairsLeft, retryAfterMs, retryAt, timeoutMs, warnings} ("" for an
   * absent string, undefined for an absent number, `warnings` the DecisionWarning bits).
   */
  decideFields(envelope, context = {}) {
    const handle = this.handle;
    return (this.#held.fields ??= new FieldsPath()).decide(handle, envelope, context);
  }

  /**
   * Compiles `sources` (as compile() takes them) as the shadow candidate (docs/embedding.md,
   * "Shadow policies"; C API 1.2 recourse_engine_load_candidate_sources): every decision for a
   * tool the candidate has a policy for is then decided by it too, read-only (it takes no
   * tokens, probes, claims or counts), and a disagreement is counted (shadowCounters()). The
   * decisions returned stay the live bundle's. Returns the compile's diagnostics; throws a
   * RecourseError COMPILE_FAILED, with them as `diagnostics`, when any source has an error, and
   * both bundles stay as they were.
   */
  loadCandidate(sources) {
    const { status, diagnostics } = loadSources(this.handle, normalizeSources(sources), wasm._recourse_engine_load_candidate_sources);
    if (status === Status.COMPILE_FAILED) {
      const first = diagnostics.find((d) => d.severity === "error");
      const error = new RecourseError(`the candidate did not compile: ${first ? `${first.file}:${first.line}:${first.column}: ${first.message}` : "no policy"}`, status);
      error.diagnostics = diagnostics;
      throw error;
    }
    check(status);
    return diagnostics;
  }

  /** Drops the shadow candidate (recourse_engine_drop_candidate); the counters are kept. */
  dropCandidate() {
    check(wasm._recourse_engine_drop_candidate(this.handle));
  }

  /**
   * The shadow counters (recourse_engine_shadow_json): { decisions (the candidate's),
   * disagreements, rules: { policy: { "live rule -> candidate rule": n } }, differences: { kind:
   * n } } with the kinds seen among route, target, rule, delay, idempotencyKey and exhausted
   * (recourse::shadow_differences); counted since the bundle was made, across candidates.
   */
  shadowCounters() {
    const text = takeString(wasm._recourse_engine_shadow_json(this.handle));
    if (text === null) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
    return JSON.parse(text);
  }

  /** The decision tables of every policy, as `recourse compile --dump` prints them (text). */
  dump() {
    const text = takeString(wasm._recourse_engine_dump(this.handle));
    if (text === null) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
    return text;
  }

  /**
   * Runs the policies' own `test` blocks (`recourse test`, docs/language.md, "Tests"):
   * [{policy, name, file, line, column, offset, passed, expected, actual, mismatches, decision,
   * envelope, context}], policy after policy, each in file order.
   */
  runTests() {
    const json = takeString(wasm._recourse_engine_tests_json(this.handle));
    if (json === null) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
    return JSON.parse(json);
  }

  /** Releases the engine's memory now; the bundle is unusable after. Idempotent. */
  free() {
    if (!this.#held.handle) return;
    engines.unregister(this);
    release(this.#held);
    this.#held = { handle: 0, fields: null };
  }
}

