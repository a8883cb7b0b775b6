// The studio's way out when asked from outside its window: Ctrl+C in the terminal that started it
// (SIGINT), the desktop's logout (SIGTERM), the terminal closed (SIGHUP).
//
// Each ends QCoreApplication::exec() as the window's close does, so main()'s objects are destroyed
// in order: the QML window first (~QQmlApplicationEngine deletes its root objects before anything
// else: popups still open go with it), then the view-models; ChatViewModel keeps a reply being
// written as Stop keeps it (a reply that stopped, its text so far), and the instance lock is
// released. Without this a signal ended the process on the spot and that text was lost.
#pragma once

#include <QString>

class QCoreApplication;

namespace moepack::ui {

// Installs handlers for SIGINT, SIGTERM and SIGHUP that end `app`'s event loop with status 0
// (QCoreApplication::exit(0), from the event loop: a signal handler only writes one byte to a socket
// pair, the one thing it may safely do; see Qt's "Calling Qt Functions From Unix Signal Handlers").
// Nothing is asked (the user asked outside the window). A signal that arrives before exec() runs is
// acted on as soon as exec() starts. A second signal of the same kind ends the process at once
// (SA_RESETHAND: the default action), for a quit that hangs. Call once, right after `app` exists.
// Returns false, with the failing call and errno's text in *why, if the socket pair or a handler
// could not be set up (the studio then runs without them, as before).
bool quit_on_termination_signals(QCoreApplication& app, QString* why = nullptr);

}  // namespace moepack::ui
