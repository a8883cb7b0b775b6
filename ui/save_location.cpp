#include "ui/save_location.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

namespace moepack::ui {

QString export_file_stem(const QString& name) {
  static const QRegularExpression refused(QStringLiteral("[/\\\\:*?\"<>|#%\\x00-\\x1f\\x7f]"));
  QString s = name;
  s.replace(refused, QStringLiteral(" "));
  s = s.simplified();
  if (s.size() > 80) s.truncate(s.at(79).isHighSurrogate() ? 79 : 80);  // never half a character
  s = s.trimmed();
  while (s.startsWith(QLatin1Char('.'))) s.remove(0, 1);  // no hidden file, no "." or ".."
  s = s.trimmed();
  return s.isEmpty() ? QStringLiteral("export") : s;
}

QUrl suggested_save_file(const QString& name, const QString& suffix) {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) dir = QDir::homePath();
  return QUrl::fromLocalFile(QDir(dir).filePath(export_file_stem(name) + QLatin1Char('.') + suffix));
}

}  // namespace moepack::ui
