// The declarations of recourse/mcp (src/mcp.d.ts) against the SDK's own Client type; checked by
// `tsc -p test/tsconfig.json` (scripts/js.sh), never run.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { compile } from "recourse";
import { McpRecovery, idempotentFromAnnotations } from "recourse/mcp";
import type { FailedCall, RecoveredCall } from "recourse/mcp";

export async function call(client: Client, text: string): Promise<string> {
  const { bundle } = compile(text);
  if (!bundle) return "no bundle";
  const tools = new McpRecovery(client, bundle, { trusted: true, prefix: "srv/" });
  const listed = await tools.listTools();
  const idempotent: boolean | undefined = idempotentFromAnnotations(tools.annotations(listed[0]?.name ?? ""), true);
  const r: RecoveredCall | FailedCall = await tools.callTool({ name: "t", arguments: { q: 1 } }, { signal: AbortSignal.timeout(1000), timeout: 50 });
  if (r.ok) return `${r.attempts} ${r.result.content.length} ${idempotent}`;
  const route: FailedCall["route"] = r.route;
  return `${route} ${r.modelMessage} ${r.target ?? ""} ${r.decision.rule}`;
}
