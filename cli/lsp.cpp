// `recourse lsp`: the transport and the session of the Language Server Protocol server.
//
// Messages are JSON-RPC 2.0 objects, each after a `Content-Length: N` header and an empty line
// (LSP 3.17, "Base Protocol"); other headers are read past. The session answers `initialize`
// with the capabilities below, keeps the open documents (full or ranged changes), publishes each
// document's diagnostics after every open, change and save, and answers hover, completion,
// definition and formatting (lsp_features.cpp). Requests before `initialize` are refused with
// ServerNotInitialized, requests after `shutdown` with InvalidRequest; `exit` ends the session.
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "lsp.hpp"

namespace recourse::cli {
namespace lsp {
namespace {

// JSON-RPC 2.0 and LSP error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;

constexpr std::size_t kMaxHeaderLine = 4096;  // bytes of one header line
constexpr std::size_t kMaxHeaders = 64;       // header lines of one message

enum class Read { Message, End, TooLarge, Broken };

// Reads one header line (its CR LF or LF dropped) of at most kMaxHeaderLine bytes.
bool header_line(std::istream& in, std::string& line) {
  line.clear();
  for (int c; (c = in.get()) != EOF;) {
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (line.size() == kMaxHeaderLine) return false;
    line += static_cast<char>(c);
  }
  return false;
}

// Reads the next message's body into `body`. A body beyond `max` is read past (TooLarge, with
// its size in `size`); headers that cannot be read (no Content-Length, a line too long) are
// Broken: the stream cannot be followed after them.
Read read_message(std::istream& in, std::size_t max, std::string& body, std::uint64_t& size) {
  std::string line;
  std::optional<std::uint64_t> length;
  for (std::size_t n = 0;; ++n) {
    if (!header_line(in, line))
      return line.empty() && in.eof() && n == 0 ? Read::End : Read::Broken;
    if (line.empty()) break;
    if (n == kMaxHeaders) return Read::Broken;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) return Read::Broken;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name != "content-length") continue;
    const std::string value = line.substr(line.find_first_not_of(' ', colon + 1));
    if (value.empty() || value.size() > 15 ||
        value.find_first_not_of("0123456789") != std::string::npos)
      return Read::Broken;
    length = std::stoull(value);
  }
  if (!length) return Read::Broken;
  size = *length;
  if (*length > max) {
    in.ignore(static_cast<std::streamsize>(*length));
    return in.gcount() == static_cast<std::streamsize>(*length) ? Read::TooLarge : Read::Broken;
  }
  body.resize(*length);
  in.read(body.data(), static_cast<std::streamsize>(*length));
  return in.gcount() == static_cast<std::streamsize>(*length) ? Read::Message : Read::Broken;
}

class Session {
 public:
  Session(std::ostream& out, const LspLimits& limits, const CompileOptions& options)
      : out_(out), limits_(limits), options_(options) {}

  // Handles one message; false when the session ends (`exit`).
  bool handle(const std::string& body) {
    json message;
    try {
      message = json::parse(body);
    } catch (const json::exception& e) {
      reply_error(nullptr, kParseError, std::string("not JSON: ") + e.what());
      return true;
    }
    if (!message.is_object() || !message.contains("method") || !message["method"].is_string()) {
      // A response to a request of ours (we send none) is read past.
      if (message.is_object() && message.contains("id") &&
          (message.contains("result") || message.contains("error")))
        return true;
      reply_error(message.is_object() && message.contains("id") ? message["id"] : json(nullptr),
                  kInvalidRequest, "a request needs a string \"method\"");
      return true;
    }
    const std::string method = message["method"];
    const bool request = message.contains("id");
    const json id = request ? message["id"] : json(nullptr);
    const json params = message.value("params", json::object());
    if (method == "exit") return false;
    if (!initialized_ && method != "initialize") {
      if (request) reply_error(id, kServerNotInitialized, "initialize first");
      return true;
    }
    if (shut_down_ && request) {
      reply_error(id, kInvalidRequest, "the server is shut down; only exit is accepted");
      return true;
    }
    try {
      if (request)
        answer(id, method, params);
      else
        notice(method, params);
    } catch (const json::exception& e) {
      if (request) reply_error(id, kInvalidParams, std::string("invalid params: ") + e.what());
    } catch (const std::exception& e) {  // a file that cannot be read, memory: this request only
      if (request) reply_error(id, kInternalError, e.what());
    }
    return true;
  }

  bool shut_down() const { return shut_down_; }

  void send(const json& message) {
    const std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
    out_ << "Content-Length: " << body.size() << "\r\n\r\n" << body;
    out_.flush();
  }

  void reply_error(const json& id, int code, const std::string& text) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", text}}}});
  }

 private:
  void reply(const json& id, json result) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  }

  void publish(const Document& doc) {
    send({{"jsonrpc", "2.0"},
          {"method", "textDocument/publishDiagnostics"},
          {"params",
           {{"uri", doc.uri},
            {"version", doc.version},
            {"diagnostics", diagnostics(doc, options_)}}}});
  }

  void log(const std::string& text) {
    send({{"jsonrpc", "2.0"},
          {"method", "window/logMessage"},
          {"params", {{"type", 1}, {"message", text}}}});
  }

  Document* document(const json& params) {
    const auto it = documents_.find(params.at("textDocument").at("uri").get<std::string>());
    return it == documents_.end() ? nullptr : &it->second;
  }

  void answer(const json& id, const std::string& method, const json& params) {
    if (method == "initialize") {
      initialized_ = true;
      reply(id, {{"capabilities",
                  {{"positionEncoding", "utf-16"},
                   {"textDocumentSync", {{"openClose", true}, {"change", 1}, {"save", true}}},
                   {"hoverProvider", true},
                   {"completionProvider", {{"triggerCharacters", {">", "=", "[", ",", " "}}}},
                   {"definitionProvider", true},
                   {"documentFormattingProvider", true}}},
                 {"serverInfo", {{"name", "recourse"}}}});
      return;
    }
    if (method == "shutdown") {
      shut_down_ = true;
      reply(id, nullptr);
      return;
    }
    const bool known = method == "textDocument/hover" || method == "textDocument/completion" ||
                       method == "textDocument/definition" || method == "textDocument/formatting";
    if (!known) {
      reply_error(id, kMethodNotFound, "unsupported method " + method);
      return;
    }
    const Document* doc = document(params);
    if (!doc) {
      reply_error(id, kInvalidParams, "the document is not open");
      return;
    }
    if (method == "textDocument/formatting") {
      reply(id, formatting(*doc, options_));
      return;
    }
    const Position at = position_from(params.at("position"));
    if (method == "textDocument/hover") reply(id, hover(*doc, at, options_));
    if (method == "textDocument/completion") reply(id, completion(*doc, at, options_));
    if (method == "textDocument/definition") reply(id, definition(*doc, at, options_));
  }

  void notice(const std::string& method, const json& params) {
    if (method == "textDocument/didOpen") {
      const json& item = params.at("textDocument");
      const std::string uri = item.at("uri");
      if (!documents_.count(uri) && documents_.size() >= limits_.max_documents) {
        log(fmt::format("{} not opened: {} documents are open, the limit (--max-documents)", uri,
                        documents_.size()));
        return;
      }
      Document& doc = documents_[uri];
      doc = {uri, path_of(uri), item.at("text"), item.value("version", std::int64_t{0})};
      publish(doc);
    } else if (method == "textDocument/didChange") {
      Document* doc = document(params);
      if (!doc) return;
      for (const json& change : params.at("contentChanges")) {
        const std::string text = change.at("text");
        if (change.contains("range")) {
          const std::size_t begin =
              offset_of(doc->text, position_from(change["range"].at("start")));
          const std::size_t end = offset_of(doc->text, position_from(change["range"].at("end")));
          doc->text.replace(begin, std::max(begin, end) - begin, text);
        } else {
          doc->text = text;
        }
      }
      doc->version = params.at("textDocument").value("version", doc->version);
      publish(*doc);
    } else if (method == "textDocument/didSave") {
      // A saved file may be a base of another open document: check them all again.
      for (const auto& [uri, doc] : documents_) publish(doc);
    } else if (method == "textDocument/didClose") {
      const std::string uri = params.at("textDocument").at("uri");
      if (documents_.erase(uri))
        send({{"jsonrpc", "2.0"},
              {"method", "textDocument/publishDiagnostics"},
              {"params", {{"uri", uri}, {"diagnostics", json::array()}}}});
    }
    // Other notifications (initialized, $/cancelRequest, $/setTrace, ...) need no answer.
  }

  std::ostream& out_;
  const LspLimits& limits_;
  const CompileOptions& options_;
  std::map<std::string, Document> documents_;
  bool initialized_ = false;
  bool shut_down_ = false;
};

}  // namespace

int serve(std::istream& in, std::ostream& out, const LspLimits& limits,
          const CompileOptions& options) {
  Session session(out, limits, options);
  std::string body;
  for (;;) {
    std::uint64_t size = 0;
    switch (read_message(in, limits.max_message_bytes, body, size)) {
      case Read::Message:
        if (!session.handle(body)) return session.shut_down() ? 0 : 1;
        break;
      case Read::TooLarge:
        session.reply_error(nullptr, kInvalidRequest,
                            fmt::format("a message of {} bytes; the limit is {} "
                                        "(--max-message-bytes)",
                                        size, limits.max_message_bytes));
        break;
      case Read::Broken:
        std::cerr << "error: lsp: a message without a readable Content-Length header\n";
        return 1;
      case Read::End:
        return 1;
    }
  }
}

}  // namespace lsp

int run_lsp(const LspLimits& limits, const CompileOptions& options) {
  std::ios::sync_with_stdio(false);
  return lsp::serve(std::cin, std::cout, limits, options);
}

}  // namespace recourse::cli
