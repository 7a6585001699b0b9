// Types of recourse/mcp (src/mcp.js): recovery for an MCP client's tool calls. The client is the
// official SDK's (@modelcontextprotocol/sdk, an optional peer dependency; 1.32.2, MCP 2025-11-25).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";

import type { Action, Bundle, Decision, Health, Outcome, Workflow } from "./index.js";

/** What McpRecovery needs of the SDK's Client. */
export type McpClient = Pick<Client, "callTool" | "listTools">;

export interface McpRecoveryOptions {
  /** The host trusts this server's tool annotations (default false; MCP 2025-11-25 server/tools). */
  trusted?: boolean;
  /** The policy of tool NAME is PREFIX + NAME (default ""). */
  prefix?: string;
  /** The breakers that admit each call (default: the one every Runner made without one shares). */
  health?: Health;
  /** Per-loop counters (default: one for this McpRecovery). */
  workflow?: Workflow;
  /** Answers repair, authorize and escalate (default: abandon, and the route comes back to the agent). */
  ask?(action: Action, signal?: AbortSignal): Promise<Outcome> | Outcome;
  /** What a failed call did downstream, when the host knows better; undefined: recourse's reading. */
  sideEffect?(failure: { tool: string; error?: unknown; result?: CallToolResult }): "none" | "unknown" | "committed" | undefined;
  /** The `_meta` member an idempotency key is sent in (default "idempotency-key"). */
  keyMeta?: string;
  /** Replacements followed by calling the target on this client (default 0: returned to the agent). */
  maxReplacements?: number;
  /** ms since the epoch (default Date.now). */
  clock?(): number;
  /** Waits `ms` (default: a timer the signal ends). */
  sleep?(ms: number, signal?: AbortSignal): Promise<unknown>;
}

export interface CallOptions {
  /** Cancels the operation: a wait ends at once and callTool rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The operation's id (default: a new UUID); the last one continues an operation's budgets. */
  operationId?: string;
  workflowId?: string;
  /** The whole operation's time, ms. */
  deadlineMs?: number;
  /** ms per request when the policy sets no try_timeout (the SDK's default: 60 s). */
  timeout?: number;
  /** Passed to Client.callTool (onprogress, resetTimeoutOnProgress, maxTotalTimeout, ...). */
  requestOptions?: Parameters<Client["callTool"]>[2];
}

/** A call that succeeded, perhaps after retries. */
export interface RecoveredCall {
  ok: true;
  tool: string;
  /** Calls of `tool` made. */
  attempts: number;
  result: CallToolResult;
}

/** A call recourse stopped: the only text is the model-safe modelMessage. */
export interface FailedCall {
  ok: false;
  tool: string;
  attempts: number;
  route: "repair" | "authorize" | "escalate" | "replace" | "degrade" | "stop";
  ending: "decided" | "deadline" | "committed" | "cancelled";
  /** The failure for the model: stripped, redacted, injected instructions flagged (docs/adapters.md). */
  modelMessage: string;
  /** replace: the tool to call instead (the policy's). */
  target?: string;
  /** ms the server asked to wait. */
  retryAfterMs?: number;
  /** The decision, for the host's logs. */
  decision: Decision;
}

/** Recovery for one MCP client's tool calls (docs/javascript.md, "MCP"). */
export class McpRecovery {
  constructor(client: McpClient, bundle: Bundle, options?: McpRecoveryOptions);
  /** Every page of tools/list; keeps each tool's annotations. */
  listTools(requestOptions?: Parameters<Client["listTools"]>[1]): Promise<Tool[]>;
  /** The annotations listTools() read for `name`. */
  annotations(name: string): ToolAnnotations | undefined;
  /** Calls the tool and recovers from its failures by its policy. */
  callTool(params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> }, options?: CallOptions): Promise<RecoveredCall | FailedCall>;
}

/** The idempotence annotations imply (recourse::idempotent_from_annotations); undefined unless trusted. */
export function idempotentFromAnnotations(annotations: ToolAnnotations | undefined, trusted: boolean): boolean | undefined;
