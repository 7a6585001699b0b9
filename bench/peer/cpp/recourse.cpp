// recourse on the peer bench: the same 10-rule policy (../recourse/peer.recourse) compiled by
// the engine, deciding the same seeded inputs and the whole domain through the harness's timed
// run. Inputs are converted to an envelope and a context before timing, as the CEL engines get
// theirs as BigInts; maxAttempts is the per-call override (Context::max_attempts).
// Usage: recourse_peer <variant> <inputs.bin> <domain.bin> [policy]
//   variant: decide    Policy::decide(), the full decision (delay, budgets, key directive)
//            unpinned  Policy::decide(): the same without the shared reference count
#include <chrono>
#include <string>
#include <vector>

#include "harness.hpp"
#include "recourse/recourse.hpp"

namespace {

struct Call {
  recourse::Envelope envelope;
  recourse::Context context;
};

Call to_call(const Env& e) {
  Call c;
  c.envelope.code = CODE_NAMES[e.code];
  c.envelope.retryable = e.retryable;
  if (e.hasField) c.envelope.field = "amount";
  if (e.hasSuggestion) c.envelope.suggestion = "12.50";
  c.envelope.trace_id = "trace-0001";
  c.context.tool = "peer";
  c.context.operation_id = "op-0001";
  c.context.idempotent = e.idempotent;
  c.context.side_effect = static_cast<recourse::SideEffect>(e.sideEffect);
  c.context.attempt = e.attempt;
  c.context.max_attempts = e.maxAttempts;
  return c;
}

std::vector<Call> to_calls(const std::vector<Env>& xs) {
  std::vector<Call> out;
  out.reserve(xs.size());
  for (const Env& e : xs) out.push_back(to_call(e));
  return out;
}

// The harness's route numbering (policy.mjs ROUTES); degrade never occurs in this policy.
Route peer_route(recourse::Route r) {
  switch (r) {
    case recourse::Route::Retry:
      return RETRY;
    case recourse::Route::Repair:
      return REPAIR;
    case recourse::Route::Escalate:
      return ESCALATE;
    case recourse::Route::Authorize:
      return AUTHORIZE;
    case recourse::Route::Replace:
      return REPLACE;
    default:
      return STOP;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s variant inputs.bin domain.bin [policy]\n", argv[0]);
    return 2;
  }
  const std::string variant = argv[1];
  const std::string policy_path = argc > 4 ? argv[4] : RECOURSE_PEER_POLICY;
  const int reps = std::getenv("REPS") ? std::atoi(std::getenv("REPS")) : 5;
  const double target = std::getenv("TARGET_MS") ? std::atof(std::getenv("TARGET_MS")) : 300.0;
  std::vector<Env> xs, dom;
  std::vector<uint8_t> exp, dexp;
  if (!load(argv[2], xs, exp) || !load(argv[3], dom, dexp)) {
    std::fprintf(stderr, "cannot read inputs\n");
    return 1;
  }
  const auto t0 = Clock::now();
  const recourse::Result<recourse::Bundle> compiled = recourse::compile_paths({policy_path});
  const double prepare = ms_since(t0);
  if (!compiled.ok()) {
    for (const auto& d : compiled.diagnostics()) std::fprintf(stderr, "%s\n", to_text(d).c_str());
    return 1;
  }
  const recourse::Policy& policy = compiled->policies().front();
  const std::vector<Call> calls = to_calls(xs), domain = to_calls(dom);
  if (variant == "decide") {
    run(
        "recourse", prepare, calls, exp, domain, dexp,
        [&](const Call& c) { return peer_route(policy.decide(c.envelope, c.context).route); }, reps,
        target);
  } else if (variant == "unpinned") {
    run(
        "recourse-unpinned", prepare, calls, exp, domain, dexp,
        [&](const Call& c) { return peer_route(policy.decide(c.envelope, c.context).route); }, reps,
        target);
  } else {
    std::fprintf(stderr, "unknown variant %s\n", variant.c_str());
    return 2;
  }
  return 0;
}
