"""The adapters, directly and by duck typing of client libraries' responses and exceptions."""

import errno
import json
import socket

import pytest

import recourse


def test_http_429_with_retry_after():
    a = recourse.from_http(429, {"Retry-After": "5", "X-Request-Id": "req-9"}, b"")
    assert a.envelope["code"] == "RATE_LIMITED"
    assert a.envelope["retryable"] is True
    assert a.envelope["retryAfterMs"] == 5000
    assert a.envelope["traceId"] == "req-9"
    assert a.mapping == "http 429"


def test_http_body_problem_details_and_repeated_headers():
    body = {"type": "about:blank", "title": "Bad", "detail": "amount must be positive",
            "errors": [{"pointer": "#/amount", "detail": "must be positive"}]}
    a = recourse.from_http(422, [("Content-Type", "application/problem+json")], body)
    assert a.envelope["code"] == "VALIDATION"
    assert a.envelope["field"] == "amount"
    a = recourse.from_http(503, [("Retry-After", "1"), ("Retry-After", "2")])
    assert "retryAfterMs" not in a.envelope  # a singleton header given twice is dropped
    assert any(w.kind == "duplicate" or w.field == "retryAfterMs" for w in a.warnings)


def test_an_adapted_envelope_keeps_its_warnings_into_the_decision(bundle):
    a = recourse.from_http(503, {"Retry-After": "soon"})
    assert a.warnings
    d = bundle.decide(a, {"tool": "search.query", "sideEffect": "none"})
    assert d.warnings[0] == a.warnings[0]


def test_transport_grpc_jsonrpc_mcp():
    assert recourse.from_transport_error("ECONNRESET").envelope["code"] == "TRANSIENT"
    assert recourse.from_transport_error("read timeout").envelope["code"] == "TIMEOUT"
    g = recourse.from_grpc("UNAVAILABLE", "down", {"grpc-retry-pushback-ms": "250"})
    assert (g.envelope["code"], g.envelope["retryAfterMs"]) == ("TRANSIENT", 250)
    assert recourse.from_grpc(8).envelope["code"] == "RATE_LIMITED"
    j = recourse.from_jsonrpc({"code": -32602, "message": "Invalid params"})
    assert j.envelope["code"] == "VALIDATION"
    m = recourse.from_mcp({"result": {"content": [{"type": "text", "text": "boom"}],
                                      "isError": True}})
    assert m.envelope["code"] == "UNKNOWN" and m.envelope["message"] == "boom"


def test_a_raw_form_that_is_not_an_object_raises_input_error():
    with pytest.raises(recourse.InputError) as e:
        recourse.from_raw("[1, 2]")
    assert e.value.code == "N001"


class FakeResponse:
    """requests' and httpx's shape: status_code, headers, content."""

    def __init__(self, status, headers=None, content=b""):
        self.status_code, self.headers, self.content = status, headers or {}, content


class FakeHTTPError(Exception):
    def __init__(self, response):
        super().__init__("HTTP error")
        self.response = response


class FakeStatusCode:
    name = "RESOURCE_EXHAUSTED"


class FakeRpcError(Exception):
    def code(self):
        return FakeStatusCode()

    def details(self):
        return "quota"

    def trailing_metadata(self):
        return (("grpc-retry-pushback-ms", "100"),)


def test_responses_and_exceptions_by_duck_typing():
    r = FakeResponse(429, {"Retry-After": "2"}, b'{"error": {"message": "slow down"}}')
    assert recourse.from_response(r).envelope["retryAfterMs"] == 2000
    assert recourse.from_exception(FakeHTTPError(r)).envelope["code"] == "RATE_LIMITED"
    g = recourse.from_exception(FakeRpcError())
    assert (g.envelope["code"], g.envelope["retryAfterMs"]) == ("RATE_LIMITED", 100)
    assert recourse.from_exception(socket.timeout()).envelope["code"] == "TIMEOUT"
    assert recourse.from_exception(ConnectionResetError(errno.ECONNRESET, "reset")) \
        .envelope["code"] == "TRANSIENT"
    try:
        try:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused")
        except OSError as inner:
            raise RuntimeError("client failed") from inner
    except RuntimeError as wrapped:
        assert recourse.from_exception(wrapped).envelope["code"] == "TRANSIENT"
    assert recourse.from_exception(ValueError("odd")).envelope["code"] == "UNKNOWN"
    assert recourse.raw_exception(FakeHTTPError(r))["status"] == 429
    assert json.dumps(recourse.raw_response(r))
