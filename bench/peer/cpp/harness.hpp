// The peer bench's C++ harness: the input types, the binary input reader and the timed run
// that prints one JSON line (shared by bench.cpp and recourse.cpp).
#pragma once
#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

enum Code : uint8_t {
  TRANSIENT,
  VALIDATION,
  PERMISSION,
  NOT_FOUND,
  CONFLICT,
  RATE_LIMITED,
  INTERNAL,
  UNKNOWN_CODE
};
enum SideEffect : uint8_t { SE_NONE, SE_UNKNOWN, SE_COMMITTED };
enum Route : uint8_t { STOP, RETRY, REPAIR, ESCALATE, AUTHORIZE, REPLACE };
static const char* CODE_NAMES[] = {"TRANSIENT", "VALIDATION",   "PERMISSION", "NOT_FOUND",
                                   "CONFLICT",  "RATE_LIMITED", "INTERNAL",   "UNKNOWN"};

struct Env {
  Code code;
  bool retryable;
  bool idempotent;
  SideEffect sideEffect;
  bool hasField;
  bool hasSuggestion;
  int32_t attempt;
  int32_t maxAttempts;
};
struct EnvStr {
  std::string code;
  bool retryable;
  bool idempotent;
  std::string sideEffect;
  bool hasField;
  bool hasSuggestion;
  int32_t attempt;
  int32_t maxAttempts;
};

static bool load(const char* path, std::vector<Env>& out, std::vector<uint8_t>& exp) {
  FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  char magic[4];
  uint32_t n;
  if (std::fread(magic, 1, 4, f) != 4 || std::memcmp(magic, "PBIN", 4) != 0 ||
      std::fread(&n, 4, 1, f) != 1) {
    std::fclose(f);
    return false;
  }
  std::vector<uint8_t> raw(9 * (size_t)n);
  if (std::fread(raw.data(), 1, raw.size(), f) != raw.size()) {
    std::fclose(f);
    return false;
  }
  std::fclose(f);
  out.resize(n);
  exp.resize(n);
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t* r = &raw[9 * (size_t)i];
    out[i] =
        Env{(Code)r[0], r[1] != 0, r[2] != 0, (SideEffect)r[3], r[4] != 0, r[5] != 0, r[6], r[7]};
    exp[i] = r[8];
  }
  return true;
}

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point a) {
  return std::chrono::duration<double, std::milli>(Clock::now() - a).count();
}

template <class T, class F>
static uint64_t pass(const std::vector<T>& xs, F f) {
  uint64_t acc = 0;
  for (size_t i = 0; i < xs.size(); i++) acc += (uint64_t)f(xs[i]);
  return acc;
}

template <class T, class F>
static void run(const char* variant, double prepare_ms, const std::vector<T>& xs,
                const std::vector<uint8_t>& exp, const std::vector<T>& dom,
                const std::vector<uint8_t>& dexp, F f, int reps, double target_ms) {
  volatile uint64_t sink = 0;
  long m100k = 0, mdom = 0;
  for (size_t i = 0; i < xs.size(); i++)
    if ((uint8_t)f(xs[i]) != exp[i]) m100k++;
  for (size_t i = 0; i < dom.size(); i++)
    if ((uint8_t)f(dom[i]) != dexp[i]) mdom++;
  // calibration (+ warm-up)
  auto t0 = Clock::now();
  sink = sink + pass(xs, f);
  double one = ms_since(t0);
  long passes = std::max(1L, (long)(target_ms / std::max(one, 1e-6)) + 1);
  std::vector<double> ns;
  for (int r = 0; r < reps; r++) {
    auto a = Clock::now();
    for (long p = 0; p < passes; p++) {
      uint64_t s = pass(xs, f);
      sink = sink + s;
      // compiler barrier: inputs may have changed, so every pass must be recomputed
      asm volatile("" : : "r"(xs.data()) : "memory");
    }
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - a).count() /
                 ((double)passes * (double)xs.size()));
  }
  std::vector<double> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf(
      "{\"engine\":\"cpp-%s\",\"versions\":{\"g++\":\"%d.%d.%d\"},\"agree\":%s,\"n\":%zu,"
      "\"domainN\":%zu,\"mism100k\":%ld,\"mismDomain\":%ld,\"errors\":0,\"importMs\":null,"
      "\"prepareMs\":%.6f,\"passesPerRep\":%ld,\"nsPerRep\":[",
      variant, __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__,
      (m100k == 0 && mdom == 0) ? "true" : "false", xs.size(), dom.size(), m100k, mdom, prepare_ms,
      passes);
  for (size_t i = 0; i < ns.size(); i++) std::printf("%s%.3f", i ? "," : "", ns[i]);
  std::printf("],\"nsMedian\":%.4f,\"peakRssMB\":%.3f,\"sink\":%llu}\n", sorted[sorted.size() / 2],
              ru.ru_maxrss / 1024.0, (unsigned long long)sink);
}
