// State shared across calls and processes (docs/javascript.md, "State"): the async store
// interface, the memory store built in, and the staging that keeps the engine's steps
// synchronous in WebAssembly while a store answers asynchronously. Before a step the records the
// step needs are read from the store (read()), loaded into the module's staged store
// (js/wasm/staged.hpp) and the step runs on them; after it, the operations the step wrote are
// applied to the store one at a time (write()), each atomic there, so writers in other processes
// merge as they do on the C++ stores.
import { RecourseError, Status, allocString, callOut, check, takeString, wasm } from "./wasm.js";

/** The store operations (recourse::Store), each a method of an async store. */
export const storeOperations = Object.freeze([
  "bucket", "outcome", "probe", "hold", "control", "vote", "tool", "count", "claim", "transition", "read", "entries",
]);

const stores = new FinalizationRegistry((handle) => wasm._recourse_store_free(handle));

// A store handle of the module's (a memory or a staged store), freed with its object.
function ownHandle(object, handle, what) {
  if (!handle) throw new RecourseError(`${what}: out of WebAssembly memory`, Status.NO_MEMORY);
  stores.register(object, handle, object);
  return handle;
}

/** Applies one operation ({op, ...its arguments}) to a module store handle: its answer. */
function applyTo(handle, op) {
  const o = allocString(JSON.stringify(op));
  const [status, answer, error] = callOut(2, [o], (out, err) => wasm._recourse_js_store_apply(handle, o.ptr, o.len, out, err));
  check(status, error);
  return JSON.parse(answer);
}

function ttl(value, name) {
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a whole number of ms >= 1`);
  return BigInt(value);
}

/**
 * The in-memory store (recourse::MemoryStore in the module): this process only. Its operations
 * resolve at once, with the engine's rules (engine/src/store/logic.cpp). Records expire
 * `stateTtlMs` after their last change (tools, operations; default 24 h) and `ledgerTtlMs`
 * (ledger entries; default 7 days).
 */
export class MemoryStore {
  #handle;
  constructor({ stateTtlMs = 86_400_000, ledgerTtlMs = 604_800_000 } = {}) {
    const handle = wasm._recourse_js_memory_store(ttl(stateTtlMs, "stateTtlMs"), ttl(ledgerTtlMs, "ledgerTtlMs"));
    this.#handle = ownHandle(this, handle, "MemoryStore");
  }
  /** "memory". */
  get name() {
    return "memory";
  }
  /** Releases its memory now; unusable after. Idempotent. */
  free() {
    if (!this.#handle) return;
    stores.unregister(this);
    wasm._recourse_store_free(this.#handle);
    this.#handle = 0;
  }
  static {
    for (const name of storeOperations)
      this.prototype[name] = async function (args) {
        if (!this.#handle) throw new RecourseError("the store was freed", Status.INVALID_ARGUMENT);
        return applyTo(this.#handle, { ...args, op: name });
      };
  }
}

/**
 * The key of (operation, tool)'s counters in a store (recourse::Workflow): "<scope>/<operation
 * id>/<tool>", "<operation id>/<tool>" without a scope, the ids with "%" and "/" escaped as %25
 * and %2F.
 */
export function counterKey(scope, operationId, tool) {
  return `${scope ? `${scope}/` : ""}${keyPart(operationId)}/${keyPart(tool)}`;
}

/**
 * The key of a run's counters in a store (recourse::Workflow::run_key): "<scope>/%RUN/<tool>",
 * or "<scope>/%RUN/%ALL" for every tool of the run (`tool` undefined). No escaped id is "%RUN" or
 * "%ALL", so no operation or tool shares these keys.
 */
export function runKey(scope, tool) {
  return `${scope ? `${scope}/` : ""}%RUN/${tool === undefined ? "%ALL" : keyPart(tool)}`;
}

// An id as a part of a store key: "%" and "/" escaped as %25 and %2F.
const keyPart = (s) => s.replaceAll("%", "%25").replaceAll("/", "%2F");

// The operations whose answer steers the step that made them: the half-open probe's lease and
// the ledger's claim. When the store answers them otherwise than the staged copy did (another
// process changed the record between the read and the write), write() reports a conflict.
const steering = {
  probe: (a) => a,
  claim: (a) => a && `${a.claimed} ${a.state}`,
};

/** How long an async store's operation may take (ms) before it reads as unanswered, unless the store says (its `timeoutMs`). */
export const STORE_TIMEOUT_MS = 5000;

// An operation's answer, or null when the store could not answer: it rejected, threw, did not
// settle within `timeoutMs`, or answered with what is not JSON (a BigInt, a cycle, a throwing
// getter), which no record can be read from.
async function settle(call, timeoutMs) {
  let timer;
  try {
    const bound = new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs, null)));
    const answer = (await Promise.race([Promise.resolve().then(call), bound])) ?? null;
    JSON.stringify(answer);
    return answer;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The staged copy of one async store in the module (a recourse_store whose Workflow, Health and
 * ledger handles read and write it), one per store (stageOf()).
 */
class Stage {
  constructor(store) {
    for (const name of storeOperations)
      if (typeof store?.[name] !== "function") throw new TypeError(`store: ${name}() is missing (an async store has ${storeOperations.join(", ")})`);
    this.store = store;
    const t = store.timeoutMs;
    this.timeoutMs = Number.isFinite(t) && t > 0 ? t : STORE_TIMEOUT_MS;
    this.handle = ownHandle(this, wasm._recourse_js_staged_store(), "staged store");
  }

  /**
   * Reads the records of `tools` (names), `operations` (counter keys) and `ledger` (operation
   * ids) at `nowMs` from the store: {tools, operations, ledger}, each record false when the
   * store could not answer.
   */
  async read({ tools = [], operations = [], ledger = [] }, nowMs) {
    const records = { tools: {}, operations: {}, ledger: {} };
    const fetch = async (member, key, call) => {
      records[member][key] = (await settle(call, this.timeoutMs)) ?? false;
    };
    await Promise.all([
      ...tools.map((tool) => fetch("tools", tool, () => this.store.tool({ tool, nowMs }))),
      ...operations.map((operation) => fetch("operations", operation, () => this.store.count({ operation, event: { kind: "read" }, nowMs }))),
      ...ledger.map((operation) => fetch("ledger", operation, () => this.store.read({ operation, nowMs }))),
    ]);
    return records;
  }

  /** Replaces the staged copy with read()'s records. */
  load(records) {
    const r = allocString(JSON.stringify(records));
    const [status, error] = callOut(1, [r], (err) => wasm._recourse_js_staged_load(this.handle, r.ptr, r.len, err));
    check(status, error);
  }

  /** The operations the step wrote, with the staged answers, and the records it missed. */
  take() {
    const text = takeString(wasm._recourse_js_staged_take(this.handle));
    if (text === null) throw new RecourseError("out of WebAssembly memory", Status.NO_MEMORY);
    return JSON.parse(text);
  }

  /**
   * Applies `ops` to the store in order, each awaited before the next; returns the conflicts:
   * {op, staged, store} for each operation the store could not take (store null: the write is
   * lost) and each probe or claim it answered otherwise than the staged copy.
   */
  async write(ops) {
    const conflicts = [];
    for (const { answer, ...op } of ops) {
      const got = await settle(() => this.store[op.op](op), this.timeoutMs);
      const steers = steering[op.op];
      if (got === null || (steers && steers(got) !== steers(answer))) conflicts.push({ op, staged: answer, store: got });
    }
    return conflicts;
  }
}

const stages = new WeakMap();

/** The staged copy of `store` (made on first use, shared by every handle over that store). */
export function stageOf(store) {
  let stage = stages.get(store);
  if (!stage) stages.set(store, (stage = new Stage(store)));
  return stage;
}

/**
 * Runs `step` (synchronous: a runner's next() or report()) on `stages` at `nowMs`: reads `want`
 * ({tools, operations, ledger}) from each stage's store, loads it, runs the step, and writes what
 * it wrote back to each store. Resolves to {result, conflicts, misses}: the step's result, the
 * write conflicts, and the records it read without their being loaded ({kind, key}).
 */
export async function staged(stages, want, nowMs, step) {
  const records = await Promise.all(stages.map((s) => s.read(want, nowMs)));
  // From here to the takes nothing awaits: no other step can load these stages meanwhile.
  stages.forEach((s, i) => s.load(records[i]));
  let result, failure;
  try {
    result = step();
  } catch (error) {
    failure = { error }; // what the step wrote before it threw is written all the same
  }
  const journals = stages.map((s) => s.take());
  const conflicts = [];
  for (let i = 0; i < stages.length; ++i) conflicts.push(...(await stages[i].write(journals[i].ops)));
  if (failure) throw failure.error;
  return { result, conflicts, misses: journals.flatMap((j) => j.misses) };
}
