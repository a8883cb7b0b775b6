// PDF view of the benchmark report (pdf_report.h).
#include "ui/pdf_report.h"

#include <QBuffer>
#include <QFileInfo>
#include <QFontMetricsF>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPainterPath>
#include <QPdfWriter>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "core/durable_io.h"
#include "core/error.h"

namespace moepack::ui {

namespace {

using nlohmann::json;

const QColor kPalette[] = {QColor("#2f6fdf"), QColor("#e0703a"), QColor("#3aa35c"), QColor("#9b59b6"),
                           QColor("#c0392b"), QColor("#7f8c8d")};

json get(const json& o, const char* k) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(k);
  return it == o.end() ? json(nullptr) : *it;
}

QString str(const json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_null()) return QStringLiteral("–");
  return QString::fromStdString(v.dump());
}

QString num(const json& v, int digits = 2) {
  if (v.is_number_integer() || v.is_number_unsigned()) return QString::number(v.get<int64_t>());
  if (v.is_number()) return QString::number(v.get<double>(), 'f', digits);
  return QStringLiteral("–");
}

QString bytes(const json& v) {
  if (!v.is_number()) return QStringLiteral("–");
  double x = v.get<double>();
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return QString::number(x, 'f', u == 0 ? 0 : 2) + " " + units[u];
}

double nice_top(double v) {
  if (v <= 0) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= v) return m * mag;
  }
  return 10 * mag;
}

// A cursor over the pages: text lines, tables and charts, with page breaks.
class Doc {
 public:
  explicit Doc(QPdfWriter& w) : writer_(w), p_(&w) {
    if (!p_.isActive()) throw Error("PDF report: cannot start painting");
    width_ = w.width();
    height_ = w.height();
  }
  QPainter& painter() { return p_; }
  double width() const { return width_; }

  void need(double h) {
    if (y_ + h > height_) newPage();
  }
  void newPage() {
    writer_.newPage();
    y_ = 0;
  }
  void space(double h) { y_ += h; }

  void text(const QString& s, double pt, bool bold = false, const QColor& color = Qt::black) {
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPointSizeF(pt);
    f.setBold(bold);
    p_.setFont(f);
    p_.setPen(color);
    const QRectF box = p_.boundingRect(QRectF(0, 0, width_, 1e6), Qt::TextWordWrap, s);
    need(box.height());
    p_.drawText(QRectF(0, y_, width_, box.height()), Qt::TextWordWrap, s);
    y_ += box.height() + pt * 0.3;
  }

  void heading(const QString& s) {
    need(120);
    space(14);
    text(s, 13, true, QColor("#1f2430"));
  }

  void field(const QString& k, const QString& v) { text(k + ": " + v, 9); }

  // Each column gets the width its widest cell and its header's longest word need; what is left
  // of the page width is shared by `weights` (when even the needs do not fit, the columns share
  // the width by `weights` alone and cells are elided). Headers wrap at spaces. The header is
  // repeated after a page break.
  void table(const QStringList& header, const std::vector<double>& weights, const std::vector<QStringList>& rows) {
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPointSizeF(7.5);
    QFont hf = f;
    hf.setBold(true);
    const QFontMetricsF fm(f, &writer_), hfm(hf, &writer_);
    const double pad = 8;
    const size_t n = weights.size();
    std::vector<double> want(n, 0);
    for (size_t c = 0; c < n && c < static_cast<size_t>(header.size()); ++c) {
      for (const QString& word : header[static_cast<int>(c)].split(QLatin1Char(' ')))
        want[c] = std::max(want[c], hfm.horizontalAdvance(word) + pad);
    }
    for (const QStringList& r : rows) {
      for (size_t c = 0; c < n && c < static_cast<size_t>(r.size()); ++c)
        want[c] = std::max(want[c], fm.horizontalAdvance(r[static_cast<int>(c)]) + pad);
    }
    double total = 0, needed = 0;
    for (size_t c = 0; c < n; ++c) {
      total += weights[c];
      needed += want[c];
    }
    std::vector<double> xs{0};
    for (size_t c = 0; c < n; ++c) {
      const double w =
          needed <= width_ ? want[c] + (width_ - needed) * weights[c] / total : width_ * weights[c] / total;
      xs.push_back(xs.back() + w);
    }
    const double row_h = fm.height() * 1.5;
    double head_h = row_h;
    for (size_t c = 0; c < n && c < static_cast<size_t>(header.size()); ++c) {
      const QRectF r = hfm.boundingRect(QRectF(0, 0, xs[c + 1] - xs[c] - pad, 1e6), Qt::TextWordWrap,
                                        header[static_cast<int>(c)]);
      head_h = std::max(head_h, r.height() + fm.height() * 0.5);
    }
    auto draw_row = [&](const QStringList& cells, bool head) {
      const double h = head ? head_h : row_h;
      p_.setFont(head ? hf : f);
      if (head) p_.fillRect(QRectF(0, y_, width_, h), QColor("#eef0f5"));
      p_.setPen(QColor("#c8ccd6"));
      p_.drawLine(QPointF(0, y_ + h), QPointF(width_, y_ + h));
      p_.setPen(Qt::black);
      for (int c = 0; c < cells.size() && c + 1 < static_cast<int>(xs.size()); ++c) {
        const QRectF cell(xs[static_cast<size_t>(c)] + pad / 2, y_,
                          xs[static_cast<size_t>(c) + 1] - xs[static_cast<size_t>(c)] - pad, h);
        const Qt::Alignment align = Qt::AlignVCenter | (c == 0 ? Qt::AlignLeft : Qt::AlignRight);
        if (head) {
          p_.drawText(cell, align | Qt::TextWordWrap, cells[c]);
        } else {
          p_.drawText(cell, align, fm.elidedText(cells[c], Qt::ElideRight, cell.width()));
        }
      }
      y_ += h;
    };
    need(head_h + row_h * 2);
    draw_row(header, true);
    for (const QStringList& r : rows) {
      if (y_ + row_h > height_) {
        newPage();
        draw_row(header, true);
      }
      draw_row(r, false);
    }
    space(row_h * 0.5);
  }

  struct Series {
    QString name;
    std::vector<std::optional<double>> values;
  };

  void bar_chart(const QString& title, const QString& unit, const QStringList& cats, const std::vector<Series>& series) {
    const double h = 420;
    need(h);
    text(title + " (" + unit + ")", 10, true);
    const double top_y = y_, plot_h = 250, left = 90, right = 20;
    double max_v = 0;
    for (const Series& s : series) {
      for (const auto& v : s.values) {
        if (v) max_v = std::max(max_v, *v);
      }
    }
    const double top = nice_top(max_v);
    axes(top_y, plot_h, left, width_ - right, top);
    const double plot_w = width_ - left - right;
    const double group_w = plot_w / static_cast<double>(std::max<qsizetype>(1, cats.size()));
    const double bar_w = group_w * 0.8 / static_cast<double>(std::max<size_t>(1, series.size()));
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPointSizeF(6.5);
    for (int c = 0; c < cats.size(); ++c) {
      const double x0 = left + group_w * c + group_w * 0.1;
      for (size_t k = 0; k < series.size(); ++k) {
        const auto& v = c < static_cast<int>(series[k].values.size()) ? series[k].values[c] : std::nullopt;
        if (!v) continue;
        const double bh = plot_h * std::min(1.0, *v / top);
        p_.fillRect(QRectF(x0 + bar_w * static_cast<double>(k), top_y + plot_h - bh, bar_w * 0.9, bh), kPalette[k % 6]);
      }
      p_.setFont(f);
      p_.setPen(Qt::black);
      p_.save();
      p_.translate(x0 + group_w * 0.4, top_y + plot_h + 6);
      p_.rotate(35);
      p_.drawText(QPointF(0, 8), QFontMetricsF(f, &writer_).elidedText(cats[c], Qt::ElideRight, 110));
      p_.restore();
    }
    y_ = top_y + plot_h + 80;
    legend(series);
  }

  // The per-token timeline: forward ms (line, left axis) and SSD KB (bars, right axis).
  void timeline(const std::vector<double>& ms, const std::vector<double>& kb, const std::vector<std::pair<size_t, QString>>& starts) {
    need(420);
    text(QObject::tr("Per-token timeline: forward ms per token (line, left axis), SSD KB read per token (bars, right axis)"),
         10, true);
    const double top_y = y_, plot_h = 250, left = 90, right = 90;
    if (ms.empty()) {
      text(QObject::tr("No per-token data in this report."), 9);
      return;
    }
    const double top_ms = nice_top(*std::max_element(ms.begin(), ms.end()));
    const double top_kb = nice_top(kb.empty() ? 0 : *std::max_element(kb.begin(), kb.end()));
    axes(top_y, plot_h, left, width_ - right, top_ms);
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPointSizeF(6.5);
    p_.setFont(f);
    for (int t = 0; t <= 4; ++t) {
      const double y = top_y + plot_h - plot_h * t / 4.0;
      p_.drawText(QPointF(width_ - right + 6, y + 4), QString::number(top_kb * t / 4, 'f', top_kb >= 10 ? 0 : 2));
    }
    const double plot_w = width_ - left - right;
    const double step = plot_w / static_cast<double>(ms.size());
    QColor bar = kPalette[1];
    bar.setAlphaF(0.5);
    for (size_t i = 0; i < kb.size(); ++i) {
      if (kb[i] <= 0) continue;
      const double bh = plot_h * std::min(1.0, kb[i] / top_kb);
      p_.fillRect(QRectF(left + step * static_cast<double>(i), top_y + plot_h - bh, std::max(1.0, step * 0.8), bh), bar);
    }
    QPainterPath path;
    for (size_t i = 0; i < ms.size(); ++i) {
      const QPointF pt(left + step * (static_cast<double>(i) + 0.5), top_y + plot_h - plot_h * std::min(1.0, ms[i] / top_ms));
      if (i == 0) path.moveTo(pt);
      else path.lineTo(pt);
    }
    p_.setPen(QPen(kPalette[0], 2));
    p_.setBrush(Qt::NoBrush);
    p_.drawPath(path);
    p_.setPen(QPen(QColor("#555555"), 1, Qt::DashLine));
    for (const auto& [first, id] : starts) {
      const double x = left + step * static_cast<double>(first);
      p_.drawLine(QPointF(x, top_y), QPointF(x, top_y + plot_h));
    }
    p_.setPen(Qt::black);
    std::vector<double> lx, lw;
    const QFontMetricsF fm(f, &writer_);
    for (const auto& [first, id] : starts) {
      lx.push_back(left + step * static_cast<double>(first) + 3);
      lw.push_back(fm.horizontalAdvance(id));
    }
    const std::vector<int> row = place_axis_labels(lx, lw, fm.averageCharWidth(), 2);
    for (size_t k = 0; k < starts.size(); ++k) {
      if (row[k] >= 0)
        p_.drawText(QPointF(lx[k], top_y + plot_h + 14 + fm.height() * row[k]), starts[k].second);
    }
    y_ = top_y + plot_h + 24 + fm.height();
    text(QObject::tr("%n token(s); x: token in the run, requests one after another (dashed: request start).",
                     "", static_cast<int>(ms.size())),
         8);
  }

 private:
  void axes(double top_y, double plot_h, double left, double right_x, double top) {
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPointSizeF(6.5);
    p_.setFont(f);
    for (int t = 0; t <= 4; ++t) {
      const double y = top_y + plot_h - plot_h * t / 4.0;
      p_.setPen(QColor("#dddddd"));
      p_.drawLine(QPointF(left, y), QPointF(right_x, y));
      p_.setPen(Qt::black);
      p_.drawText(QRectF(0, y - 10, left - 8, 20), Qt::AlignRight | Qt::AlignVCenter, QString::number(top * t / 4, 'g', 4));
    }
    p_.setPen(QPen(Qt::black, 1.5));
    p_.drawLine(QPointF(left, top_y + plot_h), QPointF(right_x, top_y + plot_h));
  }

  void legend(const std::vector<Series>& series) {
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPointSizeF(7.5);
    double x = 90;
    for (size_t k = 0; k < series.size(); ++k) {
      p_.setFont(f);
      const double w = QFontMetricsF(f, &writer_).horizontalAdvance(series[k].name) + 40;
      if (x + w > width_) {
        x = 90;
        y_ += 24;
      }
      need(24);
      p_.fillRect(QRectF(x, y_ + 4, 14, 14), kPalette[k % 6]);
      p_.setPen(Qt::black);
      p_.drawText(QPointF(x + 20, y_ + 16), series[k].name);
      x += w;
    }
    y_ += 36;
  }

  QPdfWriter& writer_;
  QPainter p_;
  double width_ = 0, height_ = 0, y_ = 0;
};

QString system_label(const json& report, const std::string& id) {
  for (const json& s : get(report, "systems")) {
    if (s.value("id", "") == id) return str(get(s, "label"));
  }
  return QString::fromStdString(id);
}

}  // namespace

QByteArray render_pdf_report(const json& report) {
  if (!report.is_object()) throw Error("PDF report: the report is not a JSON object");
  QByteArray pdf;
  QBuffer buf(&pdf);
  buf.open(QIODevice::WriteOnly);
  {
    QPdfWriter writer(&buf);
    writer.setPageSize(QPageSize(QPageSize::A4));
    writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
    writer.setResolution(144);
    writer.setTitle(QObject::tr("MoePack benchmark report"));
    writer.setCreator(QStringLiteral("MoePack Studio"));
    Doc d(writer);

    const json& model = get(report, "model");
    const json& machine = get(report, "machine");
    const json& run = get(report, "run");
    const json& engine = get(report, "engine");
    d.text(QObject::tr("MoePack benchmark report"), 20, true, QColor("#1f2430"));
    d.text(str(get(model, "name")) + " · " + str(get(get(report, "prompt_set"), "name")) + " · " +
               str(get(report, "created_utc")),
           10, false, QColor("#555555"));

    d.heading(QObject::tr("Machine"));
    QString gpus;
    for (const json& g : get(machine, "gpus")) {
      gpus += (gpus.isEmpty() ? "" : "; ") + str(get(g, "name")) + " (" + QObject::tr("driver") + " " + str(get(g, "driver")) + ")";
    }
    d.field(QObject::tr("CPU"), str(get(machine, "cpu_model")) + ", " + num(get(machine, "logical_cores")) + " " +
                                    QObject::tr("logical cores"));
    d.field(QObject::tr("RAM"), bytes(get(machine, "ram_bytes")));
    d.field(QObject::tr("GPU"), gpus.isEmpty() ? QObject::tr("none") : gpus);
    d.field(QObject::tr("OS"), str(get(machine, "os")) + ", " + QObject::tr("kernel") + " " + str(get(machine, "kernel")));
    const json& storage = get(machine, "storage");
    d.field(QObject::tr("Storage"), str(get(storage, "device_model")) + " " + str(get(storage, "device")) + ", " +
                                        str(get(storage, "filesystem")));

    d.heading(QObject::tr("Model and pack identity"));
    d.field(QObject::tr("Path"), str(get(model, "path")));
    d.field(QObject::tr("Format"), str(get(model, "format")) + ", " + str(get(model, "architecture")) + ", " +
                                       num(get(model, "n_layer")) + " " + QObject::tr("layers") + ", " +
                                       num(get(model, "n_expert")) + " " + QObject::tr("experts, top-") +
                                       num(get(model, "n_expert_used")));
    d.field(QObject::tr("Identity"), str(get(get(model, "identity"), "kind")) + " " + str(get(get(model, "identity"), "sha256")));
    d.field(QObject::tr("MoePack"), str(get(get(report, "moepack"), "version")) + " (" +
                                        str(get(get(report, "moepack"), "git_describe")) + ", " +
                                        str(get(get(report, "moepack"), "git_commit")) + ")");

    d.heading(QObject::tr("Settings"));
    d.field(QObject::tr("Run"), QObject::tr("mode %1, temperature 0, %2 completion tokens per request, ignore_eos %3, "
                                            "fresh KV cache per request, expert cache kept between requests")
                                    .arg(str(get(run, "mode")), num(get(run, "max_tokens")), str(get(run, "ignore_eos"))));
    d.field(QObject::tr("Backend"), str(get(engine, "backend")) + ", " + num(get(engine, "cache_slots")) + " " +
                                        QObject::tr("expert cache slots of") + " " + bytes(get(engine, "cache_slot_bytes")));
    if (const json& note = get(engine, "backend_note"); note.is_string())
      d.field(QObject::tr("Not on the GPU"), str(note));
    if (const json& ram = get(engine, "ram_tier_slots"); ram.is_number() && ram.get<uint64_t>() > 0)
      d.field(QObject::tr("Host-RAM tier"), num(ram) + " " + QObject::tr("slots (cache_ram_mib)"));
    QStringList settings;
    const json& es = get(engine, "settings");
    if (es.is_object()) {
      for (const auto& [k, v] : es.items()) settings << QString::fromStdString(k) + "=" + str(v);
    }
    d.field(QObject::tr("Engine settings"), settings.join(QStringLiteral(", ")));
    d.field(QObject::tr("Prompt set"), str(get(get(report, "prompt_set"), "name")) + " (" +
                                           num(get(get(report, "prompt_set"), "requests")) + " " +
                                           QObject::tr("requests") + "), " + str(get(get(report, "prompt_set"), "path")));

    // Per request.
    d.heading(QObject::tr("Requests"));
    std::vector<QStringList> rows;
    std::vector<std::string> ids;
    for (const json& s : get(report, "systems")) ids.push_back(s.value("id", ""));
    for (const json& r : get(report, "requests")) {
      for (const std::string& id : ids) {
        const json x = get(get(r, "results"), id.c_str());
        if (x.is_null()) continue;
        if (!x.value("ok", false)) {
          rows.push_back({str(get(r, "id")), str(get(r, "dataset")), system_label(report, id),
                          QObject::tr("error: %1").arg(str(get(x, "error")))});
          continue;
        }
        rows.push_back({str(get(r, "id")), str(get(r, "dataset")), system_label(report, id), num(get(x, "prompt_tokens")),
                        num(get(x, "completion_tokens")), num(get(x, "ttft_ms"), 1), num(get(x, "prefill_tps"), 1),
                        num(get(x, "decode_tps"), 2), num(get(x, "hit_rate"), 3), bytes(get(x, "read_bytes_per_token"))});
      }
    }
    d.table({QObject::tr("request"), QObject::tr("data set"), QObject::tr("system"), QObject::tr("prompt"),
             QObject::tr("completion"), QObject::tr("TTFT ms"), QObject::tr("prefill tok/s"), QObject::tr("decode tok/s"),
             QObject::tr("hit rate"), QObject::tr("SSD/token")},
            {2.2, 1.2, 2.2, 1, 1.1, 1.1, 1.2, 1.2, 1, 1.3}, rows);

    // Aggregates with the published figures beside ours.
    d.heading(QObject::tr("Aggregates per data set, published figures beside ours"));
    rows.clear();
    for (const json& a : get(report, "aggregates")) {
      for (const std::string& id : ids) {
        const json r = get(get(a, "results"), id.c_str());
        if (r.is_null()) continue;
        rows.push_back({str(get(a, "group")), system_label(report, id), num(get(r, "prefill_tps"), 2),
                        num(get(r, "decode_tps"), 2), num(get(r, "hit_rate"), 3), num(get(r, "ssd_gb_per_token"), 6),
                        num(get(r, "ttft_ms_mean"), 1)});
      }
      const json pub = get(a, "published");
      if (pub.is_object()) {
        for (const auto& [config, p] : pub.items()) {
          rows.push_back({str(get(a, "group")), QObject::tr("published: %1").arg(QString::fromStdString(config)),
                          num(get(p, "prefill_tok_s"), 2), num(get(p, "decode_tok_s"), 2), num(get(p, "hit_rate"), 3),
                          num(get(p, "ssd_gb_per_token"), 3), QStringLiteral("–")});
        }
      }
    }
    d.table({QObject::tr("group"), QObject::tr("source"), QObject::tr("prefill tok/s"), QObject::tr("decode tok/s"),
             QObject::tr("hit rate"), QObject::tr("SSD GB/token"), QObject::tr("TTFT mean ms")},
            {1.2, 3.4, 1.2, 1.2, 1, 1.3, 1.2}, rows);
    d.text(QObject::tr("Aggregates are ratios of sums over successful requests. Published figures come from the prompt "
                       "set (other models and machines): context, not a like-for-like comparison."),
           8, false, QColor("#555555"));

    // Charts.
    d.newPage();
    d.heading(QObject::tr("Charts"));
    QStringList cats;
    for (const json& r : get(report, "requests")) cats << str(get(r, "id"));
    auto per_request = [&](const std::string& id, const char* key, double scale) {
      Doc::Series s{system_label(report, id), {}};
      for (const json& r : get(report, "requests")) {
        const json v = get(get(get(r, "results"), id.c_str()), key);
        s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>() * scale) : std::nullopt);
      }
      return s;
    };
    auto published = [&](const char* key, double scale) {
      std::vector<Doc::Series> out;
      std::vector<std::string> configs;
      for (const json& a : get(report, "aggregates")) {
        const json pub = get(a, "published");
        if (!pub.is_object()) continue;
        for (const auto& [config, p] : pub.items()) {
          if (get(p, key).is_number() && std::find(configs.begin(), configs.end(), config) == configs.end()) {
            configs.push_back(config);
          }
        }
      }
      for (const std::string& config : configs) {
        Doc::Series s{QObject::tr("published: %1").arg(QString::fromStdString(config)), {}};
        for (const json& r : get(report, "requests")) {
          std::optional<double> v;
          for (const json& a : get(report, "aggregates")) {
            if (get(a, "group") == get(r, "dataset")) {
              const json x = get(get(get(a, "published"), config.c_str()), key);
              if (x.is_number()) v = x.get<double>() * scale;
            }
          }
          s.values.push_back(v);
        }
        out.push_back(s);
      }
      return out;
    };
    std::vector<Doc::Series> decode;
    for (const std::string& id : ids) decode.push_back(per_request(id, "decode_tps", 1));
    for (auto& s : published("decode_tok_s", 1)) decode.push_back(std::move(s));
    d.bar_chart(QObject::tr("Decode tokens/s per request"), QObject::tr("tokens/s"), cats, decode);
    std::vector<Doc::Series> hit{per_request("moepack", "hit_rate", 1)};
    for (auto& s : published("hit_rate", 1)) hit.push_back(std::move(s));
    d.bar_chart(QObject::tr("Expert cache hit rate per request"), QObject::tr("unique (layer, expert) keys per step"), cats,
                hit);

    std::vector<double> ms, kb;
    std::vector<std::pair<size_t, QString>> starts;
    for (const json& r : get(report, "requests")) {
      const json tl = get(get(get(r, "results"), "moepack"), "timeline");
      if (!tl.is_object()) continue;
      starts.emplace_back(ms.size(), str(get(r, "id")));
      for (const json& v : tl["forward_ms"]) ms.push_back(v.get<double>());
      for (const json& v : tl["read_bytes"]) kb.push_back(v.get<double>() / 1e3);
    }
    d.timeline(ms, kb, starts);
  }  // ends the painter, then the writer: the PDF is complete in `pdf`
  buf.close();
  return pdf;
}

void write_pdf_report(const json& report, const QString& path) {
  const QByteArray pdf = render_pdf_report(report);
  const QFileInfo fi(path);
  write_file_atomic(fi.absolutePath().toStdString(), fi.fileName().toStdString(), pdf.toStdString());
}

std::vector<int> place_axis_labels(const std::vector<double>& x, const std::vector<double>& width, double gap,
                                   int rows) {
  std::vector<int> out(x.size(), -1);
  std::vector<double> end(static_cast<size_t>(std::max(rows, 0)), -std::numeric_limits<double>::infinity());
  for (size_t k = 0; k < x.size(); ++k) {
    for (size_t r = 0; r < end.size(); ++r) {
      if (x[k] >= end[r] + gap) {
        out[k] = static_cast<int>(r);
        end[r] = x[k] + (k < width.size() ? width[k] : 0.0);
        break;
      }
    }
  }
  return out;
}

}  // namespace moepack::ui
