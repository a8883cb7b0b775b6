// Lets the window's shortcuts (Ctrl+N, Ctrl+Q, ...) through a read-only text item that has the
// keyboard focus. Qt 6.4's TextEdit answers every ShortcutOverride it gets while read-only with
// "mine" (the event arrives accepted and its text control only decides for editable text), so
// after a click into a reply's text (to select and copy) no window shortcut fired until another
// item took the focus. Installed on `target` as an event filter, this keeps for the text only
// the keys it acts on, Copy and Select All; every other key's ShortcutOverride is declined, so
// Qt tries the shortcuts and, when none matches, delivers the key press to the text as before.
//
//   TextEdit { id: body; readOnly: true; selectByMouse: true
//       ShortcutPassThrough { target: body } }
#pragma once

#include <QtQml/qqmlregistration.h>

#include <QObject>
#include <QPointer>
#include <QQuickItem>

class QKeyEvent;

namespace moepack::ui {

class ShortcutPassThrough : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(QQuickItem* target READ target WRITE setTarget NOTIFY targetChanged)

 public:
  explicit ShortcutPassThrough(QObject* parent = nullptr);

  QQuickItem* target() const { return target_; }
  void setTarget(QQuickItem* target);

  // True for the keys a read-only text keeps from the window's shortcuts: Copy, Select All.
  static bool keptByText(const QKeyEvent& key);

 signals:
  void targetChanged();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QPointer<QQuickItem> target_;
};

}  // namespace moepack::ui
