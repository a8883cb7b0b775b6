// Starts tests/bench/openai_stub_server.py (python3) on a free loopback port for a test and
// stops it (SIGTERM to the pid it started, then waitpid) when the object goes away.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace moepack::test {

class StubServer {
 public:
  // `args`: extra arguments (e.g. {"--mode", "http500", "--token-delay", "0.05"}).
  explicit StubServer(const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<std::string> argv = {"python3", std::string(MOEPACK_SOURCE_DIR) + "/tests/bench/openai_stub_server.py"};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execvp("python3", cargv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    FILE* f = ::fdopen(fds[0], "r");
    char line[128] = {};
    if (f && std::fgets(line, sizeof line, f)) std::sscanf(line, "PORT %d", &port_);
    if (f) std::fclose(f);
    if (port_ == 0) ADD_FAILURE() << "the stub server did not start (python3 missing?)";
  }
  ~StubServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& scheme = "http") const {
    return scheme + "://127.0.0.1:" + std::to_string(port_);
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace moepack::test
