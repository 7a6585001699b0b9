// C++17 baselines for the 10-rule routing policy.
// Usage: bench <variant> <inputs.bin> <domain.bin>
//   variant: ifchain | ifchain-inline | ifchain-str | lut | lut-inline
// ifchain        hand-written if-chain over a struct of enums/bools/ints, one non-inlined call per
// decision ifchain-inline same if-chain, inlined into the loop ifchain-str    if-chain over a
// struct whose code/sideEffect are std::string (string compares), non-inlined lut 768-entry table
// over the whole finite domain
//                (8 codes x 2 x 2 x 3 x 2 x 2 x [attempt>=maxAttempts]), non-inlined call per
//                decision
// lut-inline     same table lookup inlined into the loop ("physical limit")
// Prints one JSON line (same fields as bench.mjs).

#include "harness.hpp"

static const char* SE_NAMES[] = {"none", "unknown", "committed"};

static inline Route route_if(const Env& e) {
  if (e.sideEffect == SE_COMMITTED && !e.idempotent) return STOP;            // 1
  if (e.attempt >= e.maxAttempts) return STOP;                               // 2
  if (e.code == TRANSIENT && e.retryable) return RETRY;                      // 3
  if (e.code == RATE_LIMITED) return RETRY;                                  // 4
  if (e.code == VALIDATION && e.hasField && e.hasSuggestion) return REPAIR;  // 5
  if (e.code == VALIDATION) return ESCALATE;                                 // 6
  if (e.code == PERMISSION) return AUTHORIZE;                                // 7
  if (e.code == NOT_FOUND) return REPLACE;                                   // 8
  if (e.code == CONFLICT && e.idempotent) return RETRY;                      // 9
  return STOP;                                                               // 10
}
__attribute__((noinline)) Route route_if_call(const Env& e) {
  return route_if(e);
}

__attribute__((noinline)) Route route_str_call(const EnvStr& e) {
  if (e.sideEffect == "committed" && !e.idempotent) return STOP;
  if (e.attempt >= e.maxAttempts) return STOP;
  if (e.code == "TRANSIENT" && e.retryable) return RETRY;
  if (e.code == "RATE_LIMITED") return RETRY;
  if (e.code == "VALIDATION" && e.hasField && e.hasSuggestion) return REPAIR;
  if (e.code == "VALIDATION") return ESCALATE;
  if (e.code == "PERMISSION") return AUTHORIZE;
  if (e.code == "NOT_FOUND") return REPLACE;
  if (e.code == "CONFLICT" && e.idempotent) return RETRY;
  return STOP;
}

static uint8_t LUT[8 * 2 * 2 * 3 * 2 * 2 * 2];
static inline unsigned lut_index(const Env& e) {
  unsigned i = e.code;
  i = i * 2 + e.retryable;
  i = i * 2 + e.idempotent;
  i = i * 3 + e.sideEffect;
  i = i * 2 + e.hasField;
  i = i * 2 + e.hasSuggestion;
  i = i * 2 + (e.attempt >= e.maxAttempts);
  return i;
}
static void build_lut() {
  for (int c = 0; c < 8; c++)
    for (int r = 0; r < 2; r++)
      for (int id = 0; id < 2; id++)
        for (int s = 0; s < 3; s++)
          for (int f = 0; f < 2; f++)
            for (int g = 0; g < 2; g++)
              for (int ge = 0; ge < 2; ge++) {
                Env e{(Code)c, (bool)r, (bool)id, (SideEffect)s, (bool)f, (bool)g, 1, ge ? 1 : 2};
                LUT[lut_index(e)] = route_if(e);
              }
}
static inline Route route_lut(const Env& e) {
  return (Route)LUT[lut_index(e)];
}
__attribute__((noinline)) Route route_lut_call(const Env& e) {
  return route_lut(e);
}

static EnvStr to_str(const Env& e) {
  return EnvStr{CODE_NAMES[e.code], e.retryable,     e.idempotent, SE_NAMES[e.sideEffect],
                e.hasField,         e.hasSuggestion, e.attempt,    e.maxAttempts};
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s variant inputs.bin domain.bin\n", argv[0]);
    return 2;
  }
  std::string v = argv[1];
  int reps = std::getenv("REPS") ? std::atoi(std::getenv("REPS")) : 5;
  double target = std::getenv("TARGET_MS") ? std::atof(std::getenv("TARGET_MS")) : 300.0;
  std::vector<Env> xs, dom;
  std::vector<uint8_t> exp, dexp;
  if (!load(argv[2], xs, exp) || !load(argv[3], dom, dexp)) {
    std::fprintf(stderr, "cannot read inputs\n");
    return 1;
  }

  if (v == "ifchain") {
    run(
        "ifchain", 0.0, xs, exp, dom, dexp, [](const Env& e) { return route_if_call(e); }, reps,
        target);
  } else if (v == "ifchain-inline") {
    run(
        "ifchain-inline", 0.0, xs, exp, dom, dexp, [](const Env& e) { return route_if(e); }, reps,
        target);
  } else if (v == "ifchain-str") {
    std::vector<EnvStr> sx, sd;
    for (auto& e : xs) sx.push_back(to_str(e));
    for (auto& e : dom) sd.push_back(to_str(e));
    run(
        "ifchain-str", 0.0, sx, exp, sd, dexp, [](const EnvStr& e) { return route_str_call(e); },
        reps, target);
  } else if (v == "lut" || v == "lut-inline") {
    auto t0 = Clock::now();
    build_lut();
    double prep = ms_since(t0);
    if (v == "lut")
      run(
          "lut", prep, xs, exp, dom, dexp, [](const Env& e) { return route_lut_call(e); }, reps,
          target);
    else
      run(
          "lut-inline", prep, xs, exp, dom, dexp, [](const Env& e) { return route_lut(e); }, reps,
          target);
  } else {
    std::fprintf(stderr, "unknown variant %s\n", v.c_str());
    return 2;
  }
  return 0;
}
