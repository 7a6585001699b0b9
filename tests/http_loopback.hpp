// A tiny HTTP/1.1 server and client on 127.0.0.1 for the runner's tests: the server answers each
// connection with what a handler returns (a response, a connection held open without one, or
// one closed without one) and records every request; the client sends one request per
// connection with a receive timeout. POSIX sockets only; nothing leaves the loopback interface.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace test {

struct HttpRequest {
  std::string method, path, body;
  std::map<std::string, std::string> headers;  ///< names in lower case
};

struct HttpResponse {
  enum class How { Send, Hang, Drop };
  HttpResponse() = default;
  HttpResponse(int s, std::vector<std::pair<std::string, std::string>> h, std::string b)
      : status(s), headers(std::move(h)), body(std::move(b)) {}
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  How how = How::Send;  ///< Hang: never answer; Drop: close without answering
};

class LoopbackServer {
 public:
  explicit LoopbackServer(std::function<HttpResponse(const HttpRequest&)> handler)
      : handler_(std::move(handler)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error(std::string("loopback server: ") + std::strerror(errno));
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
    for (int fd : held_) ::close(fd);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return port_; }
  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    for (;;) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;  // the listener was shut down
      HttpRequest request;
      if (!read_request(fd, request)) {
        ::close(fd);
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.push_back(request);
      }
      const HttpResponse r = handler_(request);
      if (r.how == HttpResponse::How::Hang) {
        held_.push_back(fd);
        continue;
      }
      if (r.how == HttpResponse::How::Send) {
        std::string out = "HTTP/1.1 " + std::to_string(r.status) + " X\r\n";
        for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
        out += "Content-Length: " + std::to_string(r.body.size()) + "\r\nConnection: close\r\n\r\n";
        out += r.body;
        (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      }
      ::close(fd);
    }
  }

  static bool read_request(int fd, HttpRequest& r) {
    std::string in;
    char buf[4096];
    std::size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      in.append(buf, static_cast<std::size_t>(n));
    }
    std::size_t line_end = in.find("\r\n");
    const std::string first = in.substr(0, line_end);
    r.method = first.substr(0, first.find(' '));
    r.path = first.substr(r.method.size() + 1, first.rfind(' ') - r.method.size() - 1);
    for (std::size_t at = line_end + 2; at < end; at = line_end + 2) {
      line_end = in.find("\r\n", at);
      const std::string line = in.substr(at, line_end - at);
      const std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    const std::size_t length =
        r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    r.body = in.substr(end + 4);
    while (r.body.size() < length) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      r.body.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }

  std::function<HttpResponse(const HttpRequest&)> handler_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<HttpRequest> requests_;
  std::vector<int> held_;  // connections left unanswered, closed at the end
};

/// What a client call got: a response, or a transport error ("timeout", "socket hang up").
struct HttpResult {
  std::string transport_error;
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

/// POSTs `body` to 127.0.0.1:port `path` with `headers`, waiting at most timeout_ms for the
/// whole response.
inline HttpResult http_post(int port, const std::string& path,
                            const std::vector<std::pair<std::string, std::string>>& headers,
                            const std::string& body, std::int64_t timeout_ms) {
  HttpResult result;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{static_cast<time_t>(timeout_ms / 1000),
             static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    result.transport_error = "ECONNREFUSED";
    return result;
  }
  std::string out = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  std::string in;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      in.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) result.transport_error = "timeout";
    break;
  }
  ::close(fd);
  if (!result.transport_error.empty()) return result;
  const std::size_t end = in.find("\r\n\r\n");
  if (in.empty() || end == std::string::npos) {
    result.transport_error = "socket hang up";
    return result;
  }
  result.status = std::stoi(in.substr(in.find(' ') + 1, 3));
  std::size_t line_end = in.find("\r\n");
  for (std::size_t at = line_end + 2; at < end; at = line_end + 2) {
    line_end = in.find("\r\n", at);
    const std::string line = in.substr(at, line_end - at);
    const std::size_t colon = line.find(':');
    result.headers.emplace_back(line.substr(0, colon),
                                line.substr(line.find_first_not_of(' ', colon + 1)));
  }
  result.body = in.substr(end + 4);
  return result;
}

}  // namespace test
