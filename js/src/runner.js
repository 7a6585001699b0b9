// The recovery loop for JavaScript (docs/embedding.md, section 5): Workflow and Health over the
// engine's memory store, and Runner, the step machine (next/report) with run(), the async form
// whose waits are timers an AbortSignal ends.
import { nowArgument, transportForm } from "./adapters.js";
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
 * and tool, in the engine's memory store. One per loop; `scope` names the workflow.
 */
export class Workflow extends Handle {
  constructor({ scope = "" } = {}) {
    const s = allocString(scope);
    try {
      super(wasm._recourse_workflow_new(0, s.ptr), (h) => wasm._recourse_workflow_free(h), "Workflow");
    } finally {
      wasm._free(s.ptr);
    }
  }
  /** The counters as recourse::Workflow::to_json writes them. */
  toJSON() {
    return JSON.parse(takeString(wasm._recourse_workflow_json(this.handle)));
  }
}

const circuits = ["closed", "open", "half_open"];

/**
 * Per-process tool health (recourse::Health): breakers, gRFC A6 retry tokens and the side-effect
 * ledger, in the engine's memory store. Share one among the runners of a process.
 */
export class Health extends Handle {
  constructor() {
    super(wasm._recourse_health_new(0), (h) => wasm._recourse_health_free(h), "Health");
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
 * by the runners made without one) keep the counts. The bundle, workflow and health must
 * outlive the runner.
 */
export class Runner extends Handle {
  static #health;
  #keep;
  constructor(bundle, spec, { workflow = new Workflow(), health = (Runner.#health ??= new Health()) } = {}) {
    const s = allocString(jsonText(spec));
    let made = 0;
    const [status, error] = callOut(1, [s], (err) => {
      const out = wasm.stackAlloc(4);
      const st = wasm._recourse_runner_new(bundle.handle, workflow.handle, health.handle, 0, s.ptr, s.len, out, err);
      made = wasm.HEAPU32[out >> 2];
      return st;
    });
    check(status, error);
    super(made, (h) => wasm._recourse_runner_free(h), "Runner");
    this.#keep = { bundle, workflow, health };
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

  /** Ends the operation: the next next() is done ("cancelled"). */
  cancel() {
    wasm._recourse_runner_cancel(this.handle);
  }

  /**
   * Runs the loop to its end and resolves to the `done` action. `call(action, signal)` performs a call
   * and resolves to an outcome ({outcome: "success"} or a failure; a rejection is a failure read
   * as a transport error, by its message and its cause's code); `ask(action, signal)` answers repair, authorize and escalate (default:
   * abandon); `clock()` gives ms since the epoch (default Date.now); `sleep(ms, signal)` waits
   * (default: a timer); `signal` (an AbortSignal) cancels the operation and ends a wait at once.
   */
  async run({ call, ask = async () => ({ outcome: "abandon" }), clock = Date.now, sleep = abortableSleep, signal } = {}) {
    if (typeof call !== "function") throw new TypeError("run: call(action) is required");
    const onAbort = () => this.cancel();
    if (signal?.aborted) this.cancel();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        const action = this.next(clock());
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
        this.report(outcome, clock());
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }
}
