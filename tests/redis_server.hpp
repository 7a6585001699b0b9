// A redis-server a test starts itself, in its own temp directory, on a unix socket (never a shared
// port; optionally also a free loopback TCP port), stopped by its PID. The guard kills it with
// SIGKILL however the test ends (a failed REQUIRE, a failed start), and the server dies with the
// test process too (PR_SET_PDEATHSIG), so nothing is left running.
#pragma once
#ifdef RECOURSE_HAVE_REDIS
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "store_conformance.hpp"
#include "support.hpp"

namespace test {

/// A free TCP port on 127.0.0.1 (the kernel's pick for a socket bound to port 0; free once the
/// socket is closed, unless another process takes it meanwhile).
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof a;
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&a), size) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) == 0;
  close(fd);
  REQUIRE(bound);
  return ntohs(a.sin_port);
}

/// A hiredis connection, freed at the end of its scope.
using Connection = std::unique_ptr<redisContext, void (*)(redisContext*)>;

/// A command's arguments as hiredis's *Argv functions take them.
struct Argv {
  explicit Argv(const std::vector<std::string>& args) {
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int size() const { return static_cast<int>(argv.size()); }
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
};

class RedisServer {
 public:
  struct Options {
    const char* appendfsync = "always";
    bool tcp = false;  ///< also listen on a free loopback port (tcp_url())
  };
  RedisServer() : RedisServer(Options{}) {}
  explicit RedisServer(Options o) : options_(o), port_(o.tcp ? free_port() : 0) { start(); }
  std::string url() const { return "redis+unix://" + socket_path(); }
  /// redis://127.0.0.1:PORT (Options::tcp).
  std::string tcp_url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return child_.pid; }
  const std::string& dir() const { return dir_; }

  /// Starts redis-server and waits (at most 5 s) until it answers.
  void start() {
    const pid_t parent = getpid();
    child_.pid = fork();
    REQUIRE(child_.pid >= 0);
    if (child_.pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // the test died: so does the server
      if (getppid() != parent) _exit(1);
      const std::string sock = socket_path(), port = std::to_string(port_);
      const int log = ::open((dir_ + "/redis.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(log, 1);
      dup2(log, 2);
      execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
             "--unixsocket", sock.c_str(), "--unixsocketperm", "700", "--dir", dir_.c_str(),
             "--save", "", "--appendonly", "yes", "--appendfsync", options_.appendfsync,
             "--enable-debug-command", "yes", "--daemonize", "no", "--loglevel", "warning",
             static_cast<char*>(nullptr));
      _exit(127);  // redis-server is not installed: scripts/deps.sh installs it
    }
    for (std::int64_t until = now_ms() + 5000; now_ms() < until; sleep_ms(20)) {
      int status = 0;
      REQUIRE(waitpid(child_.pid, &status, WNOHANG) == 0);  // it exited: not installed, bad flags
      if (answers()) return;
    }
    FAIL("redis-server did not answer within 5 s");
  }
  /// A plain connection on the unix socket (no scripts loaded), with a 5 s timeout.
  Connection connect() const {
    Connection c(redisConnectUnixWithTimeout(socket_path().c_str(), {5, 0}), redisFree);
    REQUIRE(c);
    return c;
  }
  /// PING on a plain connection.
  bool answers() const {
    Connection c(redisConnectUnix(socket_path().c_str()), redisFree);
    auto* r = c && !c->err ? static_cast<redisReply*>(redisCommand(c.get(), "PING")) : nullptr;
    const bool pong = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    return pong;
  }
  /// Sends `command` (e.g. DEBUG SLEEP 0.5) on a connection of its own without waiting for the
  /// reply; the server runs it while the returned connection stays open.
  Connection send(const std::vector<std::string>& command) const {
    Connection c = connect();
    Argv a(command);
    REQUIRE(redisAppendCommandArgv(c.get(), a.size(), a.argv.data(), a.lens.data()) == REDIS_OK);
    for (int done = 0; !done;) REQUIRE(redisBufferWrite(c.get(), &done) == REDIS_OK);
    return c;
  }
  /// Removes the server's data (the append-only files): a restart then starts empty, as a new
  /// server after a failover does, without the scripts.
  void wipe() { std::filesystem::remove_all(dir_ + "/appendonlydir"); }
  /// Sends `signal` and waits (at most 5 s, then SIGKILL) for the exit.
  void stop(int signal) {
    if (child_.pid <= 0) return;
    kill(child_.pid, signal);
    for (std::int64_t until = now_ms() + 5000; now_ms() < until; sleep_ms(10))
      if (waitpid(child_.pid, nullptr, WNOHANG) == child_.pid) return void(child_.pid = -1);
    child_.end();
  }

 private:
  // The server's PID: killed (SIGKILL works on a stopped process too) and reaped at the end.
  struct Child {
    pid_t pid = -1;
    ~Child() { end(); }
    void end() {
      if (pid <= 0) return;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
  };
  std::string socket_path() const { return dir_ + "/redis.sock"; }
  Options options_;
  int port_;
  TempDir temp_;
  const std::string& dir_ = temp_.path;
  Child child_;  // after temp_: the server ends before its directory is removed
};

}  // namespace test
#endif
