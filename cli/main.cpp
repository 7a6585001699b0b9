// recourse: check, explain and run tool-failure recovery policies from the command line.
#include <algorithm>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "bench.hpp"
#include "cli.hpp"
#include "simulate.hpp"

namespace {

// Every option of every subcommand takes one value per flag and repeats for more (`-p a -p b`),
// as OPA's `-d` does: a list option that went on taking values swallowed the positionals after
// it (`replay --policy DIR trace.jsonl` read the trace as a policy). A fixed count, such as
// --mix's four, is kept.
void one_value_per_flag(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands({}))
    for (CLI::Option* option : command->get_options())
      if (!option->get_positional()) option->allow_extra_args(false);
}

}  // namespace

int main(int argc, char** argv) {
  using recourse::cli::Format;
  recourse::cli::Options o;
  CLI::App app{"recourse: decide how to recover when a tool call fails"};
  app.require_subcommand(1);
  const std::map<std::string, Format> formats{{"text", Format::Text}, {"json", Format::Json}};
  auto common = [&](CLI::App* c) {
    c->add_option("--format", o.format, "output format: text (default) or json")
        ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case).description(""))
        ->type_name("text|json");
    c->add_flag("--strict", o.strict, "treat warnings as errors");
  };
  auto inputs = [&](CLI::App* c) {
    c->add_option("--policy,-p", o.policies, "policy files or directories")->required();
    c->add_option("--envelope,-e", o.envelope, "envelope JSON file (default: stdin)");
    c->add_option("--context,-c", o.context, "context JSON file");
    c->add_option("--from", o.from,
                  "the envelope input is a raw form, read by its adapter (auto: when it looks "
                  "like one)")
        ->check(CLI::IsMember({"http", "grpc", "mcp", "jsonrpc", "auto"}))
        ->type_name("http|grpc|mcp|jsonrpc|auto");
  };

  // The compiler's limits a user may need to raise (docs/language.md section 17): a whole number
  // of `unit` (no sign, exponent or overflow), its default shown in --help.
  auto limit = [&](CLI::App* c, const char* name, std::size_t& value, const char* unit,
                   const char* help) {
    c->add_option(name, value, help)
        ->check(CLI::Validator(
            [unit](std::string& text) {
              const bool digits = !text.empty() && text.size() <= 19 &&
                                  text.find_first_not_of("0123456789") == std::string::npos;
              return digits ? std::string()
                            : fmt::format("expected a whole number of {}, got {}", unit, text);
            },
            "N"))
        ->capture_default_str();
  };
  auto compiles = [&](CLI::App* c) {
    limit(c, "--max-rules", o.compile.max_rules, "rules", "rules per policy; more is E091");
    limit(c, "--max-codes", o.compile.max_codes, "codes",
          "codes declared per policy, its bases' included; more is E095");
  };
  auto analyses = [&](CLI::App* c) {
    limit(c, "--max-cover-splits", o.compile.max_cover_splits, "splits",
          "splits one coverage question may make; a question that needs more is W109");
  };

  auto* check = app.add_subcommand("check", "check policy files and report every problem");
  common(check);
  compiles(check);
  analyses(check);
  check->add_option("paths", o.paths, "policy files or directories")->required();
  limit(check, "--analysis-work", o.compile.max_analysis_work, "row tests",
        "row tests the analysis may spend per policy; questions beyond it are W109");

  auto* decide =
      app.add_subcommand("decide", "decide one failed call; prints the decision as JSON");
  common(decide);
  compiles(decide);
  inputs(decide);
  auto log = [&](CLI::App* c) {
    c->add_option("--log", o.log, "append each decision to FILE as a JSON line (decision log)")
        ->type_name("FILE");
  };
  log(decide);
  auto log_text = [&](CLI::App* c) {
    c->add_option("--log-text", o.log_text,
                  "the decision log's message and suggestion: redact (default: as modelMessage, "
                  "secrets and markup removed) or keep (as received)")
        ->check(CLI::IsMember({"redact", "keep"}))
        ->type_name("redact|keep");
  };
  log_text(decide);
  decide->add_option("--state", o.state, "shared state: memory, sqlite:PATH or redis://HOST:PORT")
      ->type_name("SPEC");

  auto* explain = app.add_subcommand("explain", "show which rule matched and why");
  common(explain);
  compiles(explain);
  inputs(explain);

  auto* envelope = app.add_subcommand(
      "envelope", "read a raw HTTP, gRPC, MCP or JSON-RPC error; print the canonical envelope");
  common(envelope);
  compiles(envelope);
  envelope->add_option("--from", o.from, "the raw form's protocol")
      ->required()
      ->check(CLI::IsMember({"http", "grpc", "mcp", "jsonrpc"}))
      ->type_name("http|grpc|mcp|jsonrpc");
  envelope->add_option("--now", o.now, "clock for HTTP-dates and epoch resets, ms since the epoch");
  envelope->add_option("--policy,-p", o.policies,
                       "policies whose `map` lines apply (with --context)");
  envelope->add_option("--context,-c", o.context,
                       "context JSON file (its tool selects the policy)");
  envelope->add_option("raw", o.paths, "raw form JSON file (default: stdin)");

  auto* replay =
      app.add_subcommand("replay", "replay a JSONL trace of failed calls through the policies");
  common(replay);
  compiles(replay);
  replay->add_option("--policy,-p", o.policies, "policy files or directories")->required();
  replay
      ->add_option("--from", o.from,
                   "auto: a line's envelope that looks like a raw form is read by its adapter")
      ->check(CLI::IsMember({"auto"}))
      ->type_name("auto");
  replay->add_option("--state", o.state, "shared state: memory, sqlite:PATH or redis://HOST:PORT")
      ->type_name("SPEC");
  replay
      ->add_option("--shadow", o.shadow,
                   "candidate policies decided beside --policy, read-only: a table of where they "
                   "disagree")
      ->type_name("PATH");
  replay->add_option("trace", o.paths, "trace file, one {\"tool\",\"envelope\",\"context\"} a line")
      ->required();
  log(replay);
  log_text(replay);
  replay
      ->add_option("--max-line-bytes", o.max_line_bytes,
                   "longest trace line read; a longer one is a bad line")
      ->capture_default_str();
  replay->add_option("--max-trace-bytes", o.max_trace_bytes, "largest trace read")
      ->capture_default_str();

  auto* ledger = app.add_subcommand("ledger", "list or show side-effect ledger entries");
  common(ledger);
  ledger->add_option("--state", o.state, "the store: sqlite:PATH or redis://HOST:PORT")
      ->required()
      ->type_name("SPEC");
  ledger->add_option("--limit", o.limit, "entries listed at most (default 1000)");
  ledger->add_option("operations", o.paths, "operations to show (default: list every entry)");

  auto* breaker = app.add_subcommand(
      "breaker", "show, isolate, open or reset tools' circuit breakers in a shared store");
  common(breaker);
  breaker->add_option("--state", o.state, "the store: memory, sqlite:PATH or redis://HOST:PORT")
      ->required()
      ->type_name("SPEC");
  breaker
      ->add_option("--for-ms", o.for_ms,
                   "open: ms the circuit is held open before its half-open probe (default 0: "
                   "the policy's cooldown alone)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1'000'000'000'000'000}));
  log(breaker);
  breaker->add_option("command", o.breaker, "show, isolate, open or reset")
      ->required()
      ->check(CLI::IsMember({"show", "isolate", "open", "reset"}));
  breaker->add_option("tools", o.paths, "the tools (breaker keys)")->required();
  breaker
      ->add_option("--endpoint", o.endpoint,
                   "the circuit of each tool for this target (context.endpoint); default: the "
                   "tool's own")
      ->type_name("ENDPOINT");

  auto* compile =
      app.add_subcommand("compile", "compile policies; --dump prints the decision tables");
  common(compile);
  compiles(compile);
  compile->add_flag("--dump", o.dump, "print each decision table as stable text");
  compile->add_option("paths", o.paths, "policy files or directories")->required();

  auto* diff = app.add_subcommand(
      "diff", "every region of inputs whose decision changes between two versions of a policy");
  common(diff);
  compiles(diff);
  analyses(diff);
  diff->add_option("--name", o.name, "the policy to compare, when a file holds several");
  diff->add_option("before", o.before, "the policy file before the change")->required();
  diff->add_option("after", o.after, "the policy file after the change")->required();

  auto* format =
      app.add_subcommand("fmt", "rewrite policy files in the canonical layout, comments kept");
  format->add_flag("--check", o.check, "write nothing; list the files that would change (exit 1)");
  format->add_option("paths", o.paths, "policy files or directories; - formats stdin to stdout")
      ->required();

  auto* test =
      app.add_subcommand("test", "run the test blocks of policy files; exit 1 on a failure");
  common(test);
  compiles(test);
  test->add_option("paths", o.paths, "policy files or directories")->required();
  test->add_flag("--coverage", o.coverage,
                 "report which rules, defaults and guards each policy's tests reach");
  test->add_option("--threshold", o.threshold,
                   "with coverage: exit 1 when less than PERCENT of them are reached")
      ->check(CLI::Range(0.0, 100.0))
      ->type_name("PERCENT");

  auto* fuzz = app.add_subcommand(
      "fuzz", "attack policies with adversarial sequences of failures; exit 1 on a violation");
  common(fuzz);
  compiles(fuzz);
  fuzz->add_option("paths", o.paths, "policy files or directories")->required();
  fuzz->add_option("--seconds", o.seconds, "time to spend on each policy (without --sequences)")
      ->check(CLI::Range(0.0, 86400.0));
  fuzz->add_option("--sequences", o.sequences, "sequences per policy (0: until --seconds)")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40));
  fuzz->add_option("--seed", o.seed, "seed: sequence i of a seed is always the same")
      ->check(CLI::NonNegativeNumber);
  fuzz->add_option("--max-length", o.max_length, "failed calls per sequence (1..1000, default 16)")
      ->check(CLI::Range(1, 1000));
  fuzz->add_option("--max-violations", o.max_violations, "stop a policy after this many")
      ->check(CLI::Range(1, 1000));
  fuzz->add_option("--out", o.out, "write each violating sequence as DIR/POLICY-N.jsonl");
  fuzz->add_option("--tool", o.tool, "fuzz only the policy with this name");

  auto* simulate = app.add_subcommand(
      "simulate", "run the seed's benchmark (and hostile scenarios) through the policies");
  common(simulate);
  recourse::cli::add_simulate_options(*simulate, o);

  recourse::cli::BenchOptions bench_options;
  auto* bench =
      app.add_subcommand("bench", "nanoseconds per decision over inputs across the domain");
  recourse::cli::add_bench_options(*bench, bench_options);

  recourse::cli::LspLimits lsp_limits;
  auto* lsp = app.add_subcommand(
      "lsp", "a Language Server Protocol server on stdin and stdout, for editors");
  compiles(lsp);
  lsp->add_option("--max-message-bytes", lsp_limits.max_message_bytes,
                  "largest message read; a larger one is refused")
      ->capture_default_str();
  lsp->add_option("--max-documents", lsp_limits.max_documents, "documents open at once")
      ->capture_default_str();

  one_value_per_flag(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // A malformed --state spec is a usage error, reported before the command reads anything. An
  // empty one is malformed too: only leaving --state out means this run's own state.
  const auto given = [](const CLI::App* c) {
    const CLI::Option* state = c->get_option_no_throw("--state");
    return state && state->count() > 0;
  };
  const auto commands = app.get_subcommands();
  if (std::any_of(commands.begin(), commands.end(), given)) {
    const auto spec = recourse::read_store_spec(o.state);
    if (!spec.ok()) return std::cerr << "error: --state: " << spec.message() << "\n", 2;
  }
  try {
    if (*check) return recourse::cli::run_check(o);
    if (*decide) return recourse::cli::run_decide(o, false);
    if (*explain) return recourse::cli::run_decide(o, true);
    if (*envelope) return recourse::cli::run_envelope(o);
    if (*replay) return recourse::cli::run_replay(o);
    if (*ledger) return recourse::cli::run_ledger(o);
    if (*breaker) return recourse::cli::run_breaker(o);
    if (*compile) return recourse::cli::run_compile(o);
    if (*diff) return recourse::cli::run_diff(o);
    if (*format) return recourse::cli::run_fmt(o);
    if (*test) return recourse::cli::run_test(o);
    if (*fuzz) return recourse::cli::run_fuzz(o);
    if (*simulate) return recourse::cli::run_simulate(o);
    if (*bench) return recourse::cli::run_bench(bench_options);
    if (*lsp) return recourse::cli::run_lsp(lsp_limits, o.compile);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
