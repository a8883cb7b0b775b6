// The benchmark report (bench/report_json.h, schema "moepack-bench-report") as a multi-page PDF,
// drawn with Qt's QPdfWriter and QPainter (studio only: the CLI stays Qt-free).
//
// Pages: A4 portrait, 15 mm margins, 144 dpi device units. Content, in order, flowing onto new
// pages as needed (table headers repeated): title and date; machine (CPU, cores, RAM, GPUs and
// driver, OS, kernel, storage); model and pack identity (path, format, architecture, identity
// kind and SHA-256); MoePack build; run settings and engine settings; per-request table (every
// request and system: tokens, TTFT, prefill and decode tokens/s, hit rate, SSD bytes/token);
// per-data-set aggregates with the published figures beside ours; charts drawn with QPainter:
// decode tokens/s per request (ours and the published figure of each request's data set), hit
// rate per request, and the per-token timeline (forward ms line, SSD KB bars; the requests'
// "timeline" objects).
#pragma once

#include <QByteArray>
#include <QString>
#include <nlohmann/json.hpp>
#include <vector>

namespace moepack::ui {

// Where the labels of an axis go so that none overlaps another: label k spans [x[k], x[k] +
// width[k]) (x ascending, any unit); each goes on the first of `rows` rows whose last label ends
// at least `gap` before it, else it is left out (-1). The timeline's request labels use it, so
// short requests side by side do not print over each other.
std::vector<int> place_axis_labels(const std::vector<double>& x, const std::vector<double>& width, double gap,
                                   int rows);

// Renders the PDF into memory. Throws Error when the report is not an object.
QByteArray render_pdf_report(const nlohmann::json& report);

// Renders and writes it to `path` atomically (core/durable_io.h: temp file, fsync, rename,
// fsync of the directory). Throws Error / IoError naming the path.
void write_pdf_report(const nlohmann::json& report, const QString& path);

}  // namespace moepack::ui
