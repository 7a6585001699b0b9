import recourse

bundle = recourse.Bundle.from_paths("rules/examples")  # compile once; reload any time
health = recourse.Health(recourse.Store("memory"))     # one per process ("sqlite:...", "redis://...")

replies = iter([recourse.Failure(raw={"status": 429, "headers": {"Retry-After": "1"}}),
                recourse.Failure(raw={"transportError": "ECONNRESET"}),
                {"hits": ["docs/python.md"]}])


def search(action: recourse.Action):
    """The tool call: a real agent sends action.arguments (and action.idempotency_key) here."""
    last = action.decision
    print(f"call {action.tool} #{action.attempt}"
          + (f" after {last.route} {last.delay_ms} ms ({last.rule})" if last else ""))
    return next(replies)  # a result, a Failure, or raise: the exception is read as a failure


result = recourse.run(bundle, "search.query", search, {"query": "recovery"},
                      operation_id="op-1", health=health)
print(result.ending, result.value)

# One decision without a loop: a dict in, a typed Decision out.
d = bundle.decide({"code": "RATE_LIMITED", "retryable": True, "retryAfterMs": 1000},
                  {"tool": "payments.create", "sideEffect": "none", "attempt": 1})
print(d.route, d.delay_ms, d.rule, d.budgets.attempts.after)
