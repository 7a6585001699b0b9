// The async stores: the conformance suite of the C++ stores (tests/store_test.cpp) over the
// memory store and the Redis store (a redis-server of the test's own), the same values; and the
// C++ Redis store (the native `recourse` command) and the package's reading each other's keys.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { MemoryStore, RecourseError, Status } from "../src/index.js";
import { RedisStore, redisKey, scripts } from "../src/redis.js";
import { conformance } from "./conformance.js";
import { startRedis } from "./redis-server.js";
import { native } from "./support.js";

let server;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server?.stop();
});

test("the stores conform, memory and Redis side by side", { concurrency: true }, async (t) => {
  const shared = new MemoryStore();
  const memory = {
    open: async (options) => (Object.keys(options).length ? new MemoryStore(options) : shared),
    close: async (store) => store !== shared && store.free(),
  };
  const redis = {
    open: (options) => RedisStore.open(server.url, { timeoutMs: 2000, ...options }),
    close: (store) => store.close(),
  };
  await Promise.all([t.test("memory", () => conformance(memory)), t.test("redis", () => conformance(redis))]);
});

test("the Redis store runs the engine's own scripts", async () => {
  assert.deepEqual(
    scripts.map((s) => s.name),
    ["bucket", "outcome", "probe", "vote", "tool", "hold", "control", "count", "claim", "transition", "read"],
  );
  for (const s of scripts) {
    assert.match(s.source, /^local FORMAT, SHAPES, SINCE = '3', \{tool = \{/); // the C++ store's shapes() first
    assert.match(s.source, /local function load\(key, kind\)/); // its prelude
  }
  assert.match(scripts[0].source, /if ARGV\[1\] == '1' then m = math.max\(0, tokens - 1000\)/);
});

test("a record that does not read as its shape fails that call alone (BADRECORD)", async () => {
  const store = await RedisStore.open(server.url, { timeoutMs: 2000 });
  const { createClient } = await import("redis");
  const client = createClient({ socket: { path: server.socket } });
  await client.connect();
  try {
    await client.hSet(redisKey("tool", "bad.tool"), { format: "3", circuit: "7" });
    assert.equal(await store.tool({ tool: "bad.tool" }), null);
    assert.equal((await store.tool({ tool: "good.tool" })).circuit, "closed"); // the store still answers
    // A script flushed from the server's cache (a restart, a failover) is loaded again.
    await client.sendCommand(["SCRIPT", "FLUSH"]);
    assert.equal(await store.bucket({ tool: "good.tool", event: "retry", spec: { maxMilli: 10000, ratioMilli: 100 } }), 9000);
  } finally {
    await client.quit();
    await store.close();
  }
});

test("bad arguments are errors; an unreachable server rejects open()", async () => {
  const memory = new MemoryStore();
  await assert.rejects(memory.bucket({ tool: "t", event: "later", spec: { maxMilli: 1, ratioMilli: 1 }, nowMs: 0 }), (e) => e instanceof RecourseError && e.status === Status.BAD_INPUT && /event/.test(e.message));
  await assert.rejects(memory.count({ operation: "o", event: { kind: "read", failure: "x" }, nowMs: 0 }), /failure is not a hash/);
  assert.throws(() => new MemoryStore({ stateTtlMs: 0 }), TypeError);
  memory.free();
  await assert.rejects(memory.tool({ tool: "t", nowMs: 0 }), RecourseError);
  await assert.rejects(RedisStore.open(`redis+unix://${server.socket}.missing`, { timeoutMs: 200 }), (e) => e.status === Status.UNAVAILABLE);
});

test("open() over a connected client whose server stopped answering rejects within its bound", async () => {
  const { createClient } = await import("redis");
  const client = createClient({ socket: { path: server.socket } });
  client.on("error", () => {});
  await client.connect();
  process.kill(server.pid, "SIGSTOP");
  const started = Date.now();
  try {
    await assert.rejects(RedisStore.open(client, { timeoutMs: 50 }), (e) => e.status === Status.UNAVAILABLE && /no answer within 1000 ms/.test(e.message));
    assert.ok(Date.now() - started < 5000);
  } finally {
    process.kill(server.pid, "SIGCONT");
    await client.disconnect().catch(() => {});
  }
});

test("the C++ Redis store and the package's share one state", async () => {
  const store = await RedisStore.open(server.url, { timeoutMs: 2000 });
  try {
    // Written here, read by the native command: three failures open payments.create's circuit.
    const spec = { failures: 3, ratioMilli: 0, window: 20, minCalls: 10, cooldownMs: 30000, probeLeaseMs: 30000 };
    for (const operation of ["op-1", "op-2", "op-3"]) await store.outcome({ tool: "payments.create", operation, failed: true, spec });
    const [shown] = JSON.parse(native(["breaker", "--state", server.url, "--format", "json", "show", "payments.create"]));
    const mine = await store.tool({ tool: "payments.create" });
    assert.deepEqual(
      [shown.tool, shown.circuit, shown.consecutiveFailures, shown.window, shown.windowCalls, shown.openedMs],
      ["payments.create", "open", 3, 0b111, 3, mine.openedMs],
    );
    await store.claim({ operation: "order-7", idempotencyKey: "key-from-js", leaseMs: 60000 });
    const [entry] = JSON.parse(native(["ledger", "--state", server.url, "--format", "json", "order-7"]));
    assert.deepEqual([entry.operation, entry.state, entry.idempotencyKey], ["order-7", "pending", "key-from-js"]);
    // Written by the native command, read here.
    native(["breaker", "--state", server.url, "isolate", "search.query"]);
    const h = await store.tool({ tool: "search.query" });
    assert.deepEqual([h.circuit, h.isolated], ["open", true]);
  } finally {
    await store.close();
  }
});
