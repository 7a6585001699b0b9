// Types of the recourse package (src/index.js): the engine on WebAssembly. docs/javascript.md has
// the guide; docs/schema/ the JSON Schemas of the envelope, the context and the decision.

/** The engine's version, "major.minor.patch". */
export const version: string;
/** The C API's ABI version the module implements (recourse.h). */
export const abi: { version: number; minor: number };

/** The C API's recourse_status values. */
export const Status: {
  readonly OK: 0;
  readonly INVALID_ARGUMENT: 1;
  readonly COMPILE_FAILED: 2;
  readonly BAD_INPUT: 3;
  readonly NO_MEMORY: 4;
  readonly INTERNAL: 5;
  readonly UNAVAILABLE: 6;
};

/** An error from the engine; `status` is one of Status's values. */
export class RecourseError extends Error {
  readonly status: number;
}

/** One policy source: a path for diagnostics and the policy text. */
export interface Source {
  path: string;
  text: string;
}

/** A compiler finding (docs/language.md lists every code). Positions are 1-based; 0: none. */
export interface Diagnostic {
  severity: "error" | "warning" | "note";
  code: string;
  file: string;
  line: number;
  /** The column in characters (Unicode code points). */
  column: number;
  /** The column in UTF-16 code units (a JavaScript string index + 1; LSP's default). */
  utf16Column: number;
  /** Bytes of UTF-8 from the start of the file to the position. */
  offset: number;
  message: string;
  help: string;
}

/** compile()'s result: `bundle` is null when any source has an error. */
export interface CompileResult {
  bundle: Bundle | null;
  diagnostics: Diagnostic[];
}

/** A failed call's envelope (docs/schema/envelope.schema.json): untrusted, read leniently. */
export interface Envelope {
  code?: string;
  message?: string;
  retryable?: boolean;
  field?: string;
  suggestion?: string;
  /** ms the server asked to wait. */
  retryAfterMs?: number;
  traceId?: string;
  [key: string]: unknown;
}

/** What the host knows about the failed call (docs/schema/context.schema.json): trusted, read strictly. */
export interface Context {
  tool?: string;
  idempotent?: boolean;
  /** Always send it: absent reads as "unknown", and the gate then refuses every retry of a non-idempotent tool. */
  sideEffect?: "none" | "unknown" | "committed";
  /** Calls made for this operation, >= 1. */
  attempt?: number;
  repairs?: number;
  elapsedMs?: number;
  arguments?: string[];
  maxAttempts?: number;
  deadlineMs?: number;
  operationId?: string;
  workflowId?: string;
  /** ms since the epoch. */
  nowMs?: number;
  [key: string]: unknown;
}

/** Each budget before the decision and after the call it leads to; null: unlimited. */
export interface Budget {
  before: number | null;
  after: number | null;
}

/** A decision (docs/schema/decision.schema.json). */
export interface Decision {
  route: "retry" | "repair" | "authorize" | "replace" | "degrade" | "escalate" | "stop";
  /** ms to wait before the retry (0 for other routes). */
  delayMs: number;
  jitterMs?: number;
  rule: string;
  reason?: string;
  target?: string;
  policy: string;
  policyHash: string;
  attempt: number;
  attemptsLeft: number | null;
  repairsLeft: number | null;
  retryAfterMs?: number;
  retryAt?: number;
  timeoutMs?: number;
  exhausted?: "retry_after" | "repeats" | "attempts" | "repairs" | "cost" | "deadline" | "retry_tokens";
  budgets: Record<"attempts" | "repairs" | "cost" | "timeMs", Budget>;
  idempotencyKey: "reuse" | "new" | "none";
  /** What was read as absent or assumed (docs/language.md, section 14). */
  warnings: { kind: string; field: string; message: string }[];
  traceId: string;
  modelMessage?: string;
  [key: string]: unknown;
}

/** decideFields()'s result: a decision's scalar fields ("" for an absent string). */
export interface DecisionFields {
  route: Decision["route"];
  delayMs: number;
  jitterMs: number;
  rule: string;
  reason: string;
  target: string;
  policy: string;
  policyHash: string;
  exhausted: string;
  traceId: string;
  attempt: number;
  attemptsLeft: number | undefined;
  repairsLeft: number | undefined;
  retryAfterMs: number | undefined;
  retryAt: number | undefined;
  timeoutMs: number | undefined;
  /** recourse::DecisionWarning bits. */
  warnings: number;
}

/** Why a decision came out as it did. */
export interface Explanation {
  policy: string;
  rules: { rule: string; line: number; column: number; matched: boolean; tests: { test: string; value: string; result: boolean }[] }[];
  /** The budget guard that overrode the rule's route, or "". */
  guard: string;
  decision: Decision;
}

/** One `test` block's outcome (docs/language.md, "Tests"). */
export interface TestResult {
  policy: string;
  name: string;
  file: string;
  /** Of the `test` keyword: 1-based line and column (characters), bytes from the file's start. */
  line: number;
  column: number;
  offset: number;
  passed: boolean;
  /** The expectation as written, e.g. "retry delay 250ms..20s". */
  expected: string;
  /** The decision in the same words, e.g. "retry rule transient delay 400ms". */
  actual: string;
  /** One line per expectation not met. */
  mismatches: string[];
  decision: Decision;
  /** The input the test decides. */
  envelope: Envelope;
  context: Context;
}

/** format()'s result: `text` is null when the text does not parse or would not format. */
export interface FormatResult {
  text: string | null;
  diagnostics: Diagnostic[];
}

/** Compiled policies. */
export class Bundle {
  private constructor();
  /** The decision; a bad context throws RecourseError (BAD_INPUT). Objects or JSON text. */
  decide(envelope: Envelope | string | unknown, context?: Context | string): Decision;
  /** decide() on JSON text in and out. */
  decideJson(envelopeJson: string, contextJson?: string): string;
  /** The rules tried and the guard that decided; throws BAD_INPUT without a policy for the tool. */
  explain(envelope: Envelope | string | unknown, context?: Context | string): Explanation;
  /**
   * decide() through the C structs, with no JSON either side (the hot-loop path). An envelope
   * field of the wrong type reads as absent without the JSON path's warning; only the struct's
   * envelope keys are read.
   */
  decideFields(envelope: Envelope, context?: Context): DecisionFields;
  /**
   * Compiles `sources` as the shadow candidate (C API 1.2 recourse_engine_load_candidate_sources):
   * every decision for a tool it has a policy for is decided by it too, read-only, and the
   * disagreements counted. Returns the compile's diagnostics (warnings); throws a RecourseError
   * COMPILE_FAILED with `diagnostics` when a source has an error (both bundles stay as they were).
   */
  loadCandidate(sources: string | Source[]): Diagnostic[];
  /** Drops the shadow candidate (recourse_engine_drop_candidate); the counters stay. */
  dropCandidate(): void;
  /** The shadow counters since the bundle was made (recourse_engine_shadow_json). */
  shadowCounters(): ShadowCounters;
  /** The decision tables of every policy, as `recourse compile --dump` prints them. */
  dump(): string;
  /** Runs the policies' own `test` blocks, policy after policy, each in file order. */
  runTests(): TestResult[];
  /** Releases the engine's memory now (else when collected). */
  free(): void;
}

/** What a shadow candidate decided otherwise than the live bundle (recourse::ShadowCounters). */
export interface ShadowCounters {
  /** Decisions the candidate also took. */
  decisions: number;
  /** Of those, the ones that differ in route, target, rule, delay, key directive or exhausted budget. */
  disagreements: number;
  /** Per policy: "live rule -> candidate rule" -> disagreements. */
  rules: Record<string, Record<string, number>>;
  /** Per kind of difference seen: disagreements. */
  differences: Partial<Record<"route" | "target" | "rule" | "delay" | "idempotencyKey" | "exhausted", number>>;
}

/** Compiles sources (or one text, as "policy.recourse") as one bundle. */
export function compile(sources: string | Source[]): CompileResult;

/** The canonical layout of one policy file's text (`recourse fmt`); `path` names it. */
export function format(text: string, path?: string): FormatResult;

/** An adapter's reading of a raw failure. */
export interface Adapted {
  envelope: Envelope;
  /** Which row of the adapter tables read it, e.g. "http 429". */
  mapping: string;
  warnings: { kind: string; field: string; message: string }[];
  /** What the protocol says of the call's idempotence (an HTTP method), or null. */
  idempotent: boolean | null;
}

export interface AdaptOptions {
  /** ms since the epoch: turns HTTP-dates (Retry-After) into delays. */
  nowMs?: number;
}

/** Reads a raw form (docs/adapters.md): http, grpc, mcp, jsonrpc, or auto (by its shape). */
export function adapt(raw: unknown, options?: AdaptOptions & { protocol?: "http" | "grpc" | "mcp" | "jsonrpc" | "auto" }): Adapted;
/** A failed fetch() Response (read from a clone). */
export function fromResponse(response: Response, options?: AdaptOptions): Promise<Adapted>;
/** An error thrown by the `openai` package (APIError, APIConnectionError, APIConnectionTimeoutError). */
export function fromOpenAIError(error: unknown, options?: AdaptOptions): Adapted;
/** An error thrown by the `@anthropic-ai/sdk` package. */
export function fromAnthropicError(error: unknown, options?: AdaptOptions): Adapted;

/** A circuit's state. */
export type Circuit = "closed" | "open" | "half_open";

/** gRFC A6 retry tokens of a tool, in milli-tokens (max_tokens x 1000, token_ratio x 1000). */
export interface BucketSpec {
  maxMilli: number;
  ratioMilli: number;
}

/** A circuit breaker's settings (recourse::BreakerSpec); ratioMilli 0: the ratio rule is off. */
export interface BreakerSpec {
  failures: number;
  ratioMilli: number;
  /** Outcomes kept, <= 64. */
  window: number;
  minCalls: number;
  cooldownMs: number;
  probeLeaseMs: number;
}

/** One tool's health as a store keeps it (recourse::ToolHealth). */
export interface ToolHealth {
  circuit: Circuit;
  consecutiveFailures: number;
  /** The last outcomes, newest first, "1" a failure (at most 64). */
  window: string;
  windowCalls: number;
  openedMs: number;
  /** The operation holding the half-open probe, "" when none. */
  probeOperation: string;
  /** When the probe's lease ends (ms since the epoch); 0: no probe out. */
  probeUntilMs: number;
  /** No probe before then (a server's wait, an operator's open); 0: none. */
  holdUntilMs: number;
  /** Retry tokens x 1000; -1: full, never spent. */
  milliTokens: number;
  /** An operator isolated the circuit: open until a reset. */
  isolated: boolean;
}

/** One operation's counters for one tool (recourse::OperationState). */
export interface OperationState {
  attempts: number;
  repairs: number;
  repeats: number;
  cost: number;
  startedMs: number;
  /** The last failure's 64-bit hash, as decimal text. */
  lastFailure: string;
  repairPending: boolean;
  pushbackAttempt: number;
}

/** A side-effect ledger entry as it reads now (recourse::LedgerEntry). */
export interface LedgerEntry {
  operation: string;
  state: "absent" | "pending" | "committed" | "released" | "unknown";
  idempotencyKey: string;
  updatedMs: number;
  leaseUntilMs: number;
  /** claim(): this call took the claim. */
  claimed: boolean;
}

/** What every operation takes: ms since the epoch (the Redis store reads its server's clock instead). */
interface At {
  nowMs?: number;
}

/** The operations of an async store (recourse::Store, docs/state.md), their arguments and answers. */
export interface StoreOperations {
  bucket: { args: At & { tool: string; event: "read" | "retry" | "success"; spec: BucketSpec }; answer: number };
  outcome: { args: At & { tool: string; operation: string; failed: boolean; spec: BreakerSpec }; answer: Circuit };
  probe: { args: At & { tool: string; operation: string; spec: BreakerSpec }; answer: Circuit };
  hold: { args: At & { tool: string; waitMs: number }; answer: Circuit };
  control: { args: At & { tool: string; command: "isolate" | "open" | "reset"; waitMs?: number }; answer: ToolHealth };
  vote: { args: At & { tool: string; worker: string; open: boolean; voteMs: number }; answer: number };
  tool: { args: At & { tool: string }; answer: ToolHealth };
  count: {
    args: At & { operation: string; event: { kind: "read" | "attempt" | "failure" | "decision" | "success"; cost?: number; failure?: string; repair?: boolean; pushback?: number } };
    answer: OperationState;
  };
  claim: { args: At & { operation: string; idempotencyKey: string; leaseMs: number }; answer: LedgerEntry };
  transition: { args: At & { operation: string; to: "committed" | "released" }; answer: LedgerEntry };
  read: { args: At & { operation: string }; answer: LedgerEntry };
  entries: { args: At & { limit: number }; answer: LedgerEntry[] };
}

/**
 * An async store: each operation atomic in the store, resolving to its answer, or null when the
 * store could not answer (the engine then falls back to local, conservative state).
 */
export type AsyncStore = {
  [K in keyof StoreOperations]: (args: StoreOperations[K]["args"]) => Promise<StoreOperations[K]["answer"] | null>;
} & {
  /**
   * How long (ms) one operation may take before it reads as unanswered (default
   * STORE_TIMEOUT_MS); an answer that is not JSON (a BigInt, a cycle) reads as unanswered too.
   */
  readonly timeoutMs?: number;
};

/** The default bound (ms) on one async store operation: 5000. */
export const STORE_TIMEOUT_MS: number;

/** The names of the store operations. */
export const storeOperations: readonly (keyof StoreOperations)[];

/** The in-memory store (this process): the engine's MemoryStore; its operations are AsyncStore's. */
export interface MemoryStore extends AsyncStore {}
export class MemoryStore {
  /** TTLs in ms after a record's last change: tools and operations (24 h), ledger entries (7 days). */
  constructor(options?: { stateTtlMs?: number; ledgerTtlMs?: number });
  readonly name: "memory";
  free(): void;
}

/** The key of an operation's counters for a tool in a store: "<scope>/<operation>/<tool>", "%" and "/" escaped. */
export function counterKey(scope: string, operationId: string, tool: string): string;
/**
 * The key of a run's counters in a store (recourse::Workflow): "<scope>/%RUN/<tool>", or
 * "<scope>/%RUN/%ALL" (tool omitted) for every tool of the run; the run is the workflow.
 */
export function runKey(scope: string, tool?: string): string;

/** Per-loop budget counters, in the engine's memory store or an async store. */
export class Workflow {
  constructor(options?: { scope?: string; store?: AsyncStore });
  readonly scope: string;
  readonly store: AsyncStore | null;
  toJSON(): unknown;
  free(): void;
}

/** Per-process tool health: breakers, retry tokens, the side-effect ledger's answer. */
export class Health {
  constructor(options?: { store?: AsyncStore });
  readonly store: AsyncStore | null;
  circuit(tool: string): Circuit;
  toJSON(): unknown;
  free(): void;
}

export interface RunnerSpec {
  tool: string;
  operationId: string;
  /** The call's arguments: any JSON value. */
  arguments?: unknown;
  workflowId?: string;
  /** ms from the first next(). */
  deadlineMs?: number;
  maxReplacements?: number;
  ledgerLeaseMs?: number;
  /** What the host knows of the tool's idempotence (a trusted MCP server's annotations); over the policy's `tool { idempotent }`. */
  idempotent?: boolean;
}

/** The runner's next action (docs/embedding.md, "Actions"). */
export interface Action {
  step: "call" | "wait" | "repair" | "authorize" | "escalate" | "done";
  tool: string;
  attempt: number;
  elapsedMs: number;
  arguments?: unknown;
  idempotencyKey?: string;
  timeoutMs?: number | null;
  waitMs?: number;
  ending?: "success" | "decided" | "committed" | "deadline" | "cancelled";
  decision?: Decision;
  envelope?: Envelope;
}

/** What the host reports (docs/embedding.md, "Outcomes"). */
export type Outcome =
  | { outcome: "success" }
  | { outcome: "failure"; envelope: Envelope; sideEffect?: "none" | "unknown" | "committed" }
  | { outcome: "failure"; raw: unknown; protocol?: string; sideEffect?: "none" | "unknown" | "committed" }
  | { outcome: "resume"; arguments?: unknown }
  | { outcome: "abandon" };

export interface RunOptions {
  /** Performs the call; `signal` is run()'s, to pass on (fetch's `signal`). */
  call(action: Action, signal?: AbortSignal): Promise<Outcome> | Outcome;
  ask?(action: Action, signal?: AbortSignal): Promise<Outcome> | Outcome;
  /** ms since the epoch; default Date.now. */
  clock?(): number;
  /** Waits `ms`; default a timer that `signal` ends. */
  sleep?(ms: number, signal?: AbortSignal): Promise<unknown>;
  /** Cancels the operation and ends a wait at once. */
  signal?: AbortSignal;
}

/** What an async store answered otherwise than the records read before the step. */
export interface Conflict {
  /** The operation, as the step made it ({op, ...its arguments}). */
  op: { op: keyof StoreOperations; [key: string]: unknown };
  /** The answer of the records read before the step, which the step went by. */
  staged: unknown;
  /** The store's answer; null: it could not take the write. */
  store: unknown;
}

/** One operation's recovery loop. */
export class Runner {
  constructor(bundle: Bundle, spec: RunnerSpec, state?: { workflow?: Workflow; health?: Health; ledger?: AsyncStore });
  readonly workflow: Workflow;
  readonly health: Health;
  /** The async stores' conflicts so far, oldest first. */
  readonly conflicts: Conflict[];
  /** The next action; with async stores, on the records read before the last step (use nextAsync()). */
  next(nowMs?: number): Action;
  report(outcome: Outcome, nowMs?: number): void;
  /** next() with the async stores read before it and written after it. */
  nextAsync(nowMs?: number): Promise<Action>;
  /** report() with the async stores read before it and written after it. */
  reportAsync(outcome: Outcome, nowMs?: number): Promise<void>;
  setArguments(args: unknown): void;
  cancel(): void;
  /** Runs the loop to its end: resolves to the done action. */
  run(options: RunOptions): Promise<Action & { step: "done" }>;
  free(): void;
}
