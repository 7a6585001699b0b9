// The recovery loop for JavaScript (docs/embedding.md, section 5): Workflow and Health over the
// engine's memory store or an async store (store.js: the records read before each step, the
// writes applied after), and Runner, the step machine (next/report) with run(), the async form
// whose waits are timers an AbortSignal ends.
import { nowArgument, transportForm } from "./adapters.js";
import { counterKey, runKey, stageOf, staged } from "./store.js";
import { RecourseError, Status, allocString, callOut, check, jsonText, takeString, wasm } from "./wasm.js";

const handles = new FinalizationRegistry(({ free, handle }) => free(handle));

// An owned C API handle: freed by free() or when its JavaScript object is collected.
class Handle {
  #handle;
  #free;
  constructor(handle, free, what) {
    if (!handle) throw new RecourseError(`${what}: out of WebAssembly memory`, Status.NO_MEMORY);
    this.#handle = handle;
    this.#free = free;
    handles.register(this, { free, handle }, this);
  }
  /** The C API's handle; throws after free(). */
  get handle() {
    if (!this.#handle) throw new RecourseError("the object was freed", Status.INVALID_ARGUMENT);
    return this.#handle;
  }
  /** Releases its memory now; unusable after. Idempotent. */
  free() {
    if (!this.#handle) return;
    handles.unregister(this);
    this.#free(this.#handle);
    this.#handle = 0;
  }
}

/**
 * Per-loop budget counters (recourse::Workflow): attempts, repairs, repeats and cost per operation
 * and tool, in the engine's memory store, or in `store` (an async store: store.js, MemoryStore
 * or recourse/redis's RedisStore) shared with other loops and processes under the key
 * counterKey(scope, operation, tool). One per loop; `scope` names the workflow.
 */
export class Workflow extends Handle {
  constructor({ scope = "", store } = {}) {
    if (typeof scope !== "string") throw new TypeError("Workflow: scope must be a string");
    const stage = store ? stageOf(store) : null;
    const s = allocString(scope);
    try {
      super(wasm._recourse_workflow_new(stage ? stage.handle : 0, s.ptr), (h) => wasm._recourse_workflow_free(h), "Workflow");
    } finally {
      wasm._free(s.ptr);
    }
    /** The workflow's scope, and its async store (null: the engine's memory store). */
    this.scope = scope;
    this.store = store ?? null;
  }
  /** The counters as recourse::Workflow::to_json writes them. */
  toJSON() {
    return JSON.parse(takeString(wasm._recourse_workflow_json(this.handle)));
  }
}

const circuits = ["closed", "open", "half_open"];

/**
 * Per-process tool health (recourse::Health): breakers, gRFC A6 retry tokens and the side-effect
 * ledger, in the engine's memory store, or in `store` (an async store) shared with other
 * processes: the retry tokens and the ledger's answer, and the breakers of policies whose
 * breaker says `scope = shared` (others stay in the process). Share one among the runners of a
 * process.
 */
export class Health extends Handle {
  constructor({ store } = {}) {
    const stage = store ? stageOf(store) : null;
    super(wasm._recourse_health_new(stage ? stage.handle : 0), (h) => wasm._recourse_health_free(h), "Health");
    /** Its async store (null: the engine's memory store). */
    this.store = store ?? null;
  }
  /** `tool`'s circuit now: "closed", "open" or "half_open". */
  circuit(tool) {
    const t = allocString(tool);
    const sp = wasm.stackSave();
    try {
      const out = wasm.stackAlloc(4);
      check(wasm._recourse_health_circuit(this.handle, t.ptr, out));
      return circuits[wasm.HEAP32[out >> 2]];
    } finally {
      wasm.stackRestore(sp);
      wasm._free(t.ptr);
    }
  }
  /** The local state as recourse::Health::to_json writes it. */
  toJSON() {
    return JSON.parse(takeString(wasm._recourse_health_json(this.handle)));
  }
}

// What a call the circuit refused reads as (the C++ runner's refusal: docs/embedding.md).
const refusal = Object.freeze({ code: "TRANSIENT", retryable: true, message: "the circuit of this tool is open: the call was not made" });

// A wait of `ms` that `signal` ends early (resolving false), else true.
function abortableSleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const done = (finished) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(finished);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * One operation's recovery loop under a Bundle (recourse::Runner). `spec`: { tool, operationId,
 * arguments (any JSON value), workflowId, deadlineMs, maxReplacements, ledgerLeaseMs, idempotent }; tool and
 * operationId are required. `workflow` (default: a new one) and `health` (default: one shared
 * by the runners made without one) keep the counts; `ledger` (an async store; default none)
 * keeps the side-effect ledger: a call of a tool that is not idempotent claims the operation
 * first, and an operation another process committed ends "committed". The bundle, workflow and
 * health must outlive the runner.
 */
export class Runner extends Handle {
  static #health;
  #keep;
  #stages;
  #tools;
  constructor(bundle, spec, { workflow = new Workflow(), health = (Runner.#health ??= new Health()), ledger } = {}) {
    const s = allocString(jsonText(spec));
    const ledgerStage = ledger ? stageOf(ledger) : null;
    let made = 0;
    const [status, error] = callOut(1, [s], (err) => {
      const out = wasm.stackAlloc(4);
      const st = wasm._recourse_runner_new(bundle.handle, workflow.handle, health.handle, ledgerStage ? ledgerStage.handle : 0, s.ptr, s.len, out, err);
      made = wasm.HEAPU32[out >> 2];
      return st;
    });
    check(status, error);
    super(made, (h) => wasm._recourse_runner_free(h), "Runner");
    this.#keep = { bundle, workflow, health, spec: typeof spec === "string" ? JSON.parse(spec) : spec };
    this.#stages = [...new Set([workflow.store, health.store, ledger].filter(Boolean).map(stageOf))];
    this.#tools = new Set([this.#keep.spec.tool]);
    /**
     * What the async stores answered otherwise than the records read before the step
     * ({op, staged, store}: a write the store could not take, store null; a probe or claim
     * another process changed meanwhile), oldest first.
     */
    this.conflicts = [];
  }

  /** The workflow and health this runner counts in. */
  get workflow() {
    return this.#keep.workflow;
  }
  get health() {
    return this.#keep.health;
  }

  /**
   * The next action at `nowMs` (ms since the epoch): { step: "call" | "wait" | "repair" |
   * "authorize" | "escalate" | "done", tool, attempt, elapsedMs, ... } (docs/embedding.md,
   * "Actions").
   */
  next(nowMs = Date.now()) {
    const now = nowArgument(nowMs);
    const [status, action, error] = callOut(2, [], (out, err) => wasm._recourse_runner_next(this.handle, now, out, err));
    check(status, error);
    return JSON.parse(action);
  }

  /**
   * Reports the outcome of the last action at `nowMs`: { outcome: "success" | "failure" |
   * "resume" | "abandon", envelope | raw + protocol, sideEffect, arguments }. Throws BAD_INPUT
   * for an outcome that answers no pending action (the runner is then unchanged).
   */
  report(outcome, nowMs = Date.now()) {
    const o = allocString(jsonText(outcome));
    const now = nowArgument(nowMs);
    const [status, error] = callOut(1, [o], (err) => wasm._recourse_runner_report(this.handle, o.ptr, o.len, now, err));
    check(status, error);
  }

  /** Changes the next call's arguments (a changed body takes a new idempotency key). */
  setArguments(args) {
    const a = allocString(jsonText(args));
    const [status, error] = callOut(1, [a], (err) => wasm._recourse_runner_set_arguments(this.handle, a.ptr, a.len, err));
    check(status, error);
  }

  // Runs `step` (next() or report() at nowMs) on the records of the async stores: read before,
  // written after (store.js, staged()). Without an async store, just the step.
  async #staged(nowMs, step) {
    if (!this.#stages.length) return { result: step(), conflicts: [] };
    const { scope } = this.#keep.workflow;
    const tools = [...this.#tools];
    // Each tool's counters for this operation and for the run, and the run's over every tool.
    const operations = [runKey(scope), ...tools.flatMap((t) => [counterKey(scope, this.#keep.spec.operationId, t), runKey(scope, t)])];
    const want = { tools, operations, ledger: [this.#keep.spec.operationId] };
    const out = await staged(this.#stages, want, nowMs, step);
    for (const miss of out.misses) if (miss.kind === "tool") this.#tools.add(miss.key);
    this.conflicts.push(...out.conflicts);
    return out;
  }

  /**
   * next() on the async stores' records (Workflow, Health and ledger stores): reads what the
   * step needs, decides, then writes what it changed back, each operation atomic in its store.
   * Resolves to the action. Where the store answered the step otherwise than the records read
   * (another process moved first): an operation another process committed resolves to done
   * ("committed") without the call; a half-open probe another process took is not called either
   * but reported as a failure of the open circuit's ("TRANSIENT", side effect none, which takes a
   * retry token as any such failure does), and the next action is decided with the circuit open.
   */
  async nextAsync(nowMs = Date.now()) {
    for (;;) {
      const { result: action, conflicts } = await this.#staged(nowMs, () => this.next(nowMs));
      if (action.tool) this.#tools.add(action.tool);
      if (action.step !== "call") return action;
      if (conflicts.some((c) => c.op.op === "claim" && c.store?.state === "committed")) {
        this.cancel();
        return { ...action, step: "done", ending: "committed" };
      }
      if (!conflicts.some((c) => c.op.op === "probe" && c.staged === "half_open" && c.store === "open")) return action;
      await this.reportAsync({ outcome: "failure", envelope: refusal, sideEffect: "none" }, nowMs);
    }
  }

  /** report() on the async stores' records, as nextAsync(). */
  async reportAsync(outcome, nowMs = Date.now()) {
    await this.#staged(nowMs, () => this.report(outcome, nowMs));
  }

  /** Ends the operation: the next next() is done ("cancelled"). */
  cancel() {
    wasm._recourse_runner_cancel(this.handle);
  }

  /**
   * Runs the loop to its end and resolves to the `done` action (each step through nextAsync()
   * and reportAsync(), so the async stores are read before and written after it).
   * `call(action, signal)` performs a call and resolves to an outcome ({outcome: "success"} or a
   * failure; a rejection is a failure read as a transport error, by its message and its cause's
   * code); `ask(action, signal)` answers repair, authorize and escalate (default: abandon);
   * `clock()` gives ms since the epoch (default Date.now); `sleep(ms, signal)` waits (default: a
   * timer); `signal` (an AbortSignal) cancels the operation and ends a wait at once.
   */
  async run({ call, ask = async () => ({ outcome: "abandon" }), clock = Date.now, sleep = abortableSleep, signal } = {}) {
    if (typeof call !== "function") throw new TypeError("run: call(action) is required");
    const onAbort = () => this.cancel();
    if (signal?.aborted) this.cancel();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        const action = await this.nextAsync(clock());
        if (action.step === "done") return action;
        if (action.step === "wait") {
          await sleep(action.waitMs, signal);
          continue;
        }
        let outcome;
        try {
          outcome = action.step === "call" ? await call(action, signal) : await ask(action, signal);
        } catch (error) {
          if (action.step !== "call") throw error;
          // Aborted: the operation is cancelled, and the call's rejection is not its failure.
          if (signal?.aborted) continue;
          outcome = { outcome: "failure", raw: transportForm(error) };
        }
        await this.reportAsync(outcome, clock());
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }
}
