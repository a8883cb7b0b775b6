#include "ui/quit_cleanly.h"

#include <sys/socket.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QQmlProperty>
#include <QSocketNotifier>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

namespace moepack::ui {

int close_popups_at_once(QObject* root) {
  if (root == nullptr) return 0;
  int closed = 0;
  // QQuickPopup (QtQuick.Templates) has no public C++ header: it is reached by its class name
  // and its QML properties.
  for (QObject* popup : root->findChildren<QObject*>()) {
    if (!popup->inherits("QQuickPopup") || !popup->property("visible").toBool()) continue;
    // No exit transition: the popup leaves the overlay now, while the overlay is whole.
    QQmlProperty(popup, QStringLiteral("exit")).write(QVariant::fromValue<QObject*>(nullptr));
    popup->setProperty("visible", false);
    ++closed;
  }
  return closed;
}

namespace {

int g_signal_socket[2] = {-1, -1};  // [0] written by the handler, [1] read by the event loop

extern "C" void on_termination_signal(int signo) {
  const char byte = static_cast<char>(signo);
  const int saved = errno;
  [[maybe_unused]] const ssize_t n = ::write(g_signal_socket[0], &byte, 1);
  errno = saved;
}

}  // namespace

void quit_on_termination_signals(QCoreApplication& app) {
  if (g_signal_socket[0] >= 0) return;
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, g_signal_socket) != 0)
    throw std::runtime_error(std::string("quit_on_termination_signals: socketpair: ") + std::strerror(errno));
  auto* notifier = new QSocketNotifier(g_signal_socket[1], QSocketNotifier::Read, &app);
  QObject::connect(notifier, &QSocketNotifier::activated, &app, [&app] {
    char bytes[16];
    while (::read(g_signal_socket[1], bytes, sizeof bytes) > 0) {
    }
    app.quit();
  });
  struct sigaction sa {};
  sa.sa_handler = on_termination_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  for (const int signo : {SIGINT, SIGTERM, SIGHUP})
    if (::sigaction(signo, &sa, nullptr) != 0)
      throw std::runtime_error(std::string("quit_on_termination_signals: sigaction(") + ::strsignal(signo) +
                               "): " + std::strerror(errno));
}

}  // namespace moepack::ui
