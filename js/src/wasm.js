// The engine's WebAssembly module (wasm/recourse.cjs, built by scripts/wasm.sh from js/wasm/) and
// the calls into its C API (engine/include/recourse/recourse.h): strings in as UTF-8 copied into
// the module's memory, strings out read and freed with recourse_string_free.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const createRecourse = require("../wasm/recourse.cjs");

/** The instantiated module: its exports are the C API's functions with a leading underscore. */
export const wasm = await createRecourse();

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** recourse_status values (recourse.h). */
export const Status = Object.freeze({
  OK: 0,
  INVALID_ARGUMENT: 1,
  COMPILE_FAILED: 2,
  BAD_INPUT: 3,
  NO_MEMORY: 4,
  INTERNAL: 5,
  UNAVAILABLE: 6,
});

/** RECOURSE_ABSENT (INT64_MIN): an absent optional integer; a BigInt, as i64 crosses as one. */
export const ABSENT = -(2n ** 63n);

/** An error from the engine: `status` is the C API's recourse_status. */
export class RecourseError extends Error {
  constructor(message, status) {
    super(message);
    this.name = "RecourseError";
    this.status = status;
  }
}

/** A string copied into the module's memory, NUL-terminated: { ptr, len } (len without NUL). */
export function allocString(text) {
  const bytes = encoder.encode(text);
  const ptr = wasm._malloc(bytes.length + 1);
  if (!ptr) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
  wasm.HEAPU8.set(bytes, ptr);
  wasm.HEAPU8[ptr + bytes.length] = 0;
  return { ptr, len: bytes.length };
}

/** The NUL-terminated string at `ptr`, or null for 0. Does not free it. */
export function readString(ptr) {
  if (!ptr) return null;
  const heap = wasm.HEAPU8;
  let end = ptr;
  while (heap[end]) ++end;
  return decoder.decode(heap.subarray(ptr, end));
}

/** Reads and frees a string the library returned (recourse_string_free). */
export function takeString(ptr) {
  const text = readString(ptr);
  if (ptr) wasm._recourse_string_free(ptr);
  return text;
}

/**
 * Calls `fn(...args, out1, ..., outN)` with `outs` char** slots on the stack, frees the strings
 * in `strings` after; returns [status, ...the out strings] (each read and freed).
 */
export function callOut(outs, strings, fn) {
  const sp = wasm.stackSave();
  try {
    const slots = [];
    for (let i = 0; i < outs; ++i) {
      const slot = wasm.stackAlloc(4);
      wasm.HEAPU32[slot >> 2] = 0;
      slots.push(slot);
    }
    const status = fn(...slots);
    return [status, ...slots.map((slot) => takeString(wasm.HEAPU32[slot >> 2]))];
  } finally {
    wasm.stackRestore(sp);
    for (const s of strings) if (s && s.ptr) wasm._free(s.ptr);
  }
}

/** Throws a RecourseError for a status other than OK, with the library's message. */
export function check(status, error) {
  if (status !== Status.OK)
    throw new RecourseError(error || readString(wasm._recourse_status_string(status)), status);
}

/** A JSON argument: a string is passed as it is, anything else through JSON.stringify. */
export function jsonText(value) {
  return typeof value === "string" ? wellFormed(value) : JSON.stringify(value, (key, v) => (typeof v === "string" ? wellFormed(v) : v));
}

// A lone surrogate (a server's text cut inside a pair) as U+FFFD, as UTF-8 has no form for it:
// JSON.stringify writes it as an escape the engine's JSON reader refuses, with the whole value.
// (String.prototype.toWellFormed, from Node 20, does the same.)
const wellFormed = (s) => s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
