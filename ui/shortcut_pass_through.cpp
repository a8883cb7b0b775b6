#include "ui/shortcut_pass_through.h"

#include <QKeyEvent>
#include <QKeySequence>

namespace moepack::ui {

ShortcutPassThrough::ShortcutPassThrough(QObject* parent) : QObject(parent) {}

void ShortcutPassThrough::setTarget(QQuickItem* target) {
  if (target == target_) return;
  if (target_) target_->removeEventFilter(this);
  target_ = target;
  if (target_) target_->installEventFilter(this);
  emit targetChanged();
}

bool ShortcutPassThrough::keptByText(const QKeyEvent& key) {
  return key.matches(QKeySequence::Copy) || key.matches(QKeySequence::SelectAll);
}

bool ShortcutPassThrough::eventFilter(QObject* watched, QEvent* event) {
  if (watched != target_ || event->type() != QEvent::ShortcutOverride) return false;
  auto* key = static_cast<QKeyEvent*>(event);
  if (keptByText(*key)) return false;  // the text's own answer: it overrides these
  key->ignore();                       // not the text's: the window's shortcuts get it
  return true;
}

}  // namespace moepack::ui
