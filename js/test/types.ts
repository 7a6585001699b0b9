// The TypeScript declarations (src/index.d.ts) against the documented agent loop; checked by
// `tsc -p test/tsconfig.json` (scripts/js.sh), never run.
import { compile, format, fromOpenAIError, fromResponse, Runner, Status, RecourseError } from "../src/index.js";
import type { Action, Decision, Diagnostic, Outcome, TestResult } from "../src/index.js";

export async function loop(text: string): Promise<string | undefined> {
  const { bundle, diagnostics } = compile([{ path: "p.recourse", text }]);
  const first: Diagnostic | undefined = diagnostics[0];
  if (!bundle) return first ? `${first.line}:${first.utf16Column} ${first.message}` : "no bundle";
  const d: Decision = bundle.decide({ code: "TRANSIENT", retryable: true }, { tool: "t", sideEffect: "none" });
  const delay: number = d.delayMs;
  const runner = new Runner(bundle, { tool: "t", operationId: "op", arguments: { q: 1 } });
  const done: Action = await runner.run({
    signal: AbortSignal.timeout(1000),
    async call(action: Action): Promise<Outcome> {
      const response = await fetch("http://127.0.0.1/", { body: JSON.stringify(action.arguments) });
      if (response.ok) return { outcome: "success" };
      return { outcome: "failure", envelope: (await fromResponse(response)).envelope, sideEffect: "none" };
    },
  });
  try {
    fromOpenAIError(new Error("x"));
  } catch (e) {
    if (e instanceof RecourseError && e.status === Status.BAD_INPUT) return "bad";
  }
  return `${done.ending} ${delay}`;
}

// The authoring tools: format(), dump() and runTests().
export function author(text: string): string {
  const formatted: string | null = format(text, "p.recourse").text;
  const { bundle } = compile(formatted ?? text);
  if (!bundle) return "";
  const failed: TestResult[] = bundle.runTests().filter((t) => !t.passed);
  const first: string | undefined = failed[0]?.mismatches[0];
  return `${bundle.dump()}${first ?? ""}${failed[0]?.decision.route ?? ""}`;
}
