// Shared by recourse-wasm and recourse-wasm-json: the package (../../js, built by
// scripts/wasm.sh), the peer policy compiled once (../recourse/peer.recourse, the C++ rows'
// policy), and an input as the envelope and the context the C++ row builds (recourse.cpp).
import { readFileSync } from 'node:fs';

export const pkgs = [];
export async function load() { return await import('../../../js/src/index.js'); }

export function compilePeer(lib) {
  const text = readFileSync(new URL('../recourse/peer.recourse', import.meta.url), 'utf8');
  const { bundle, diagnostics } = lib.compile([{ path: 'peer.recourse', text }]);
  if (!bundle) throw new Error('peer.recourse: ' + JSON.stringify(diagnostics));
  return bundle;
}

export function toCall(e) {
  return [
    { code: e.code, retryable: e.retryable, traceId: 'trace-0001',
      ...(e.hasField ? { field: 'amount' } : {}), ...(e.hasSuggestion ? { suggestion: '12.50' } : {}) },
    { tool: 'peer', operationId: 'op-0001', idempotent: e.idempotent, sideEffect: e.sideEffect,
      attempt: e.attempt, maxAttempts: e.maxAttempts },
  ];
}
