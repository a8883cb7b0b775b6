// Where the studio suggests saving an export (a conversation, a benchmark report): a file in the
// user's documents folder when it exists, else in the home folder, named after `name` with the
// characters file systems or file URLs refuse (/ \ : * ? " < > | # % and control characters)
// replaced by spaces, runs of spaces collapsed, at most 80 characters, "export" when nothing is
// left, and ".suffix" appended. Pure: nothing is created.
#pragma once

#include <QString>
#include <QUrl>

namespace moepack::ui {

QString export_file_stem(const QString& name);
QUrl suggested_save_file(const QString& name, const QString& suffix);

}  // namespace moepack::ui
