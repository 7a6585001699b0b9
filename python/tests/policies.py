"""Policies of the runner tests (as tests/runner_support.hpp's, with short waits)."""

ORDERS = """version 1
policy "orders.create" {
  tool { idempotent = false  arguments = [amount, currency]  idempotency_keys = true }
  limits { attempts = 4  repairs = 1  retry_after_max = 30s  deadline = 2m  min_delay = 10ms  on_exhausted = stop }
  backoff constant base 20ms jitter none
  rule already_done when side_effect == committed -> stop
  rule throttled when code in [TRANSIENT, RATE_LIMITED] and retryable and side_effect == none -> retry
  rule keyed_resend when code == TIMEOUT -> retry
  rule fix when code == VALIDATION and field in arguments -> repair
  default -> stop
}
"""

WRITE = """version 1
policy "orders.write" {
  tool { idempotent = false  idempotency_keys = false }
  limits { attempts = 3 }
  backoff constant base 20ms jitter none
  rule lost when code == TIMEOUT -> retry
  default -> stop
}
"""

SEARCH = """version 1
policy "search.query" {
  tool { idempotent = true  fallback = "search.cache" }
  limits { attempts = 5  deadline = 1m  min_delay = 10ms }
  breaker { failures = 2  cooldown = 30s }
  backoff constant base 20ms jitter none
  rule transient when code in [TRANSIENT, RATE_LIMITED, TIMEOUT] -> retry
  default -> stop
}
"""
