#include "ui/telemetry_view_model.h"

#include <QtCharts/QXYSeries>
#include <algorithm>

#include "ui/engine_worker.h"

namespace moepack::ui {
namespace {
void replace(QAbstractSeries* s, const std::vector<QPointF>& pts) {
  if (auto* xy = qobject_cast<QXYSeries*>(s)) xy->replace(QList<QPointF>(pts.begin(), pts.end()));
}
}  // namespace

TelemetryViewModel::TelemetryViewModel(QObject* parent) : QObject(parent) {
  timer_.setInterval(intervalMs);
  connect(&timer_, &QTimer::timeout, this, &TelemetryViewModel::poll);
}

void TelemetryViewModel::setEngine(EngineController* e) {
  if (engine_ == e) return;
  if (engine_) disconnect(engine_, nullptr, this, nullptr);
  engine_ = e;
  if (e) {
    connect(e, &EngineController::modelLoaded, this, [this] {
      clear();
      poll();
    });
    connect(e, &EngineController::stateChanged, this, [this] {
      if (engine_ && engine_->state() == EngineController::Ready) {
        timer_.start(intervalMs);
      } else {
        timer_.stop();
      }
    });
  }
  clear();
  emit engineChanged();
}

void TelemetryViewModel::clear() {
  snap_ = {};
  hitRate_.clear();
  cumulative_.clear();
  readKiB_.clear();
  evictions_.clear();
  xMin_ = 0;
  xMax_ = 1;
  decodeTps_ = prefillTps_ = decodeReadPerToken_ = lastPrefillTps_ =
      0;  // a new model: nothing of the last one's
  readMax_ = evictMax_ = 1;
  residency_ = {};
  emit updated();
}

QVariantList TelemetryViewModel::residency() const {
  QVariantList out;
  out.reserve(static_cast<qsizetype>(residency_.resident.size()));
  for (uint8_t r : residency_.resident) out.append(static_cast<int>(r));
  return out;
}

int TelemetryViewModel::slotCount() const { return engine_ ? static_cast<int>(engine_->info().cacheSlots) : 0; }

int TelemetryViewModel::slotsUsed() const {
  if (residency_.n_layers > 0) {  // exact: count the cached experts
    int n = 0;
    for (uint8_t r : residency_.resident) n += r;
    return n;
  }
  // Experts placed: misses that were read (a prefetch hit was read ahead, counted once in
  // prefetch_reads), plus every prefetch, minus evictions.
  const uint64_t placed = snap_.cache_misses - std::min(snap_.cache_misses, snap_.prefetch_hits) + snap_.prefetch_reads;
  const uint64_t filled = placed > snap_.cache_evictions ? placed - snap_.cache_evictions : 0;
  return static_cast<int>(std::min<uint64_t>(filled, static_cast<uint64_t>(slotCount())));
}

int TelemetryViewModel::ramTierSlots() const {
  return engine_ ? static_cast<int>(engine_->info().ramTierSlots) : 0;
}

double TelemetryViewModel::slotMib() const {
  return engine_ ? static_cast<double>(engine_->info().cacheSlotBytes) / (1024.0 * 1024.0) : 0.0;
}

void TelemetryViewModel::poll() {
  const TelemetryHandle t = engine_ ? engine_->telemetry() : nullptr;
  if (!t) return;
  const TelemetrySnapshot s = t->snapshot();
  if (s.tokens == snap_.tokens && s.cache_misses == snap_.cache_misses && s.tokens != 0) return;  // idle
  snap_ = s;
  residency_ = t->residency();
  const EngineInfo& info = engine_->info();
  const double keys = static_cast<double>(info.moeLayers) * static_cast<double>(info.topK);
  const std::vector<TokenSample> samples = t->recent(window);
  hitRate_.clear();
  readKiB_.clear();
  readMax_ = 1;
  for (const TokenSample& ts : samples) {
    const double x = static_cast<double>(ts.index);
    if (keys > 0) hitRate_.emplace_back(x, std::clamp(1.0 - ts.experts_missed / keys, 0.0, 1.0));
    const double kib = static_cast<double>(ts.read_bytes) / 1024.0;
    readKiB_.emplace_back(x, kib);
    readMax_ = std::max(readMax_, kib);
  }
  // Per token from the samples, however many tokens a poll covers (one point per poll drew
  // nothing after a fast reply): evictions, and the cumulative hit rate at each token, the
  // totals now less the lookups of the tokens after it.
  evictions_.clear();
  cumulative_.clear();
  uint64_t hits = s.cache_hits, misses = s.cache_misses;
  for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
    const double x = static_cast<double>(it->index);
    evictions_.emplace_back(x, static_cast<double>(it->evictions));
    const uint64_t lookups = hits + misses;
    cumulative_.emplace_back(x,
                             lookups == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(lookups));
    hits -= std::min<uint64_t>(hits, it->experts_hit);
    misses -= std::min<uint64_t>(misses, it->experts_missed);
  }
  std::reverse(evictions_.begin(), evictions_.end());
  std::reverse(cumulative_.begin(), cumulative_.end());
  // The latest reply: its first sample (the prefill) and the decode samples after it.
  decodeTps_ = prefillTps_ = decodeReadPerToken_ = 0;
  {
    auto start = samples.end();
    for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
      if (it->reply_start) {
        start = std::prev(it.base());
        break;
      }
    }
    if (start != samples.end() && start->forward_ms > 0)
      lastPrefillTps_ = static_cast<double>(start->forwarded) * 1000.0 / start->forward_ms;
    // A reply longer than the window: its first sample has scrolled out, no other reply began
    // since, so its prefill is still the one measured when it was in view.
    prefillTps_ = lastPrefillTps_;
    double ms = 0, bytes = 0;
    size_t n = 0;
    for (auto it = start == samples.end() ? samples.begin() : std::next(start); it != samples.end(); ++it) {
      ms += it->forward_ms;
      n += it->forwarded;
      bytes += static_cast<double>(it->read_bytes);
    }
    if (n > 0 && ms > 0) decodeTps_ = static_cast<double>(n) * 1000.0 / ms;
    decodeReadPerToken_ = n > 0 ? bytes / static_cast<double>(n) : 0;
  }
  xMax_ = std::max(1.0, static_cast<double>(s.tokens));
  xMin_ = samples.empty() ? 0.0 : static_cast<double>(samples.front().index);
  evictMax_ = 1;
  for (const QPointF& p : evictions_) evictMax_ = std::max(evictMax_, p.y());
  emit updated();
}

void TelemetryViewModel::updateSeries(QAbstractSeries* hitRate, QAbstractSeries* cumulativeHitRate,
                                      QAbstractSeries* readKiB, QAbstractSeries* evictions) const {
  replace(hitRate, hitRate_);
  replace(cumulativeHitRate, cumulative_);
  replace(readKiB, readKiB_);
  replace(evictions, evictions_);
}

}  // namespace moepack::ui
