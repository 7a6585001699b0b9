// The adapters (docs/adapters.md) for JavaScript hosts: a fetch() Response, and the errors the
// official `openai` and `@anthropic-ai/sdk` packages throw, made into the raw forms the engine's
// adapters read (recourse_adapt_json).
import { ABSENT, RecourseError, Status, allocString, callOut, check, jsonText, wasm } from "./wasm.js";

// ms since the epoch as the C API's int64 (RECOURSE_ABSENT when not given).
export function nowArgument(nowMs) {
  if (nowMs === undefined || nowMs === null) return ABSENT;
  if (!Number.isSafeInteger(nowMs)) throw new RecourseError("nowMs must be an integer (ms since the epoch)", Status.INVALID_ARGUMENT);
  return BigInt(nowMs);
}

/**
 * Reads a protocol's raw form (an HTTP response, a transport error, a gRPC status, an MCP or
 * JSON-RPC error) into an envelope: { envelope, mapping, warnings, idempotent }. `protocol` is
 * "http", "grpc", "mcp", "jsonrpc" or "auto" (the form's "protocol" member, else its shape);
 * `nowMs` turns HTTP-dates into delays. A form that cannot be read throws BAD_INPUT.
 */
export function adapt(raw, { protocol = "auto", nowMs } = {}) {
  const p = allocString(protocol);
  const r = allocString(jsonText(raw));
  const now = nowArgument(nowMs);
  const [status, adapted, error] = callOut(2, [p, r], (out, err) =>
    wasm._recourse_adapt_json(p.ptr, r.ptr, r.len, now, out, err));
  check(status, error);
  return JSON.parse(adapted);
}

// Headers as a plain object: a fetch Headers (or anything with entries()), or a plain record.
function headerRecord(headers) {
  if (!headers) return {};
  if (typeof headers.entries === "function") return Object.fromEntries(headers.entries());
  return Object.fromEntries(Object.entries(headers).filter(([, v]) => typeof v === "string"));
}

// A body text as JSON when it parses, else the text.
function bodyValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The envelope of a failed fetch() Response: its status, headers and body (read from a clone,
 * so the caller may still read it). Resolves to adapt()'s result.
 */
export async function fromResponse(response, options = {}) {
  const text = await response.clone().text();
  return adapt({ protocol: "http", status: response.status, headers: headerRecord(response.headers), body: bodyValue(text) }, { ...options, protocol: "http" });
}

// The raw form of an error without an HTTP status (an SDK's connection error, a rejected
// fetch()): a timeout by the error's class name, else its cause's code (ECONNREFUSED, ...) and
// messages, which the transport table reads (docs/adapters.md, "Transport errors").
export function transportForm(error) {
  const name = `${error?.constructor?.name ?? ""} ${error?.name ?? ""}`;
  if (/Timeout/.test(name)) return { protocol: "http", status: null, transportError: "timeout" };
  // fetch() wraps the socket's error: APIConnectionError <- TypeError "fetch failed" <- ECONNREFUSED.
  const parts = [];
  for (let e = error, depth = 0; e && depth < 8; e = e.cause, ++depth) {
    if (typeof e.code === "string") parts.push(e.code);
    if (typeof e.message === "string" && e.message) parts.push(e.message);
  }
  return { protocol: "http", status: null, transportError: parts.join(": ") || "connection error" };
}

// The status of an SDK's APIError: its own, or 200 for one thrown on an error event inside a
// stream (no status, `error` the event's data: openai 6.x and @anthropic-ai/sdk 0.137
// core/streaming), read as that stream's body (docs/adapters.md, "Event streams"); undefined for
// a connection error (no status, no body), read as a transport error.
function sdkStatus(error) {
  if (typeof error?.status === "number") return error.status;
  return error?.error !== undefined && error?.error !== null ? 200 : undefined;
}

/**
 * The envelope of an error the official `openai` package threw (APIError and its subclasses:
 * `status`, `headers`, and `error`, the body's "error" member; an error event mid-stream has no
 * status and reads as a 200's body; APIConnectionError and APIConnectionTimeoutError have no
 * status and read as transport errors).
 */
export function fromOpenAIError(error, options = {}) {
  const status = sdkStatus(error);
  if (status === undefined) return adapt(transportForm(error), { ...options, protocol: "http" });
  const body = error.error === undefined ? error.message : { error: error.error };
  return adapt({ protocol: "http", status, headers: headerRecord(error.headers), body }, { ...options, protocol: "http" });
}

/**
 * The envelope of an error the official `@anthropic-ai/sdk` package threw (APIError: `status`,
 * `headers`, and `error`, the whole body {"type": "error", "error": {...}}; an `event: error`
 * mid-stream has no status and reads as a 200's body; connection errors read as transport
 * errors).
 */
export function fromAnthropicError(error, options = {}) {
  const status = sdkStatus(error);
  if (status === undefined) return adapt(transportForm(error), { ...options, protocol: "http" });
  const body = error.error === undefined ? error.message : error.error;
  return adapt({ protocol: "http", status, headers: headerRecord(error.headers), body }, { ...options, protocol: "http" });
}
