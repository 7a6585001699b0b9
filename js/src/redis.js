// recourse/redis: the Redis store over a Node Redis client (the `redis` package, node-redis), for
// Workflow and Health shared by a fleet (docs/javascript.md, "State"; docs/state.md). It runs the
// engine's own Lua scripts, which the WebAssembly module exports from the C++ store
// (engine/src/store/redis_scripts.cpp), on the same keys and records as the C++ Redis store, so
// JavaScript and C++ processes share one state. Each operation is one script over one key
// (atomic), loaded once (SCRIPT LOAD) and called by EVALSHA, loaded again on NOSCRIPT; time is
// the server's clock (the callers' nowMs is ignored); every key gets a TTL. The only module that
// imports `redis`, and only when open() is given a URL.
import { RecourseError, Status, takeString, wasm } from "./wasm.js";

/** The engine's scripts, in recourse::detail::RedisScript's order: [{name, source}]. */
export const scripts = Object.freeze(JSON.parse(takeString(wasm._recourse_js_redis_scripts())));

// The longest hold the stores record, ms (recourse::detail::kMaxHoldMs: 10^15).
const kMaxHoldMs = 1e15;
const circuits = ["closed", "open", "half_open"];
const bucketEvents = ["read", "retry", "success"];
const countKinds = ["read", "attempt", "failure", "decision", "success"];
const commands = ["isolate", "open", "reset"];

function int(value, name) {
  if (!Number.isSafeInteger(value)) throw new TypeError(`${name} must be a whole number`);
  return String(value);
}

// A 64-bit hash as decimal text (what the count script keeps; its record check refuses others).
function hash(value, name) {
  const text = String(value);
  if (!/^\d{1,20}$/.test(text) || BigInt(text) >= 2n ** 64n) throw new TypeError(`${name} must be a 64-bit hash as decimal text`);
  return text;
}

function indexOf(names, value, name) {
  const i = names.indexOf(value);
  if (i < 0) throw new TypeError(`${name} must be one of ${names.join(", ")}`);
  return String(i);
}

const hold = (ms) => String(Math.min(Math.max(Number(ms) || 0, 0), kMaxHoldMs));
const circuit = (reply) => circuits[Number(reply)];
const health = (r) => ({
  circuit: circuits[Number(r[0])],
  consecutiveFailures: Number(r[1]),
  window: String(r[2]),
  windowCalls: Number(r[3]),
  openedMs: Number(r[4]),
  probeOperation: String(r[5]),
  probeUntilMs: Number(r[6]),
  milliTokens: Number(r[7]),
  holdUntilMs: Number(r[8]),
  isolated: Number(r[9]) !== 0,
});
const entry = (operation) => (r) => ({
  operation,
  state: String(r[0]),
  idempotencyKey: String(r[1]),
  updatedMs: Number(r[2]),
  leaseUntilMs: Number(r[3]),
  claimed: Number(r[4]) !== 0,
});

// Each operation's script call: [script, key kind, key name, ARGV, reply reader], as
// redis_scripts.hpp documents them.
const calls = {
  bucket: (o, s) => ["bucket", "tool", o.tool, [indexOf(bucketEvents, o.event, "event"), int(o.spec.maxMilli, "spec.maxMilli"), int(o.spec.ratioMilli, "spec.ratioMilli"), s.ttl], Number],
  outcome: (o, s) => {
    const b = o.spec;
    return ["outcome", "tool", o.tool, [String(o.operation), o.failed ? "1" : "0", int(b.failures, "spec.failures"), int(b.ratioMilli, "spec.ratioMilli"), int(b.window, "spec.window"), int(b.minCalls, "spec.minCalls"), s.ttl], circuit];
  },
  probe: (o, s) => ["probe", "tool", o.tool, [String(o.operation), int(o.spec.cooldownMs, "spec.cooldownMs"), int(o.spec.probeLeaseMs, "spec.probeLeaseMs"), s.ttl], circuit],
  vote: (o, s) => ["vote", "quorum", o.tool, [String(o.worker), o.open ? "1" : "0", int(o.voteMs, "voteMs"), s.ttl], Number],
  tool: (o) => ["tool", "tool", o.tool, [], health],
  hold: (o, s) => ["hold", "tool", o.tool, [hold(o.waitMs), s.ttl], circuit],
  control: (o, s) => ["control", "tool", o.tool, [indexOf(commands, o.command, "command"), hold(o.waitMs ?? 0), s.ttl], health],
  count: (o, s) => {
    const e = o.event ?? {};
    const args = [indexOf(countKinds, e.kind, "event.kind"), int(e.cost ?? 0, "event.cost"), hash(e.failure ?? "0", "event.failure"), e.repair ? "1" : "0", s.ttl, int(e.pushback ?? 0, "event.pushback")];
    const read = (r) => ({ attempts: Number(r[0]), repairs: Number(r[1]), repeats: Number(r[2]), cost: Number(r[3]), startedMs: Number(r[4]), lastFailure: String(r[5]), repairPending: Number(r[6]) !== 0, pushbackAttempt: Number(r[7]) });
    return ["count", "op", o.operation, args, read];
  },
  claim: (o, s) => ["claim", "ledger", o.operation, [String(o.idempotencyKey), int(o.leaseMs, "leaseMs"), s.ledgerTtl], entry(o.operation)],
  transition: (o, s) => {
    if (o.to !== "committed" && o.to !== "released") throw new TypeError("to must be committed or released");
    return ["transition", "ledger", o.operation, [o.to, s.ledgerTtl], entry(o.operation)];
  },
  read: (o) => ["read", "ledger", o.operation, [], entry(o.operation)],
};

/** recourse:{<name>}:<kind>, the C++ Redis store's key (a hash tag: one cluster slot each). */
export function redisKey(kind, name) {
  if (typeof name !== "string") throw new TypeError(`the ${kind}'s name must be a string`);
  return `recourse:{${name}}:${kind}`;
}

// A client for "redis://HOST:PORT" or "redis+unix://PATH" (the C++ store specs), connected.
// `reply` (a command's promise) within `ms`, or a rejection.
function within(reply, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([reply, late]).finally(() => clearTimeout(timer));
}

async function connectTo(url, timeoutMs) {
  const { createClient } = await import("redis");
  const socket = url.startsWith("redis+unix://") ? { path: url.slice("redis+unix://".length) } : undefined;
  const client = createClient({ ...(socket ? { socket: { ...socket, connectTimeout: timeoutMs } } : { url, socket: { connectTimeout: timeoutMs } }), disableOfflineQueue: true });
  client.on("error", () => {}); // each command's failure is its operation's answer (null)
  // The first connection within timeoutMs (the client would retry forever); later reconnects are
  // the client's, while the commands sent meanwhile fail at once (disableOfflineQueue).
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`cannot connect to ${url} within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([client.connect(), late]);
  } catch (error) {
    client.destroy();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return client;
}

/**
 * The Redis store. open() it; its operations resolve to null when the server cannot answer
 * (unreachable, slower than timeoutMs, or holding a record that does not read as its shape:
 * BADRECORD), and for `downMs` after such a failure (its own breaker) without asking. The ledger
 * is enabled only when the server runs with appendonly yes and appendfsync always
 * (`ledgerRefusal` says why not; the ledger's operations then answer null), as the C++ store's.
 */
export class RedisStore {
  #client;
  #owned;
  #shas = new Map();
  #settings;
  #downUntil = 0;

  /**
   * Connects to `target`: a URL ("redis://HOST:PORT", "redis+unix://PATH"; the `redis` package
   * is imported then) or a connected node-redis client (anything with sendCommand(args)). Loads
   * the scripts and checks the ledger's durability. Options: stateTtlMs (tool and operation
   * records, after a change; default 24 h), ledgerTtlMs (7 days), timeoutMs (each command; 50),
   * downMs (fail fast after a failure; 1000). Rejects when the server cannot be reached.
   */
  static async open(target, { stateTtlMs = 86_400_000, ledgerTtlMs = 604_800_000, timeoutMs = 50, downMs = 1000 } = {}) {
    for (const [name, value] of Object.entries({ stateTtlMs, ledgerTtlMs, timeoutMs, downMs }))
      if (!Number.isSafeInteger(value) || value < (name === "downMs" ? 0 : 1)) throw new TypeError(`${name} must be a whole number of ms`);
    const owned = typeof target === "string";
    let client = target;
    if (owned)
      try {
        client = await connectTo(target, Math.max(timeoutMs, 1000));
      } catch (error) {
        throw new RecourseError(`cannot open the Redis store: ${error.message}`, Status.UNAVAILABLE);
      }
    if (typeof client?.sendCommand !== "function") throw new TypeError("RedisStore.open: a URL or a node-redis client");
    const store = new RedisStore(client, owned, { ttl: String(stateTtlMs), ledgerTtl: String(ledgerTtlMs), timeoutMs, downMs });
    // Opening takes the connection's bound (a client passed in may be connected to a server that
    // no longer answers: without one, open() would wait for ever).
    const opening = Math.max(timeoutMs, 1000);
    try {
      const value = async (name) => {
        const reply = await within(client.sendCommand(["CONFIG", "GET", name]), opening); // [name, value], or {name: value}
        return String((Array.isArray(reply) ? reply[1] : reply?.[name]) ?? "?");
      };
      const [aof, fsync] = [await value("appendonly"), await value("appendfsync")];
      if (aof !== "yes" || fsync !== "always")
        store.ledgerRefusal = `ledger disabled: the server runs with appendonly ${aof} and appendfsync ${fsync} (the ledger needs appendonly yes and appendfsync always)`;
      for (const s of scripts) await store.#load(s.name, opening);
    } catch (error) {
      if (owned) await client.quit().catch(() => {});
      throw new RecourseError(`cannot open the Redis store: ${error.message}`, Status.UNAVAILABLE);
    }
    return store;
  }

  constructor(client, owned, settings) {
    this.#client = client;
    this.#owned = owned;
    this.#settings = settings;
    /** Why the ledger is disabled ("" when it is enabled). */
    this.ledgerRefusal = "";
  }

  /** "redis". */
  get name() {
    return "redis";
  }

  /** Closes the connection open() made from a URL (a client passed in stays the caller's). */
  async close() {
    if (this.#owned) await this.#client.quit();
  }

  // SCRIPT LOAD of `name` within `timeoutMs` (default: each command's).
  async #load(name, timeoutMs = this.#settings.timeoutMs) {
    const source = scripts.find((s) => s.name === name).source;
    this.#shas.set(name, String(await within(this.#client.sendCommand(["SCRIPT", "LOAD", source]), timeoutMs)));
  }

  // One command within timeoutMs, or a rejection.
  #send(args) {
    return within(this.#client.sendCommand(args), this.#settings.timeoutMs);
  }

  // EVALSHA of `script` on `key`, loading it again on NOSCRIPT; the reply, or null on a failure
  // (which opens the store's breaker unless only the record was bad).
  async #eval(script, key, args) {
    if (Date.now() < this.#downUntil) return null;
    const run = () => this.#send(["EVALSHA", this.#shas.get(script), "1", key, ...args]);
    try {
      try {
        return await run();
      } catch (error) {
        if (!String(error?.message).startsWith("NOSCRIPT")) throw error;
        await this.#load(script);
        return await run();
      }
    } catch (error) {
      if (!String(error?.message).startsWith("BADRECORD ")) this.#downUntil = Date.now() + this.#settings.downMs;
      return null;
    }
  }

  /** The ledger's entries as they read now, by operation, at most `limit` (a SCAN of its keys). */
  async entries({ limit }) {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new TypeError("limit must be a whole number >= 0");
    if (this.ledgerRefusal || Date.now() < this.#downUntil) return null;
    const keys = [];
    try {
      let cursor = "0";
      do {
        const [next, found] = await this.#send(["SCAN", cursor, "MATCH", "recourse:{*}:ledger", "COUNT", "1000"]);
        cursor = String(next);
        keys.push(...found.map(String));
      } while (cursor !== "0");
    } catch {
      this.#downUntil = Date.now() + this.#settings.downMs;
      return null;
    }
    const out = [];
    for (const key of keys.sort()) {
      if (out.length >= limit) break;
      const e = await this.read({ operation: key.slice("recourse:{".length, -"}:ledger".length) });
      if (!e) return null;
      if (e.state !== "absent") out.push(e);
    }
    return out;
  }

  static {
    for (const [name, call] of Object.entries(calls))
      this.prototype[name] = async function (op) {
        const [script, kind, key, args, read] = call(op, this.#settings);
        if (kind === "ledger" && this.ledgerRefusal) return null;
        const reply = await this.#eval(script, redisKey(kind, key), args);
        return reply === null ? null : read(reply);
      };
  }
}
