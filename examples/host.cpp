// A host program embedding recourse: load the policies, call a (fake) tool, decide on each
// failure, act on the route. Build: cmake --build build --target host_example
#include <chrono>
#include <iostream>
#include <thread>

#include "recourse/recourse.hpp"

// A fake payment API: rate-limited twice, then it succeeds.
static bool create_payment(int call, std::string& error_json) {
  if (call < 3) {
    error_json = R"({"code":"RATE_LIMITED","retryable":true,"retryAfterMs":200,"traceId":"t-42"})";
    return false;
  }
  return true;
}

int main(int argc, char** argv) {
  const std::string rules = argc > 1 ? argv[1] : "rules/examples";
  recourse::Result<recourse::Bundle> compiled = recourse::compile_paths({rules});
  for (const auto& d : compiled.diagnostics()) std::cerr << recourse::to_text(d);
  if (!compiled.ok()) return 1;
  const recourse::Bundle& bundle = *compiled;

  recourse::Context context;
  context.tool = "payments.create";
  context.side_effect = recourse::SideEffect::None;  // the API rejected the call before charging
  context.operation_id = "order-1001";
  for (context.attempt = 1;; ++context.attempt) {
    std::string error_json;
    if (create_payment(context.attempt, error_json)) {
      std::cout << "payment created on call " << context.attempt << "\n";
      return 0;
    }
    const recourse::Result<recourse::Envelope> read = recourse::read_envelope(error_json);
    if (!read.ok()) return std::cerr << "unreadable error: " << read.message() << "\n", 1;
    const recourse::Decision d = bundle.decide(*read, context);
    std::cout << "call " << context.attempt << " failed: " << recourse::to_json(d, *read) << "\n";
    switch (d.route) {
      case recourse::Route::Retry:
        std::this_thread::sleep_for(std::chrono::milliseconds(d.delay_ms));
        continue;
      case recourse::Route::Replace:
        std::cout << "call " << d.target << " instead\n";
        return 0;
      default:
        std::cout << "giving up: " << recourse::to_string(d.route) << " (" << d.rule << ")\n";
        return 2;
    }
  }
}
