// Byte counts as the studio writes them: "512 B" below 1 KiB, else IEC units with one decimal
// ("14.8 MiB", "100.0 GiB"; QLocale::formattedDataSize in the UI's locale).
#pragma once

#include <QLocale>
#include <QString>

namespace moepack::ui {

inline QString format_bytes(double bytes) {
  // Below 1 KiB the unit symbol, as the larger units are written: Qt's "bytes" is not in our
  // catalogue and would stay English in every language.
  if (bytes < 1024) return QStringLiteral("%1 B").arg(static_cast<qint64>(bytes));
  return QLocale().formattedDataSize(static_cast<qint64>(bytes), 1, QLocale::DataSizeIecFormat);
}

}  // namespace moepack::ui
