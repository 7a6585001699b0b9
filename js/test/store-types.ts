// The TypeScript declarations of the stores and the shadow candidate (src/index.d.ts,
// src/redis.d.ts) as a host uses them; checked by `tsc -p test/tsconfig.json`, never run.
import { compile, Health, MemoryStore, Runner, Workflow } from "../src/index.js";
import type { AsyncStore, LedgerEntry, ShadowCounters, ToolHealth } from "../src/index.js";
import { RedisStore } from "../src/redis.js";

export async function shared(url: string): Promise<string> {
  const store: AsyncStore = url === "memory" ? new MemoryStore({ stateTtlMs: 60_000 }) : await RedisStore.open(url, { timeoutMs: 100 });
  const { bundle } = compile('policy "t" { default -> stop }');
  if (!bundle) return "no bundle";
  bundle.loadCandidate([{ path: "c.recourse", text: 'policy "t" { default -> escalate }' }]);
  const shadow: ShadowCounters = bundle.shadowCounters();
  bundle.dropCandidate();
  const runner = new Runner(bundle, { tool: "t", operationId: "op" }, { workflow: new Workflow({ scope: "s", store }), health: new Health({ store }), ledger: store });
  const action = await runner.nextAsync(Date.now());
  await runner.reportAsync({ outcome: "success" });
  const health: ToolHealth | null = await store.tool({ tool: "t", nowMs: Date.now() });
  const entry: LedgerEntry | null = await store.claim({ operation: "op", idempotencyKey: "k", leaseMs: 1000 });
  return `${action.step} ${health?.circuit} ${entry?.state} ${shadow.disagreements} ${runner.conflicts.length}`;
}
