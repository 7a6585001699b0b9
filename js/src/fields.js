// The struct path of decide (recourse_engine_decide, recourse.h): the envelope's and the
// context's fields written into the C structs in the module's memory, the decision's read back,
// with no JSON on either side. Field offsets are wasm32's (4-byte pointers and size_t, 8-byte
// aligned int64), checked by test/fields.test.js against decide()'s JSON on the same inputs.
import { RecourseError, Status, readString, takeString, wasm } from "./wasm.js";

const UNSET = -1;
const ABSENT = null; // RECOURSE_ABSENT (INT64_MIN), written by writeInt64

// An int64 field as two int32 halves (wasm is little-endian): BigInt conversions cost more than
// the rest of a call. `value` is a safe integer, or null for RECOURSE_ABSENT.
function writeInt64(i32, address, value) {
  if (value === null) {
    i32[address >> 2] = 0;
    i32[(address >> 2) + 1] = -0x80000000;
    return;
  }
  i32[address >> 2] = value | 0;
  i32[(address >> 2) + 1] = Math.floor(value / 4294967296);
}

// The int64 at `address`, or undefined for RECOURSE_ABSENT.
function readInt64(i32, address) {
  const lo = i32[address >> 2], hi = i32[(address >> 2) + 1];
  if (hi === -0x80000000 && lo === 0) return undefined;
  return hi * 4294967296 + (lo >>> 0);
}
const encoder = new TextEncoder();

// sizeof and offsets of recourse_envelope, recourse_context and recourse_decision on wasm32.
const ENVELOPE = { size: 40, code: 4, message: 8, retryable: 12, field: 16, suggestion: 20, retryAfterMs: 24, traceId: 32 };
const CONTEXT = {
  size: 136, tool: 4, idempotent: 8, sideEffect: 12, attempt: 16, repairs: 24, elapsedMs: 32, arguments: 40, argumentCount: 44,
  maxAttempts: 48, deadlineMs: 56, operationId: 64, workflowId: 68, lowerRetries: 72, repeats: 80, costSpent: 88,
  idempotencyKey: 96, idempotencyKeyPinned: 100, circuit: 104, retryThrottled: 108, nowMs: 112, argsHash: 120,
  streamOutputEmitted: 124, streamDiscardSupported: 128,
};
const DECISION = {
  size: 112, route: 4, delayMs: 8, jitterMs: 16, rule: 24, reason: 28, target: 32, policy: 36, policyHash: 40, exhausted: 44,
  traceId: 48, attempt: 56, attemptsLeft: 64, repairsLeft: 72, retryAfterMs: 80, retryAt: 88, timeoutMs: 96, warnings: 104,
};
const ROUTES = ["retry", "repair", "authorize", "replace", "degrade", "escalate", "stop"];
const SIDE_EFFECTS = { none: 1, unknown: 2, committed: 3 };
const CIRCUITS = { closed: 0, open: 1, half_open: 2 };

/**
 * Strings the struct path has copied into the module's memory, kept for the next calls (codes,
 * tools and names repeat): at most `limit` of them, each at most 256 bytes; others are copied
 * for one call and freed after it.
 */
class Strings {
  #kept = new Map();
  #once = [];
  constructor(limit = 4096) {
    this.limit = limit;
  }
  ptr(text) {
    let p = this.#kept.get(text);
    if (p !== undefined) return p;
    const bytes = encoder.encode(text);
    p = wasm._malloc(bytes.length + 1);
    if (!p) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
    wasm.HEAPU8.set(bytes, p);
    wasm.HEAPU8[p + bytes.length] = 0;
    if (this.#kept.size < this.limit && bytes.length <= 256) this.#kept.set(text, p);
    else this.#once.push(p);
    return p;
  }
  release() {
    for (const p of this.#once) wasm._free(p);
    this.#once.length = 0;
  }
  free() {
    this.release();
    for (const p of this.#kept.values()) wasm._free(p);
    this.#kept.clear();
  }
}

// The NUL-terminated string at `ptr` ("" for 0): ASCII by character codes (the decision's
// names, hashes and trace ids are short and mostly ASCII), anything else by readString().
function shortString(ptr) {
  if (!ptr) return "";
  const heap = wasm.HEAPU8;
  let out = "";
  for (let p = ptr; ; ++p) {
    const b = heap[p];
    if (b === 0) return out;
    if (b > 0x7f || p - ptr > 256) return readString(ptr);
    out += String.fromCharCode(b);
  }
}

/** The structs of one Bundle, reused by every call of its decideFields(). */
export class FieldsPath {
  #strings = new Strings();
  #envelope = wasm._malloc(ENVELOPE.size);
  #context = wasm._malloc(CONTEXT.size);
  #decision = wasm._malloc(DECISION.size);
  #arguments = 0;
  #argumentSlots = 0;

  free() {
    this.#strings.free();
    for (const p of [this.#envelope, this.#context, this.#decision, this.#arguments]) if (p) wasm._free(p);
    this.#envelope = this.#context = this.#decision = this.#arguments = 0;
  }

  decide(engine, e, c) {
    if (typeof e !== "object" || e === null || typeof c !== "object" || c === null)
      throw new TypeError("decideFields: the envelope and the context must be objects");
    const s = this.#strings;
    const u32 = wasm.HEAPU32, i32 = wasm.HEAP32;
    const str = (base, offset, value, what) => {
      if (value === undefined || value === null) u32[(base + offset) >> 2] = 0;
      else if (typeof value === "string") u32[(base + offset) >> 2] = s.ptr(value);
      else throw new RecourseError(`${what} must be a string`, Status.BAD_INPUT);
    };
    const flag = (base, offset, value, unset, what) => {
      if (value === undefined || value === null) i32[(base + offset) >> 2] = unset;
      else if (typeof value === "boolean") i32[(base + offset) >> 2] = value ? 1 : 0;
      else throw new RecourseError(`${what} must be true or false`, Status.BAD_INPUT);
    };
    const int = (base, offset, value, absent, what) => {
      if (value === undefined || value === null) writeInt64(i32, base + offset, absent);
      else if (Number.isSafeInteger(value)) writeInt64(i32, base + offset, value);
      else throw new RecourseError(`${what} must be an integer`, Status.BAD_INPUT);
    };
    try {
      // The envelope: untrusted, so a field of the wrong type reads as absent (as in JSON, with
      // no warning here: the struct cannot say what was there).
      const env = this.#envelope;
      u32[env >> 2] = ENVELOPE.size;
      u32[(env + ENVELOPE.code) >> 2] = typeof e.code === "string" ? s.ptr(e.code) : 0;
      u32[(env + ENVELOPE.message) >> 2] = typeof e.message === "string" ? s.ptr(e.message) : 0;
      i32[(env + ENVELOPE.retryable) >> 2] = typeof e.retryable === "boolean" ? (e.retryable ? 1 : 0) : UNSET;
      u32[(env + ENVELOPE.field) >> 2] = typeof e.field === "string" ? s.ptr(e.field) : 0;
      u32[(env + ENVELOPE.suggestion) >> 2] = typeof e.suggestion === "string" ? s.ptr(e.suggestion) : 0;
      writeInt64(i32, env + ENVELOPE.retryAfterMs, Number.isSafeInteger(e.retryAfterMs) ? e.retryAfterMs : ABSENT);
      u32[(env + ENVELOPE.traceId) >> 2] = typeof e.traceId === "string" ? s.ptr(e.traceId) : 0;
      // The context: trusted, so a wrong type throws.
      const ctx = this.#context;
      u32[ctx >> 2] = CONTEXT.size;
      str(ctx, CONTEXT.tool, c.tool, "context.tool");
      flag(ctx, CONTEXT.idempotent, c.idempotent, UNSET, "context.idempotent");
      const side = c.sideEffect === undefined || c.sideEffect === null ? 0 : SIDE_EFFECTS[c.sideEffect];
      if (side === undefined) throw new RecourseError("context.sideEffect must be none, unknown or committed", Status.BAD_INPUT);
      i32[(ctx + CONTEXT.sideEffect) >> 2] = side;
      int(ctx, CONTEXT.attempt, c.attempt ?? 1, 1, "context.attempt");
      int(ctx, CONTEXT.repairs, c.repairs ?? 0, 0, "context.repairs");
      int(ctx, CONTEXT.elapsedMs, c.elapsedMs ?? 0, 0, "context.elapsedMs");
      this.#writeArguments(ctx, c.arguments);
      int(ctx, CONTEXT.maxAttempts, c.maxAttempts, ABSENT, "context.maxAttempts");
      int(ctx, CONTEXT.deadlineMs, c.deadlineMs, ABSENT, "context.deadlineMs");
      str(ctx, CONTEXT.operationId, c.operationId, "context.operationId");
      str(ctx, CONTEXT.workflowId, c.workflowId, "context.workflowId");
      int(ctx, CONTEXT.lowerRetries, c.lowerRetries ?? 0, 0, "context.lowerRetries");
      int(ctx, CONTEXT.repeats, c.repeats ?? 0, 0, "context.repeats");
      int(ctx, CONTEXT.costSpent, c.costSpent ?? 0, 0, "context.costSpent");
      str(ctx, CONTEXT.idempotencyKey, c.idempotencyKey, "context.idempotencyKey");
      flag(ctx, CONTEXT.idempotencyKeyPinned, c.idempotencyKeyPinned ?? false, 0, "context.idempotencyKeyPinned");
      const circuit = c.circuit === undefined || c.circuit === null ? 0 : CIRCUITS[c.circuit];
      if (circuit === undefined) throw new RecourseError("context.circuit must be closed, open or half_open", Status.BAD_INPUT);
      i32[(ctx + CONTEXT.circuit) >> 2] = circuit;
      flag(ctx, CONTEXT.retryThrottled, c.retryThrottled ?? false, 0, "context.retryThrottled");
      int(ctx, CONTEXT.nowMs, c.nowMs, ABSENT, "context.nowMs");
      str(ctx, CONTEXT.argsHash, c.argsHash, "context.argsHash");
      flag(ctx, CONTEXT.streamOutputEmitted, c.streamOutputEmitted ?? false, 0, "context.streamOutputEmitted");
      flag(ctx, CONTEXT.streamDiscardSupported, c.streamDiscardSupported ?? false, 0, "context.streamDiscardSupported");
      return this.#call(engine);
    } finally {
      s.release();
    }
  }

  #writeArguments(ctx, args) {
    const u32 = wasm.HEAPU32;
    if (args === undefined || args === null) {
      u32[(ctx + CONTEXT.arguments) >> 2] = 0;
      u32[(ctx + CONTEXT.argumentCount) >> 2] = 0;
      return;
    }
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string"))
      throw new RecourseError("context.arguments must be an array of strings", Status.BAD_INPUT);
    if (args.length > this.#argumentSlots) {
      if (this.#arguments) wasm._free(this.#arguments);
      this.#arguments = wasm._malloc(4 * args.length);
      if (!this.#arguments) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
      this.#argumentSlots = args.length;
    }
    const heap = wasm.HEAPU32; // after a possible growth
    for (let i = 0; i < args.length; ++i) heap[(this.#arguments >> 2) + i] = this.#strings.ptr(args[i]);
    heap[(ctx + CONTEXT.arguments) >> 2] = this.#arguments;
    heap[(ctx + CONTEXT.argumentCount) >> 2] = args.length;
  }

  #call(engine) {
    const d = this.#decision;
    wasm.HEAPU32[d >> 2] = DECISION.size;
    const sp = wasm.stackSave();
    try {
      const errorSlot = wasm.stackAlloc(4);
      wasm.HEAPU32[errorSlot >> 2] = 0;
      const status = wasm._recourse_engine_decide(engine, this.#envelope, this.#context, d, errorSlot);
      if (status !== Status.OK) throw new RecourseError(takeString(wasm.HEAPU32[errorSlot >> 2]) ?? "decide failed", status);
    } finally {
      wasm.stackRestore(sp);
    }
    try {
      const u32 = wasm.HEAPU32, i32 = wasm.HEAP32;
      const num = (offset) => readInt64(i32, d + offset);
      const text = (offset) => shortString(u32[(d + offset) >> 2]);
      return {
        route: ROUTES[wasm.HEAP32[(d + DECISION.route) >> 2]],
        delayMs: num(DECISION.delayMs),
        jitterMs: num(DECISION.jitterMs),
        rule: text(DECISION.rule),
        reason: text(DECISION.reason),
        target: text(DECISION.target),
        policy: text(DECISION.policy),
        policyHash: text(DECISION.policyHash),
        exhausted: text(DECISION.exhausted),
        traceId: text(DECISION.traceId),
        attempt: num(DECISION.attempt),
        attemptsLeft: num(DECISION.attemptsLeft),
        repairsLeft: num(DECISION.repairsLeft),
        retryAfterMs: num(DECISION.retryAfterMs),
        retryAt: num(DECISION.retryAt),
        timeoutMs: num(DECISION.timeoutMs),
        warnings: u32[(d + DECISION.warnings) >> 2],
      };
    } finally {
      wasm._recourse_decision_release(d);
    }
  }
}
