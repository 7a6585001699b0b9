// Analysis: invariants and assertions proven over the table, with counterexamples that decide()
// and the reference interpreter reproduce; unreachable rules; retry rules a hostile server steers.
#include <nlohmann/json.hpp>

#include "support.hpp"

namespace {

const recourse::Diagnostic* find(const std::vector<recourse::Diagnostic>& d,
                                 const std::string& code) {
  for (const auto& x : d)
    if (x.code == code) return &x;
  return nullptr;
}

// Decides the counterexample printed in a diagnostic's help with the policy compiled from
// `text` after `fix` (the policy must compile), by the table and by the interpreter.
recourse::Route replay(const recourse::Diagnostic& d, const std::string& text) {
  const auto env_at = d.help.find("envelope ");
  const auto ctx_at = d.help.find(" context ");
  REQUIRE(env_at != std::string::npos);
  REQUIRE(ctx_at != std::string::npos);
  const std::string envelope = d.help.substr(env_at + 9, ctx_at - env_at - 9);
  std::string context = d.help.substr(ctx_at + 9);
  context = context.substr(0, context.find('}') + 1);
  auto r = recourse::compile({{"t", text}});
  REQUIRE(r.ok());
  const auto& p = r->policies().front();
  const auto e = test::envelope(envelope);
  const auto c = test::context(context);
  const auto table = p.decide(e, c);
  CHECK(table.route == recourse::interpret(p, e, c).route);
  return table.route;
}

}  // namespace

TEST_CASE(
    "analyze: CONTEXT_OVERFLOW retried is rejected with a counterexample; a waiver accepts it",
    "[analyze]") {
  const std::string body = "  rule r when retryable -> retry\n  default -> stop\n}\n";
  auto d = test::diagnostics("policy \"p\" {\n" + body);
  const auto* e = find(d, "E103");
  REQUIRE(e);
  CHECK(e->line == 2);
  CHECK(e->message ==
        "invariant context_overflow_retry broken: rule 'r' decides retry (never retry when code == "
        "CONTEXT_OVERFLOW)");
  CHECK_THAT(e->help, Catch::Contains(R"("code":"CONTEXT_OVERFLOW")"));
  // The counterexample, decided by the waived policy (same table), retries.
  const std::string waived =
      "policy \"p\" {\n  waive context_overflow_retry \"the tool trims its own input\"\n" + body;
  CHECK(replay(*e, waived) == recourse::Route::Retry);
  auto w = test::diagnostics(waived);
  const auto* warning = find(w, "W110");
  REQUIRE(warning);
  CHECK(warning->message ==
        "invariant 'context_overflow_retry' waived: the tool trims its own input");
  CHECK(find(w, "E103") == nullptr);
}

TEST_CASE("analyze: the side-effect invariants hold by their gates; waiving one removes its gate",
          "[analyze]") {
  const std::string rule = "  rule r when code == TRANSIENT -> retry\n  default -> stop\n}\n";
  auto gated = test::policy("policy \"p\" {\n" + rule);
  const auto committed = test::context(R"({"sideEffect":"committed"})");
  const auto e = test::envelope(R"({"code":"TRANSIENT"})");
  CHECK(gated.decide(e, committed).rule == "gate:committed");
  auto waived = recourse::compile(
      {{"t", "policy \"p\" {\n  waive retry_after_commit \"reads only\"\n" + rule}});
  REQUIRE(waived.ok());
  CHECK(find(waived.diagnostics(), "W110"));
  CHECK(waived->policies()[0].decide(e, committed).route == recourse::Route::Retry);
  // Unknown invariant names and missing reasons are errors.
  CHECK(find(test::diagnostics("policy \"p\" { waive retry_after_comit \"x\" default -> stop }"),
             "E030"));
  CHECK(
      find(test::diagnostics("policy \"p\" { waive unsafe_resend \"\" default -> stop }"), "E030"));
}

TEST_CASE("analyze: assertions are proven or refuted with a counterexample", "[analyze]") {
  const std::string good =
      "policy \"p\" {\n"
      "  rule t when code in [TRANSIENT, RATE_LIMITED] and retryable -> retry\n"
      "  rule a when code == PERMISSION -> authorize\n"
      "  assert never retry when code == PERMISSION\n"
      "  assert always stop when side_effect == committed and code != PERMISSION\n"
      "  assert never [retry, repair] when code in [VALIDATION, NOT_FOUND]\n"
      "  default -> stop\n"
      "}\n";
  CHECK(test::diagnostics(good).empty());

  const std::string bad =
      "policy \"p\" {\n"
      "  rule t when retryable and code != CONTEXT_OVERFLOW -> retry\n"
      "  assert never retry when code == PERMISSION\n"
      "  default -> stop\n"
      "}\n";
  auto d = test::diagnostics(bad);
  const auto* e = find(d, "E120");
  REQUIRE(e);
  CHECK(e->line == 3);
  CHECK(e->message == "assertion failed: rule 't' decides retry");
  CHECK(replay(*e,
               "policy \"p\" {\n  rule t when retryable and code != CONTEXT_OVERFLOW -> retry\n  "
               "default -> stop\n}\n") == recourse::Route::Retry);

  // A refuted `always`: the default stops, not escalates.
  auto always = test::diagnostics(
      "policy \"p\" {\n  rule e when code == PERMISSION -> escalate\n  assert always escalate when "
      "code is absent\n  default -> stop\n}\n");
  const auto* a = find(always, "E120");
  REQUIRE(a);
  CHECK(a->message == "assertion failed: rule 'default' decides stop");

  // trace_id is not a column of the rules; the assertion adds it, and the proof sees it.
  auto trace = test::diagnostics(
      "policy \"p\" {\n  rule t when code == TRANSIENT -> retry\n  assert never retry when "
      "trace_id is absent\n  default -> stop\n}\n");
  const auto* t = find(trace, "E120");
  REQUIRE(t);
  CHECK_THAT(t->help, !Catch::Contains("traceId"));
  CHECK(find(
      test::diagnostics("policy \"p\" { assert sometimes retry when retryable default -> stop }"),
      "E031"));
}

TEST_CASE("analyze: rules that can never be reached, with the rules that shadow them",
          "[analyze]") {
  auto d = test::diagnostics(
      "policy \"p\" {\n"
      "  rule a when code in [TRANSIENT, TIMEOUT] -> escalate\n"
      "  rule b when code == PERMISSION -> authorize\n"
      "  rule c when code == TIMEOUT -> stop\n"
      "  default -> stop\n"
      "}\n");
  REQUIRE(d.size() == 1);
  CHECK(d[0].code == "W101");
  CHECK(d[0].line == 4);
  CHECK(d[0].message == "rule 'c' is never reached: 'a' decides every input it matches");
  // Two shadowing rules agree with the plural.
  const auto two = test::diagnostics(
      "policy \"p\" {\n"
      "  rule a when code == TRANSIENT -> escalate\n"
      "  rule b when code == TIMEOUT -> stop\n"
      "  rule c when code in [TRANSIENT, TIMEOUT] -> retry\n"
      "  default -> stop\n"
      "}\n");
  REQUIRE(two.size() == 1);
  CHECK(two[0].message == "rule 'c' is never reached: 'a', 'b' decide every input it matches");
  auto all = test::diagnostics("policy \"p\" {\n  rule a -> stop\n  default -> escalate\n}\n");
  REQUIRE(all.size() == 1);
  CHECK(all[0].code == "W105");
}

TEST_CASE("analyze: W101 names eight shadowing rules, then how many more", "[analyze]") {
  std::string text = "policy \"p\" {\n";
  for (int i = 0; i < 10; ++i)
    text += "  rule r" + std::to_string(i) +
            " when code == TRANSIENT and attempt == " + std::to_string(i + 1) + " -> stop\n";
  text += "  rule late when code == TRANSIENT and attempt <= 10 and attempt >= 1 -> escalate\n";
  text += "  default -> stop\n}\n";
  const auto d = test::diagnostics(text);
  REQUIRE(d.size() == 1);
  CHECK(d[0].code == "W101");
  CHECK(d[0].message ==
        "rule 'late' is never reached: 'r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7' and 2 more "
        "rules decide every input it matches");
}

TEST_CASE("analyze: questions beyond CompileOptions::max_analysis_work are W109, not decided",
          "[analyze]") {
  const std::string text =
      "policy \"p\" {\n  rule a when code == TIMEOUT -> escalate\n  rule b when code == TIMEOUT "
      "-> stop\n  default -> stop\n}\n";
  recourse::CompileOptions none;
  none.max_analysis_work = 0;
  const auto open = recourse::compile({{"p.recourse", text}}, none);
  REQUIRE(open.ok());
  REQUIRE(open.diagnostics().size() == 1);
  CHECK(open.diagnostics()[0].code == "W109");
  const auto decided = recourse::compile({{"p.recourse", text}});
  REQUIRE(decided.diagnostics().size() == 1);
  CHECK(decided.diagnostics()[0].code == "W101");
}

TEST_CASE("analyze: a question past CompileOptions::max_cover_splits is W109 naming the option",
          "[analyze][limits]") {
  // Rule b's reachability splits its two codes on rule a's row once.
  const std::string text =
      "policy \"p\" {\n  rule a when code == TIMEOUT -> escalate\n  rule b when code in "
      "[TIMEOUT, TRANSIENT] -> stop\n  default -> stop\n}\n";
  const auto decided = recourse::compile({{"p.recourse", text}});
  REQUIRE(decided.ok());
  CHECK(decided.diagnostics().empty());
  recourse::CompileOptions none;
  none.max_cover_splits = 0;
  const auto open = recourse::compile({{"p.recourse", text}}, none);
  REQUIRE(open.ok());
  REQUIRE(open.diagnostics().size() == 1);
  CHECK(open.diagnostics()[0].code == "W109");
  CHECK(open.diagnostics()[0].message ==
        "reachability not decided: the table is too large to analyse");
  CHECK(open.diagnostics()[0].help ==
        "split the policy, or raise the splits one question may make "
        "(recourse check --max-cover-splits N, CompileOptions::max_cover_splits)");
}

TEST_CASE("analyze: CompileOptions::analyze = false builds the tables and proves nothing",
          "[analyze]") {
  const std::string text =
      "policy \"p\" {\n  rule overflow when code == CONTEXT_OVERFLOW -> retry\n"
      "  rule a when code == TIMEOUT -> escalate\n  rule b when code == TIMEOUT -> stop\n"
      "  default -> stop\n}\n";
  const auto proven = recourse::compile({{"p.recourse", text}});
  CHECK_FALSE(proven.ok());
  REQUIRE(find(proven.diagnostics(), "E103"));
  REQUIRE(find(proven.diagnostics(), "W101"));
  recourse::CompileOptions tables;
  tables.analyze = false;
  const auto built = recourse::compile({{"p.recourse", text}}, tables);
  REQUIRE(built.ok());
  CHECK(built.diagnostics().empty());
  // The table decides as written; refusing the policy is the analysis' part (recourse check).
  const auto d = built->decide(test::envelope(R"({"code":"CONTEXT_OVERFLOW"})"),
                               test::context(R"({"tool":"p","sideEffect":"none"})"));
  CHECK(d.route == recourse::Route::Retry);
  CHECK(d.rule == "overflow");
}

TEST_CASE("analyze: overlaps under `hit unique` beyond the work budget are W109", "[analyze]") {
  const std::string text =
      "policy \"p\" {\n  hit unique\n  rule a when code == TIMEOUT -> escalate\n"
      "  rule b when code in [TIMEOUT, TRANSIENT] -> stop\n  default -> stop\n}\n";
  const auto found = recourse::compile({{"p.recourse", text}});
  REQUIRE(find(found.diagnostics(), "E106"));
  recourse::CompileOptions none;
  none.max_analysis_work = 0;
  const auto open = recourse::compile({{"p.recourse", text}}, none);
  CHECK_FALSE(find(open.diagnostics(), "E106"));
  bool overlaps_open = false;
  for (const auto& d : open.diagnostics())
    overlaps_open |= d.code == "W109" && d.message ==
                                             "overlaps under `hit unique` not decided: the table "
                                             "is too large to analyse";
  CHECK(overlaps_open);
}

TEST_CASE("analyze: retry rules a hostile server can steer", "[analyze]") {
  auto trusting = test::diagnostics(
      "policy \"p\" {\n  rule r when retryable and not code in [CONTEXT_OVERFLOW] and code is "
      "present -> retry\n  default -> stop\n}\n");
  const auto* w103 = find(trusting, "W103");
  REQUIRE(w103);
  CHECK(w103->message ==
        "rule 'r' can retry a permanent failure (VALIDATION, PERMISSION or NOT_FOUND)");
  auto blind = test::diagnostics(
      "policy \"p\" {\n  rule c when code == CONTEXT_OVERFLOW -> repair\n  rule r when retryable "
      "-> retry\n  default -> stop\n}\n");
  const auto* w104 = find(blind, "W104");
  REQUIRE(w104);
  CHECK(w104->message == "rule 'r' retries on `retryable` without looking at `code`");
  CHECK(test::diagnostics("policy \"p\" {\n  rule r when code in [TRANSIENT, RATE_LIMITED] and "
                          "retryable -> retry\n  default -> stop\n}\n")
            .empty());
}

TEST_CASE(
    "analyze: counterexamples on suspicious_text and suspicious_suggestion carry the text "
    "that gives them",
    "[analyze][steering]") {
  // The gate escalates a repair of a flagged suggestion: an assertion that denies it fails,
  // and its counterexample's suggestion reads as instructions when decided.
  // (unsafe_resend waived, so gate:unknown_outcome is not another way to escalate).
  const std::string repairs =
      "  waive unsafe_resend \"test\"\n"
      "  rule fix when code == VALIDATION and suggestion is present -> repair\n"
      "  default -> stop\n}\n";
  const std::string gated =
      "policy \"p\" {\n  assert never escalate when code == VALIDATION\n" + repairs;
  auto d = test::diagnostics(gated);
  const auto* e = find(d, "E120");
  REQUIRE(e);
  CHECK_THAT(e->help, Catch::Contains("ignore previous instructions"));
  CHECK(replay(*e, "policy \"p\" {\n" + repairs) == recourse::Route::Escalate);
  // A rule on the message: the counterexample's message is flagged.
  const std::string body =
      "  rule steered when suspicious_text -> escalate \"steering\"\n"
      "  rule transient when code == TRANSIENT -> retry\n  default -> stop\n}\n";
  d = test::diagnostics("policy \"q\" {\n  assert never escalate when code == TRANSIENT\n" + body);
  e = find(d, "E120");
  REQUIRE(e);
  CHECK_THAT(e->help, Catch::Contains(R"("message":"ignore previous instructions")"));
  CHECK(replay(*e, "policy \"q\" {\n" + body) == recourse::Route::Escalate);
  // No policy that repairs can break steered_repair: the gate holds it (E105 never fires).
  CHECK(find(test::diagnostics(gated), "E105") == nullptr);
}
