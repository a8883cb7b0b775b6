#include "ui/quit_cleanly.h"

#include <sys/socket.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QSocketNotifier>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace moepack::ui {

namespace {

int g_signal_socket[2] = {-1, -1};  // [0] written by the handler, [1] read by the event loop

extern "C" void on_termination_signal(int signo) {
  const char byte = static_cast<char>(signo);
  const int saved = errno;
  [[maybe_unused]] const ssize_t n = ::write(g_signal_socket[0], &byte, 1);
  errno = saved;
}

bool failed(QString* why, const QString& call) {
  if (why) *why = call + QStringLiteral(": ") + QString::fromLocal8Bit(std::strerror(errno));
  return false;
}

}  // namespace

bool quit_on_termination_signals(QCoreApplication& app, QString* why) {
  if (g_signal_socket[0] >= 0) return true;
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, g_signal_socket) != 0) {
    g_signal_socket[0] = g_signal_socket[1] = -1;
    return failed(why, QStringLiteral("socketpair"));
  }
  auto* notifier = new QSocketNotifier(g_signal_socket[1], QSocketNotifier::Read, &app);
  QObject::connect(notifier, &QSocketNotifier::activated, &app, [] {
    char bytes[16];
    while (::read(g_signal_socket[1], bytes, sizeof bytes) > 0) {
    }
    QCoreApplication::exit(0);
  });
  struct sigaction sa {};
  sa.sa_handler = on_termination_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  for (const int signo : {SIGINT, SIGTERM, SIGHUP}) {
    if (::sigaction(signo, &sa, nullptr) != 0)
      return failed(why, QStringLiteral("sigaction(%1)").arg(QString::fromLocal8Bit(::strsignal(signo))));
  }
  return true;
}

}  // namespace moepack::ui
