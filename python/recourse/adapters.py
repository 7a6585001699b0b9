"""Adapters: what a failed call returned, in its protocol's own form, to an envelope.

Each returns an ``Adapted`` (the envelope dict, the table row that gave its code, the warnings)
read by the engine's adapters (docs/adapters.md has the tables: HTTP status and headers per RFC
9110 and the providers' documented bodies; transport errors; gRPC status codes and gRFC A6
pushback; JSON-RPC 2.0 and MCP errors). Pass it to ``Bundle.decide()`` or report it to a runner.
A raw form that cannot be read at all raises InputError (N001); anything readable, however
garbled, gives an envelope (garbled input maps to UNKNOWN, never to TRANSIENT).

``from_response`` and ``from_exception`` read the objects of common client libraries by duck
typing, importing none of them: a ``requests`` or ``httpx`` response (``status_code``,
``headers``, ``content``), ``urllib``'s (``status`` or ``code``, ``headers``, ``read()``), their
exceptions (``.response``, timeouts, connection errors), and a ``grpc.RpcError`` (``code()``,
``details()``, ``trailing_metadata()``).
"""

from __future__ import annotations

import errno as _errno
import json
import socket
from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union

from . import _recourse
from .types import Adapted

Headers = Union[Mapping[str, Any], Iterable[Tuple[str, Any]], None]


def _header_pairs(headers: Headers) -> List[Tuple[str, str]]:
    """Header fields in order as (name, value) strings; a repeated field stays two entries."""
    if headers is None:
        return []
    if hasattr(headers, "multi_items"):  # httpx.Headers
        items = headers.multi_items()
    elif hasattr(headers, "items"):  # dict, requests' CaseInsensitiveDict, http.client.HTTPMessage
        items = headers.items()
    else:
        items = headers
    out = []
    for name, value in items:
        if isinstance(value, (list, tuple)):  # {"Set-Cookie": ["a", "b"]}
            out.extend((_text(name), _text(v)) for v in value)
        else:
            out.append((_text(name), _text(value)))
    return out


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")  # RFC 9110 section 5.5: field values are octets
    return str(value)


def _body(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8", "surrogatepass")
    return json.dumps(body).encode("utf-8")  # a parsed JSON body


def from_http(status: int, headers: Headers = None, body: Any = b"", *,
              now_ms: Optional[int] = None) -> Adapted:
    """An HTTP response: ``status`` (100..599), header fields (a mapping or (name, value) pairs),
    the body as received (bytes, str, or a parsed JSON value). ``now_ms`` (ms since the epoch)
    turns HTTP-dates in Retry-After into delays; without it the response's Date header is the
    clock."""
    return _recourse._from_http(int(status), _header_pairs(headers), _body(body), now_ms)


def from_transport_error(error: str) -> Adapted:
    """A failure below HTTP, by the client's error text: "timeout", "ECONNRESET", "socket hang
    up", ... (TIMEOUT or TRANSIENT, retryable); anything else is UNKNOWN."""
    return _recourse._from_transport_error(str(error))


def from_grpc(status: Union[str, int, Any], message: str = "",
              metadata: Headers = None) -> Adapted:
    """A gRPC status: its name ("UNAVAILABLE"), number (14) or a ``grpc.StatusCode``; the
    message; the trailing metadata (grpc-retry-pushback-ms, grpc-status-details-bin)."""
    if hasattr(status, "name") and not isinstance(status, str):  # grpc.StatusCode
        status = status.name
    return _recourse._from_grpc(str(status), message or "", _header_pairs(metadata))


def from_jsonrpc(error: Union[Mapping[str, Any], int], message: str = "",
                 data: Any = None) -> Adapted:
    """A JSON-RPC 2.0 error: the error object ({"code", "message", "data"}) or its members."""
    if isinstance(error, Mapping):
        code, message, data = error.get("code"), error.get("message", ""), error.get("data")
        if not isinstance(code, int) or isinstance(code, bool):
            return from_raw({"error": dict(error)}, protocol="jsonrpc")
    else:
        code = error
    return _recourse._from_jsonrpc(int(code), str(message or ""),
                                   "" if data is None else json.dumps(data))


def from_mcp(reply: Union[Mapping[str, Any], str, bytes]) -> Adapted:
    """An MCP tools/call reply: a JSON-RPC response ({"result": CallToolResult} or {"error":
    ...}) or a bare CallToolResult ({"content": [...], "isError": true}), as a dict or text."""
    return _recourse._from_mcp(_json_text(reply))


def from_raw(raw: Union[Mapping[str, Any], str, bytes], protocol: Optional[str] = None, *,
             now_ms: Optional[int] = None) -> Adapted:
    """A raw form (docs/adapters.md, the traces' "raw"): {"status", "headers", "body"},
    {"transportError"}, a gRPC {"status", "message", "metadata"}, an MCP or JSON-RPC reply.
    ``protocol`` ("http", "grpc", "mcp", "jsonrpc"; None: the form's "protocol" member, else its
    shape)."""
    return _recourse._from_raw(protocol, _json_text(raw), now_ms)


def _json_text(value: Union[Mapping[str, Any], str, bytes]) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else json.dumps(value)


def _status(response: Any) -> Optional[int]:
    for name in ("status_code", "status", "code"):
        value = getattr(response, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _content(response: Any) -> bytes:
    try:
        content = getattr(response, "content", None)
        if isinstance(content, (bytes, str)):
            return _body(content)
        read = getattr(response, "read", None)
        if callable(read):  # urllib's response or HTTPError
            data = read()
            return data if isinstance(data, bytes) else b""
    except Exception:  # noqa: BLE001 - a streamed body not read, a closed connection
        pass
    return b""


def is_response(value: Any) -> bool:
    """Whether ``value`` looks like an HTTP response (an int status and headers)."""
    return _status(value) is not None and hasattr(value, "headers")


def from_response(response: Any, *, now_ms: Optional[int] = None) -> Adapted:
    """A response object of ``requests``, ``httpx`` or ``urllib`` (status, headers, body), read
    as ``from_http``. A body that was streamed and not read counts as empty."""
    status = _status(response)
    if status is None:
        raise TypeError(f"not an HTTP response: {type(response).__name__}")
    return from_http(status, getattr(response, "headers", None), _content(response),
                     now_ms=now_ms)


# OSError numbers the transport table knows, by errno name (docs/adapters.md).
_ERRNO_NAMES = {"ETIMEDOUT", "ECONNRESET", "EPIPE", "ECONNREFUSED", "ECONNABORTED",
                "EHOSTUNREACH", "ENETUNREACH"}


def _transport_text(exc: BaseException) -> Optional[str]:
    """The transport table's word for an exception, or None."""
    if isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower():
        return "timeout"
    if isinstance(exc, socket.gaierror):
        return "EAI_AGAIN" if exc.errno == socket.EAI_AGAIN else "ENOTFOUND"
    if isinstance(exc, OSError) and exc.errno is not None:
        name = _errno.errorcode.get(exc.errno, "")
        if name in _ERRNO_NAMES:
            return name
    return None


def from_exception(exc: BaseException, *, now_ms: Optional[int] = None) -> Adapted:
    """What a failed call raised: an exception carrying an HTTP response (``requests``'
    HTTPError, ``httpx.HTTPStatusError``, ``urllib.error.HTTPError``) is read as that response;
    a ``grpc.RpcError`` as its status; a timeout (TimeoutError, ``requests.Timeout``,
    ``httpx.TimeoutException``) as "timeout"; a connection error by the OSError it wraps
    (ECONNRESET, ECONNREFUSED, ...); anything else as a transport error of its text (UNKNOWN)."""
    response = getattr(exc, "response", None)
    if response is not None and _status(response) is not None:
        return from_response(response, now_ms=now_ms)
    if is_response(exc):  # urllib.error.HTTPError is its own response
        return from_response(exc, now_ms=now_ms)
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if callable(code) and callable(details):  # grpc.RpcError (a grpc.Call)
        metadata = getattr(exc, "trailing_metadata", None)
        return from_grpc(code(), details() or "", metadata() if callable(metadata) else None)
    seen = set()
    cause: Optional[BaseException] = exc
    while cause is not None and id(cause) not in seen:  # the chain a client wrapped
        seen.add(id(cause))
        text = _transport_text(cause)
        if text:
            return from_transport_error(text)
        cause = cause.__cause__ or cause.__context__
    return from_transport_error(f"{type(exc).__name__}: {exc}")
