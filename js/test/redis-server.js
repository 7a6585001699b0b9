// A redis-server a test starts itself (Debian's redis-server; scripts/deps.sh installs it), in
// its own temp directory, on a unix socket only (no port), with the ledger's durability
// (appendonly yes, appendfsync always); stopped by its PID.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "redis";

/** Starts a server and waits (at most 5 s) until it answers: {url, socket, pid, stop()}. */
export async function startRedis() {
  const dir = mkdtempSync(join(tmpdir(), "recourse-js-redis-"));
  const socket = join(dir, "redis.sock");
  const child = spawn(
    "redis-server",
    ["--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no", "--loglevel", "warning"],
    { stdio: "ignore" },
  );
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const spawnFailed = new Promise((resolve) => child.once("error", resolve));
  const kill = () => child.exitCode === null && process.kill(child.pid, "SIGKILL");
  process.once("exit", kill); // the test process ends: so does its server
  const stop = async () => {
    if (child.exitCode === null) process.kill(child.pid, "SIGTERM");
    await exited;
    process.removeListener("exit", kill);
    rmSync(dir, { recursive: true, force: true });
  };
  for (const until = Date.now() + 5000; Date.now() < until; await sleep(20)) {
    const failed = await Promise.race([spawnFailed, sleep(0, null)]);
    if (failed) throw new Error(`redis-server could not start (${failed.message}): scripts/deps.sh installs it`);
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const client = createClient({ socket: { path: socket, reconnectStrategy: false } });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.ping();
      await client.quit();
      return { url: `redis+unix://${socket}`, socket, pid: child.pid, stop };
    } catch {
      // not listening yet
    }
  }
  await stop();
  throw new Error("redis-server did not answer within 5 s");
}
