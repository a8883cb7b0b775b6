// The studio's way out, however it is asked to go: the window's close, Ctrl+Q, the desktop's
// logout (SIGTERM), Ctrl+C in the terminal that started it (SIGINT), the terminal closed (SIGHUP).
//
// Each ends in QCoreApplication::exec() returning, so main()'s objects are destroyed in order:
// the QML window first, then the view-models; ChatViewModel keeps a reply being written as Stop
// keeps it (a reply that stopped, its text so far). Without this a signal ended the process on
// the spot and that text was lost.
#pragma once

#include <QObject>

class QCoreApplication;

namespace moepack::ui {

// Closes every open or opening popup (Dialog, Menu, ToolTip, ...) under `root` at once, without
// its exit transition. Call it on the QML root objects before they are destroyed: Qt 6.4's
// ~QQuickPopup of a popup still open runs its exit transition, which writes the modal dimmer's
// opacity on an overlay already being torn down (SIGSEGV in QQuickPopupPrivate::hideOverlay).
// A popup closed this way emits closed() as any close does (a Dialog also rejected() or
// nothing, as the caller's handlers decide). Returns how many were open.
int close_popups_at_once(QObject* root);

// Installs handlers for SIGINT, SIGTERM and SIGHUP that ask `app` to quit (QCoreApplication::quit,
// from the event loop: a signal handler only writes one byte to a socket pair, the one thing it
// may safely do; see Qt's "Calling Qt Functions From Unix Signal Handlers"). A second signal of
// the same kind, if the first's quit hangs, ends the process at once (SA_RESETHAND: the default
// action). Call once, after `app` exists. Throws std::runtime_error if the socket pair or a
// handler cannot be set up (errno's text).
void quit_on_termination_signals(QCoreApplication& app);

}  // namespace moepack::ui
