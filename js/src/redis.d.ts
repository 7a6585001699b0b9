// Types of recourse/redis (src/redis.js): the Redis store over a node-redis client.
import type { AsyncStore } from "./index.js";

/** The engine's Lua scripts, one per store operation, exported from the C++ store. */
export const scripts: readonly { name: string; source: string }[];

/** recourse:{<name>}:<kind> (kind tool, quorum, op or ledger): the C++ Redis store's keys. */
export function redisKey(kind: "tool" | "quorum" | "op" | "ledger", name: string): string;

export interface RedisStoreOptions {
  /** ms a tool or operation record lives after its last change (default 24 h). */
  stateTtlMs?: number;
  /** ms a ledger entry lives after its last change (default 7 days). */
  ledgerTtlMs?: number;
  /** ms each command may take before its operation answers null (default 50). */
  timeoutMs?: number;
  /** ms the store answers null without asking after a failure (default 1000). */
  downMs?: number;
}

/** A client RedisStore can use: node-redis's (the `redis` package), or anything with its sendCommand. */
export interface RedisClientLike {
  sendCommand(args: string[]): Promise<unknown>;
}

/** The Redis store: the C++ store's scripts and keys, so C++ and JavaScript processes share one state. */
export interface RedisStore extends AsyncStore {}
export class RedisStore {
  /** Connects to "redis://HOST:PORT" or "redis+unix://PATH" (imports `redis`), or uses a connected client. */
  static open(target: string | RedisClientLike, options?: RedisStoreOptions): Promise<RedisStore>;
  private constructor();
  readonly name: "redis";
  /** Why the ledger is disabled ("" when enabled: the server runs appendonly yes, appendfsync always). */
  readonly ledgerRefusal: string;
  /** Closes a connection open() made from a URL. */
  close(): Promise<void>;
}
