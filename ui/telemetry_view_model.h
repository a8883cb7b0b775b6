// View-model of the dashboard: live expert-cache and SSD telemetry of the loaded engine.
//
// Polled on the UI thread every `intervalMs` (250 ms: 4 Hz) while a model is loaded (also
// when the dashboard is hidden, so the cumulative series has no gaps) from the engine's Telemetry
// (core/telemetry.h: relaxed atomics and seqlocked per-token samples), so reading never
// blocks the engine thread. Series (x = token number):
//   hit rate per token   1 - experts_missed / (moe_layers * top_k), from each TokenSample
//                        (a prefill step covers many tokens: clamped to [0, 1])
//   cumulative hit rate  cache_hits / (cache_hits + cache_misses) at each poll
//   SSD KiB per token    TokenSample.read_bytes / 1024
//   evictions per token  TokenSample.evictions
// Cache occupancy: slots used = the experts the residency map shows cached (else, without a
// map, min(slot count, cache_misses - prefetch_hits + prefetch_reads - cache_evictions)), in
// MiB with the slot size.
//
// QML hands its LineSeries to updateSeries() on every `updated` signal (QXYSeries::replace,
// one repaint per series), the QtCharts way of feeding live data from C++.
#pragma once

#include <QObject>
#include <QPointF>
#include <QPointer>
#include <QTimer>
#include <QVariantList>
#include <QtCharts/QAbstractSeries>
#include <QtQml/qqmlregistration.h>
#include <vector>

#include "core/telemetry.h"
#include "ui/engine_worker.h"

namespace moepack::ui {

class TelemetryViewModel : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(moepack::ui::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
  Q_PROPERTY(double cacheHits READ cacheHits NOTIFY updated)
  Q_PROPERTY(double cacheMisses READ cacheMisses NOTIFY updated)
  Q_PROPERTY(double cacheEvictions READ cacheEvictions NOTIFY updated)
  Q_PROPERTY(double prefetchReads READ prefetchReads NOTIFY updated)
  Q_PROPERTY(double prefetchHits READ prefetchHits NOTIFY updated)
  Q_PROPERTY(double packReadBytes READ packReadBytes NOTIFY updated)
  Q_PROPERTY(double h2dBytes READ h2dBytes NOTIFY updated)
  Q_PROPERTY(double ramTierHits READ ramTierHits NOTIFY updated)  // misses served by the host-RAM tier
  Q_PROPERTY(double d2hBytes READ d2hBytes NOTIFY updated)        // copied down into it
  Q_PROPERTY(double fallbackCount READ fallbackCount NOTIFY updated)
  Q_PROPERTY(double ioErrors READ ioErrors NOTIFY updated)
  Q_PROPERTY(double tokens READ tokens NOTIFY updated)
  Q_PROPERTY(double hitRate READ hitRate NOTIFY updated)  // cumulative, 0..1
  // The latest reply's rates from its token samples (TokenSample::forwarded, ::forward_ms):
  // decode = its later tokens / the sum of their forward times (while it streams: so far;
  // over the last `window` tokens of a longer one); prefill = its first forward's tokens / time.
  // 0 before a reply has them (decode needs two tokens).
  Q_PROPERTY(double decodeTps READ decodeTps NOTIFY updated)
  Q_PROPERTY(double prefillTps READ prefillTps NOTIFY updated)
  Q_PROPERTY(double readBytesPerToken READ readBytesPerToken NOTIFY updated)  // pack bytes / tokens
  // SSD bytes per decoded token of the latest reply (its samples after the first: prefill and
  // its prompt's reads left out), 0 before one.
  Q_PROPERTY(double decodeReadBytesPerToken READ decodeReadBytesPerToken NOTIFY updated)
  Q_PROPERTY(int slotsUsed READ slotsUsed NOTIFY updated)
  Q_PROPERTY(int slotCount READ slotCount NOTIFY updated)
  Q_PROPERTY(double slotMib READ slotMib NOTIFY updated)
  Q_PROPERTY(int ramTierSlots READ ramTierSlots NOTIFY updated)  // the host-RAM tier as sized at load
  Q_PROPERTY(double xMin READ xMin NOTIFY updated)  // token range of the per-token series
  Q_PROPERTY(double xMax READ xMax NOTIFY updated)
  Q_PROPERTY(double readKiBMax READ readKiBMax NOTIFY updated)
  Q_PROPERTY(double evictionsMax READ evictionsMax NOTIFY updated)
  // Heat map of the expert cache: residency[l * residencyExperts + e] is 1 when expert e of MoE
  // layer l is cached (Telemetry::residency, published by the engine after every step).
  // residencyLayers is 0 when the backend has no expert cache.
  Q_PROPERTY(int residencyLayers READ residencyLayers NOTIFY updated)
  Q_PROPERTY(int residencyExperts READ residencyExperts NOTIFY updated)
  Q_PROPERTY(QVariantList residency READ residency NOTIFY updated)

 public:
  explicit TelemetryViewModel(QObject* parent = nullptr);

  int intervalMs = 250;
  size_t window = 512;  // tokens shown

  EngineController* engine() const { return engine_; }
  void setEngine(EngineController* e);

  // Reads the telemetry now (the timer calls this).
  Q_INVOKABLE void poll();
  // Replaces the points of the given series (any may be null).
  Q_INVOKABLE void updateSeries(QAbstractSeries* hitRate, QAbstractSeries* cumulativeHitRate,
                                QAbstractSeries* readKiB, QAbstractSeries* evictions) const;

  double cacheHits() const { return static_cast<double>(snap_.cache_hits); }
  double cacheMisses() const { return static_cast<double>(snap_.cache_misses); }
  double cacheEvictions() const { return static_cast<double>(snap_.cache_evictions); }
  double prefetchReads() const { return static_cast<double>(snap_.prefetch_reads); }
  double prefetchHits() const { return static_cast<double>(snap_.prefetch_hits); }
  double packReadBytes() const { return static_cast<double>(snap_.pack_read_bytes); }
  double h2dBytes() const { return static_cast<double>(snap_.h2d_bytes); }
  double ramTierHits() const { return static_cast<double>(snap_.ram_tier_hits); }
  double d2hBytes() const { return static_cast<double>(snap_.d2h_bytes); }
  double fallbackCount() const { return static_cast<double>(snap_.fallback_count); }
  double ioErrors() const { return static_cast<double>(snap_.io_errors); }
  double tokens() const { return static_cast<double>(snap_.tokens); }
  double hitRate() const { return snap_.hit_rate(); }
  double decodeTps() const { return decodeTps_; }
  double prefillTps() const { return prefillTps_; }
  double readBytesPerToken() const { return snap_.read_bytes_per_token(); }
  double decodeReadBytesPerToken() const { return decodeReadPerToken_; }
  int slotsUsed() const;
  int slotCount() const;
  double slotMib() const;
  int ramTierSlots() const;
  double xMin() const { return xMin_; }
  double xMax() const { return xMax_; }
  double readKiBMax() const { return readMax_; }
  double evictionsMax() const { return evictMax_; }
  int residencyLayers() const { return static_cast<int>(residency_.n_layers); }
  int residencyExperts() const { return static_cast<int>(residency_.n_experts); }
  QVariantList residency() const;

  const std::vector<QPointF>& hitRateSeries() const { return hitRate_; }
  const std::vector<QPointF>& cumulativeSeries() const { return cumulative_; }
  const std::vector<QPointF>& readKiBSeries() const { return readKiB_; }
  const std::vector<QPointF>& evictionSeries() const { return evictions_; }

 signals:
  void engineChanged();
  void updated();

 private:
  void clear();

  QPointer<EngineController> engine_;
  QTimer timer_;
  TelemetrySnapshot snap_;
  std::vector<QPointF> hitRate_, cumulative_, readKiB_, evictions_;
  double xMin_ = 0, xMax_ = 1, readMax_ = 1, evictMax_ = 1;
  double decodeTps_ = 0, prefillTps_ = 0, decodeReadPerToken_ = 0;
  double lastPrefillTps_ = 0;  // of the latest reply start seen (cleared with a new model)
  ResidencyMap residency_;
};

}  // namespace moepack::ui
