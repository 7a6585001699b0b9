// recourse/mcp: recovery for the tool calls of an MCP client (the official SDK's Client,
// @modelcontextprotocol/sdk 1.32.2, protocol revision 2025-11-25). McpRecovery.callTool() runs
// Client.callTool under a Runner (runner.js): every failure, a JSON-RPC error and a result with
// `isError` alike, is read by the engine's MCP adapter (docs/adapters.md, "JSON-RPC and MCP") and
// decided by the tool's policy; retries wait the decided backoff (an AbortSignal ends the wait);
// the other routes come back to the agent as a structured result whose only text is the
// decision's model-safe `modelMessage`. The SDK is not imported here: any object with the
// Client's callTool and listTools works (a peer dependency for the types only).
import { randomUUID } from "node:crypto";

import { transportForm } from "./adapters.js";
import { Runner, Workflow } from "./runner.js";

// Codes of JSON-RPC errors a server sends before a tool runs: the request was refused, so the
// call changed nothing (JSON-RPC 2.0 section 5.1: parse error, invalid request, method not
// found, invalid params; MCP 2025-11-25 server/tools "Error Handling": unknown tools and invalid
// arguments are protocol errors; -32002 resource not found, server/resources; -32042 URL
// elicitation required, client/elicitation; -32020 to -32022, 2026-07-28 basic "Error Codes").
// Other codes (-32603 internal error, -32000 to -32019, SDK 1.32.2's own -32001 RequestTimeout
// and -32000 ConnectionClosed when the answer never came) leave the side effect unknown.
const REFUSED = new Set([-32700, -32600, -32601, -32602, -32002, -32042, -32020, -32021, -32022]);

// Client.callTool's own errors thrown after the server answered (SDK 1.32.2 client/index.js
// callTool: a result that breaks the tool's outputSchema): the tool ran, so they are no refusal.
const CLIENT_SIDE = /has an output schema but did not return structured content|Structured content does not match the tool's output schema|Failed to validate structured content/;

/**
 * The idempotence MCP tool annotations imply, as the engine's adapter reads them
 * (recourse::idempotent_from_annotations, engine/include/recourse/adapters.hpp): readOnlyHint
 * or idempotentHint true: true; destructiveHint true with neither: false; else undefined. MCP
 * 2025-11-25 server/tools ("ToolAnnotations"): hints from an untrusted server must not be
 * relied on, so undefined unless `trusted`.
 */
export function idempotentFromAnnotations(annotations, trusted) {
  if (!trusted || !annotations || typeof annotations !== "object") return undefined;
  if (annotations.readOnlyHint === true || annotations.idempotentHint === true) return true;
  if (annotations.destructiveHint === true) return false;
  return undefined;
}

// The JSON-RPC error of a rejected Client.callTool: the SDK's McpError (`code`, `data`, and a
// message the SDK prefixes with "MCP error CODE: ", types.js in 1.32.2), or undefined for an
// error without an integer code (a TypeError "Not connected", a schema parse error).
function jsonRpcError(error) {
  if (!Number.isInteger(error?.code)) return undefined;
  const message = String(error.message ?? "").replace(`MCP error ${error.code}: `, "");
  return { code: error.code, message, ...(error.data === undefined ? {} : { data: error.data }) };
}

/**
 * Recovery for one MCP client's tool calls. `client`: the SDK's Client (connected), or any
 * object with its callTool(params, resultSchema, requestOptions) and listTools(params). `bundle`:
 * compiled policies, one per tool (or "*"). Options:
 * - `trusted` (default false): the host trusts this server's tool annotations (MCP 2025-11-25
 *   server/tools: "clients MUST consider tool annotations to be untrusted unless they come from
 *   trusted servers"); then listTools()'s idempotentHint, readOnlyHint and destructiveHint
 *   become the runner's `idempotent` (over the policy's `tool { idempotent }`), and a failed
 *   call of a read-only tool has side effect "none".
 * - `prefix` (default ""): the policy of tool NAME is PREFIX + NAME (tools of two servers apart).
 * - `health`: the Health whose breakers admit each call (default: the one every Runner made
 *   without one shares, so a circuit opened by one caller stops the others in the process).
 * - `workflow`: the per-loop counters (default: one for this object).
 * - `ask(action, signal)`: answers repair, authorize and escalate itself (resume or abandon,
 *   docs/embedding.md "Outcomes"); default: abandon, and the route comes back to the agent.
 * - `sideEffect({tool, error, result})`: what a failed call did, when the host knows better
 *   ("none", "unknown", "committed"; undefined: the reading below).
 * - `keyMeta` (default "idempotency-key"): the `_meta` member an idempotency key is sent in, for
 *   tools whose policy says `idempotency_keys = true` (MCP 2025-11-25 basic "_meta": a name
 *   without prefix; the name of the IETF Idempotency-Key header).
 * - `maxReplacements` (default 0): replacements the runner follows by calling the target on
 *   this client; 0 returns `replace` and its target to the agent.
 * - `clock`, `sleep`: the runner's time (tests pass fake ones).
 */
export class McpRecovery {
  #client;
  #bundle;
  #options;
  #annotations = new Map();
  #listed = false;

  constructor(client, bundle, options = {}) {
    if (typeof client?.callTool !== "function") throw new TypeError("McpRecovery: client.callTool is required");
    if (typeof bundle?.decide !== "function") throw new TypeError("McpRecovery: a compiled bundle is required");
    this.#client = client;
    this.#bundle = bundle;
    this.#options = { trusted: false, prefix: "", keyMeta: "idempotency-key", maxReplacements: 0, ...options };
    this.#options.workflow ??= new Workflow();
  }

  /**
   * Lists the server's tools (every page of tools/list, MCP 2025-11-25 server/tools) and keeps
   * each one's `annotations`; resolves to the tools. callTool() lists once by itself for a
   * trusted server.
   */
  async listTools(requestOptions) {
    const tools = [];
    let cursor;
    do {
      const page = await this.#client.listTools(cursor === undefined ? undefined : { cursor }, requestOptions);
      tools.push(...(page?.tools ?? []));
      cursor = page?.nextCursor;
    } while (typeof cursor === "string" && cursor !== "");
    this.#annotations = new Map(tools.map((t) => [t.name, t.annotations ?? {}]));
    this.#listed = true;
    return tools;
  }

  /** The annotations listTools() read for `name` (undefined: not listed). */
  annotations(name) {
    return this.#annotations.get(name);
  }

  /**
   * Calls tool `params.name` with `params.arguments` and recovers from its failures. `options`:
   * `signal` (cancels; a wait ends at once and the promise rejects with the signal's reason),
   * `operationId` (default: a new UUID; pass the last one when the agent's next call continues
   * the same operation, a repair or an authorization, so its budgets carry on), `workflowId`,
   * `deadlineMs` (the whole operation's time), `timeout` (ms per request when the policy sets
   * none; the SDK's default is 60 s), and `requestOptions` for Client.callTool. Resolves to
   * { ok: true, tool, attempts, result } (the CallToolResult) or { ok: false, tool, attempts,
   * route, ending, modelMessage, target, retryAfterMs, decision }: no text of the server's
   * except the decision's modelMessage (stripped, redacted, injected instructions flagged:
   * docs/adapters.md, "Model-facing text").
   */
  async callTool(params, options = {}) {
    const { name } = params ?? {};
    if (typeof name !== "string" || name === "") throw new TypeError("callTool: params.name must be a tool name");
    const o = this.#options;
    if (o.trusted && !this.#listed && typeof this.#client.listTools === "function") await this.listTools(options.requestOptions);
    const idempotent = idempotentFromAnnotations(this.#annotations.get(name), o.trusted);
    const spec = {
      tool: o.prefix + name,
      operationId: options.operationId ?? randomUUID(),
      maxReplacements: o.maxReplacements,
      ...(params.arguments === undefined ? {} : { arguments: params.arguments }),
      ...(options.workflowId === undefined ? {} : { workflowId: options.workflowId }),
      ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
      ...(idempotent === undefined ? {} : { idempotent }),
    };
    const runner = new Runner(this.#bundle, spec, { workflow: o.workflow, ...(o.health ? { health: o.health } : {}) });
    let result;
    try {
      const done = await runner.run({
        signal: options.signal,
        ask: o.ask,
        clock: o.clock,
        sleep: o.sleep,
        call: async (action, signal) => {
          const tool = this.#name(action.tool);
          const meta = action.idempotencyKey ? { _meta: { ...params._meta, [o.keyMeta]: action.idempotencyKey } } : {};
          // The runner's arguments (a resumed repair's included); MCP's are an object or absent.
          const args = action.arguments !== null && typeof action.arguments === "object" ? { arguments: action.arguments } : {};
          const request = { ...params, name: tool, ...meta, ...args };
          const timeout = action.timeoutMs ?? options.timeout;
          // A rejection is a failure whatever was thrown (null and undefined included); a result
          // is a success only as a CallToolResult object without isError.
          let threw = false;
          let error;
          try {
            result = await this.#client.callTool(request, undefined, { ...options.requestOptions, signal, ...(timeout === undefined ? {} : { timeout }) });
          } catch (e) {
            if (signal?.aborted) throw e;
            threw = true;
            error = e;
            result = undefined;
          }
          if (!threw && result !== null && typeof result === "object" && result.isError !== true) return { outcome: "success" };
          return this.#failure(tool, threw, error, result);
        },
      });
      if (done.ending === "cancelled" && options.signal?.aborted) throw options.signal.reason;
      if (done.ending === "success") return { ok: true, tool: this.#name(done.tool), attempts: done.attempt, result };
      const d = done.decision ?? {};
      return {
        ok: false,
        tool: this.#name(done.tool),
        attempts: done.attempt,
        route: done.ending === "deadline" ? "stop" : d.route ?? "stop",
        ending: done.ending,
        modelMessage: d.modelMessage ?? `The tool call failed (${done.ending}).`,
        ...(d.target ? { target: d.target } : {}),
        ...(d.retryAfterMs === undefined ? {} : { retryAfterMs: d.retryAfterMs }),
        decision: d,
      };
    } finally {
      runner.free();
    }
  }

  // The MCP tool name of a policy's tool name (without the prefix).
  #name(tool) {
    const { prefix } = this.#options;
    return tool.startsWith(prefix) ? tool.slice(prefix.length) : tool;
  }

  // The outcome of a failed call: the JSON-RPC error or the isError result as the MCP adapter's
  // raw form, with what the call did downstream.
  #failure(tool, threw, error, result) {
    const rpc = threw ? jsonRpcError(error) : undefined;
    const annotations = this.#annotations.get(tool);
    let sideEffect = this.#options.sideEffect?.({ tool, error, result });
    if (sideEffect === undefined) {
      const readOnly = this.#options.trusted && annotations?.readOnlyHint === true;
      const refused = rpc !== undefined && REFUSED.has(rpc.code) && !CLIENT_SIDE.test(rpc.message);
      sideEffect = readOnly || refused ? "none" : "unknown";
    }
    // An error without a JSON-RPC code (the SDK's "Not connected", a socket's) reads as a
    // transport error, as run() reads a rejected call.
    if (threw && rpc === undefined) return { outcome: "failure", raw: transportForm(error), sideEffect };
    const raw = rpc ? { protocol: "mcp", error: rpc } : { protocol: "mcp", result };
    // An untrusted server's annotations go to the adapter, whose decision then warns that they
    // were not believed (a trusted server's are the runner's `idempotent` already).
    if (annotations && !rpc && !this.#options.trusted) raw.annotations = annotations;
    return { outcome: "failure", raw, sideEffect };
  }
}
