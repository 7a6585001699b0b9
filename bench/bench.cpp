// recourse_bench: decide() against its baselines, envelope JSON to decision, compile time and
// table memory against rule count, and decide() on two threads (bench/README.md has a run).
//
// `recourse_bench --write-generated DIR` writes the generated policies, for `recourse check`.
//
// Every case first checks that the engine and its baselines agree on all its inputs; the run
// exits 1 on any disagreement, so `recourse_bench --benchmark_min_time=0.0001` under ctest is a
// correctness smoke. Timings are only reported, never asserted.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <mutex>

#include "cases.hpp"
#include "check/check.hpp"
#include "compile/compile.hpp"
#include "envelope/steering.hpp"
#include "source/location.hpp"
#include "table/compiled.hpp"

namespace recourse::bench {
constexpr std::size_t kSizes[] = {10, 100, 1000, 10000};

namespace {

const detail::Compiled& compiled(const Policy& policy) {
  return detail::compiled(policy);
}

// Runs `step(i)` on input i, cycling through the case's inputs.
template <class Step>
void cycle(benchmark::State& state, Step step) {
  std::size_t i = 0;
  for (auto _ : state) {
    step(i);
    i = (i + 1) % kInputs;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void decide(benchmark::State& state, const Case& c) {
  cycle(state, [&](std::size_t i) {
    benchmark::DoNotOptimize(c.policy->decide(c.envelopes[i], c.contexts[i]));
  });
}

// Engine::decide(): the host's path with hot reload (a thread's snapshot).
void engine_decide(benchmark::State& state, const Case& c) {
  static std::mutex mutex;
  static std::map<const Case*, std::unique_ptr<Engine>> engines;
  const Engine* engine = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = engines[&c];
    if (!slot) slot = std::make_unique<Engine>(c.bundle);
    engine = slot.get();
  }
  cycle(state, [&](std::size_t i) {
    benchmark::DoNotOptimize(engine->decide(c.envelopes[i], c.contexts[i]));
  });
}

// The routing step alone: attributes already computed, table lookup to a row. It cycles through
// the first 64 points (32 KiB, the bytes of the lookup baseline's 4,096 inputs), so both read
// their inputs from the same level of cache.
void match(benchmark::State& state, const Case& c) {
  const detail::Compiled& p = compiled(*c.policy);
  std::vector<detail::Point> points(64);
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::uint32_t warnings = 0;
    std::string_view nearest;
    points[i] = detail::make_point(p, c.envelopes[i], c.contexts[i], p.wanted, warnings, nearest);
  }
  state.SetLabel(p.table.strategy == detail::Strategy::Direct ? "direct" : "bitset");
  cycle(state,
        [&](std::size_t i) { benchmark::DoNotOptimize(p.table.match(points[i % points.size()])); });
}

// The routing step with reading the attributes: envelope and context to a row.
void route(benchmark::State& state, const Case& c) {
  const detail::Compiled& p = compiled(*c.policy);
  cycle(state, [&](std::size_t i) {
    std::uint32_t warnings = 0;
    std::string_view nearest;
    const detail::Point point =
        detail::make_point(p, c.envelopes[i], c.contexts[i], p.wanted, warnings, nearest);
    benchmark::DoNotOptimize(p.table.match(point));
  });
}

void seed_if_chain(benchmark::State& state) {
  const Case& c = seed_case();
  cycle(state, [&](std::size_t i) {
    benchmark::DoNotOptimize(bench::seed_if_chain(c.envelopes[i], c.contexts[i]));
  });
}

void seed_full_chain(benchmark::State& state) {
  const Case& c = seed_case();
  cycle(state, [&](std::size_t i) {
    benchmark::DoNotOptimize(bench::seed_full_chain(c.envelopes[i], c.contexts[i]));
  });
}

void peer_if_chain(benchmark::State& state) {
  const Case& c = peer_case();
  cycle(state, [&](std::size_t i) { benchmark::DoNotOptimize(bench::peer_if_chain(c.peer[i])); });
}

void peer_lookup(benchmark::State& state) {
  const Case& c = peer_case();
  cycle(state, [&](std::size_t i) { benchmark::DoNotOptimize(c.peer_lookup.route(c.peer[i])); });
}

void gen_if_chain(benchmark::State& state, const Case& c) {
  cycle(state, [&](std::size_t i) {
    std::size_t rule = 0;
    benchmark::DoNotOptimize(if_chain(c.gen, c.plain[i], rule));
  });
}

void gen_lookup(benchmark::State& state, const Case& c) {
  cycle(state, [&](std::size_t i) { benchmark::DoNotOptimize(c.lookup->route(c.plain[i])); });
}

// The benchmark envelopes as JSON (about 300 bytes each): the seed case's envelopes with a
// server's message and trace id, as a real 503 carries them.
const std::vector<std::string>& seed_json() {
  static const std::vector<std::string> texts = [] {
    const Case& c = seed_case();
    std::vector<std::string> out;
    for (std::size_t i = 0; i < 64; ++i) {
      Envelope e = c.envelopes[i];
      e.message =
          "upstream returned 503 Service Unavailable while creating the invoice for customer "
          "cus_4f2a9c; the request was not applied, retry after the indicated delay (see the "
          "status page)";
      e.trace_id = fmt::format("req_{:016x}_{:04}", i * 0x9e3779b97f4a7c15ull, i);
      out.push_back(to_json(e));
    }
    return out;
  }();
  return texts;
}

void label_bytes(benchmark::State& state, const std::vector<std::string>& texts) {
  std::size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  state.SetLabel(fmt::format("{} bytes on average", bytes / texts.size()));
}

// Envelope JSON to decision, reading included.
void json_to_decision(benchmark::State& state) {
  const Case& c = seed_case();
  const auto& texts = seed_json();
  label_bytes(state, texts);
  std::size_t i = 0;
  for (auto _ : state) {
    const Result<Envelope> r = read_envelope(texts[i]);
    benchmark::DoNotOptimize(c.policy->decide(*r, c.contexts[i]));
    i = (i + 1) % texts.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// The reading alone: JSON to Envelope.
void read_json(benchmark::State& state) {
  const auto& texts = seed_json();
  label_bytes(state, texts);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(read_envelope(texts[i]));
    i = (i + 1) % texts.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// The steering detector alone, on the benchmark envelope's message.
void steering(benchmark::State& state) {
  const std::string message = *read_envelope(seed_json().front())->message;
  const SteeringLimits limits;
  for (auto _ : state) benchmark::DoNotOptimize(detail::scan_steering(message, limits));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

std::size_t table_bytes(const detail::Table& t) {
  std::size_t bytes = t.entries.size() * sizeof(t.entries[0]) + t.bits.size() * 8;
  for (const auto& row : t.rows) {
    bytes += sizeof(row);
    for (const auto& set : row.cube)
      bytes += sizeof(set) + (set.word_count() > 2 ? set.word_count() * 8 : 0);
  }
  for (const auto& a : t.actions)
    bytes += sizeof(a) + a.label.size() + a.action.reason.size() + a.action.target.size();
  return bytes;
}

// Parse, check and table construction of a generated policy; no analysis.
void compile_table(benchmark::State& state, std::size_t rules) {
  const std::string text = generate(rules, 8).text;
  const CompileOptions options;
  const detail::Sources sources{{"gen.recourse", text}};
  std::size_t bytes = 0, rows = 0;
  for (auto _ : state) {
    std::vector<Diagnostic> diagnostics;
    auto file = detail::parse_source(sources, 0, options.max_depth, diagnostics);
    auto specs = detail::check(*file, sources, options, diagnostics);
    auto table = detail::compile(specs.at(0), options, sources, diagnostics);
    bytes = table_bytes(*table);
    rows = table->rows.size();
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["table_MiB"] = static_cast<double>(bytes) / (1 << 20);
}

// recourse::compile(): the table plus the analysis `recourse check` reports (invariants,
// assertions, unreachable rules).
void compile_checked(benchmark::State& state, std::size_t rules) {
  const std::vector<Source> sources{{"gen.recourse", generate(rules, 8).text}};
  std::size_t warnings = 0;
  for (auto _ : state) {
    const Result<Bundle> r = compile(sources);
    if (!r.ok()) state.SkipWithError("does not compile");
    warnings = r.diagnostics().size();
  }
  state.counters["diagnostics"] = static_cast<double>(warnings);
}

void register_all() {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("decide/seed", [](benchmark::State& s) { decide(s, seed_case()); });
  RegisterBenchmark("ifchain/seed", seed_if_chain);
  RegisterBenchmark("ifchain_full/seed", seed_full_chain);
  RegisterBenchmark("route/seed", [](benchmark::State& s) { route(s, seed_case()); });
  RegisterBenchmark("match/seed", [](benchmark::State& s) { match(s, seed_case()); });
  RegisterBenchmark("json_to_decision/seed", json_to_decision);
  RegisterBenchmark("read_envelope/seed", read_json);
  RegisterBenchmark("steering/seed", steering);
  RegisterBenchmark("decide/peer", [](benchmark::State& s) { decide(s, peer_case()); });
  RegisterBenchmark("ifchain/peer", peer_if_chain);
  RegisterBenchmark("lookup/peer", peer_lookup);
  RegisterBenchmark("route/peer", [](benchmark::State& s) { route(s, peer_case()); });
  RegisterBenchmark("match/peer", [](benchmark::State& s) { match(s, peer_case()); });
  for (const std::string& file : example_files())
    RegisterBenchmark(("decide/examples/" + file).c_str(),
                      [file](benchmark::State& s) { decide(s, example_case(file)); });
  for (std::size_t n : kSizes) {
    const std::string suffix = "/gen/" + std::to_string(n);
    RegisterBenchmark(("decide" + suffix).c_str(),
                      [n](benchmark::State& s) { decide(s, generated_case(n)); });
    RegisterBenchmark(("ifchain" + suffix).c_str(),
                      [n](benchmark::State& s) { gen_if_chain(s, generated_case(n)); });
    RegisterBenchmark(("lookup" + suffix).c_str(),
                      [n](benchmark::State& s) { gen_lookup(s, generated_case(n)); });
    RegisterBenchmark(("route" + suffix).c_str(),
                      [n](benchmark::State& s) { route(s, generated_case(n)); });
    RegisterBenchmark(("match" + suffix).c_str(),
                      [n](benchmark::State& s) { match(s, generated_case(n)); });
    RegisterBenchmark(("compile_table" + suffix).c_str(), [n](benchmark::State& s) {
      compile_table(s, n);
    })->Unit(benchmark::kMillisecond);
    RegisterBenchmark(("check" + suffix).c_str(), [n](benchmark::State& s) {
      compile_checked(s, n);
    })->Unit(benchmark::kMillisecond);
  }
  for (std::size_t n : {std::size_t{10}, std::size_t{1000}}) {
    RegisterBenchmark(("threads/decide/gen/" + std::to_string(n)).c_str(),
                      [n](benchmark::State& s) { decide(s, generated_case(n)); })
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
    RegisterBenchmark(("threads/engine/gen/" + std::to_string(n)).c_str(),
                      [n](benchmark::State& s) { engine_decide(s, generated_case(n)); })
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
}

}  // namespace
}  // namespace recourse::bench

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-generated") {  // gen{10..10000}.recourse
    for (std::size_t n : recourse::bench::kSizes) {
      const std::string path = std::string(argv[2]) + "/gen" + std::to_string(n) + ".recourse";
      std::ofstream(path, std::ios::binary) << recourse::bench::generate(n, 8).text;
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  recourse::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const int bad = recourse::bench::g_disagreements.load();
  if (bad > 0) std::fprintf(stderr, "%d disagreements between the engine and a baseline\n", bad);
  return bad > 0 ? 1 : 0;
}
