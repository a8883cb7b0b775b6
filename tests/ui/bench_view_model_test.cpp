// The studio's Benchmarks page (issue 10) on the demo model converted to an Expert Pack with a
// 40-of-160-expert cache (evicting), 2 prompts, a few tokens:
//   - BenchViewModel's run equals a direct run of the bench library (bench::run_bench, the code
//     behind `moepack bench`) with the same settings: same completion tokens, text and cache
//     counters per request; progress never decreases and ends at 1; the per-token timeline
//     adds up to the request's BackendStats (SSD bytes, misses);
//   - exports: JSON (parses to the report), CSV, HTML (with the timeline SVG, opened in headless
//     Chromium: the element is in its DOM and its screenshot is not blank), PDF (pdftoppm renders
//     every page; the title page and the charts page are not blank);
//   - cancel mid-run stops within a bound and leaves no report (and no file);
//   - Main.qml's Benchmarks page after a run on the chat model (unloaded for the run, reloaded
//     after): screenshot to $MOEPACK_ARTIFACTS (default <build>/test-artifacts).
#include "ui/bench_view_model.h"

#include <QtQml/qqmlextensionplugin.h>

#include <QApplication>
#include <QDate>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QJsonDocument>
#include <QProcess>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <memory>

#include "bench/bench_runner.h"
#include "bench/prompt_set.h"
#include "packbuilder/pack_builder.h"
#include "ui/engine_worker.h"
#include "ui/pdf_report.h"

Q_IMPORT_QML_PLUGIN(MoePack_UiPlugin)

using namespace moepack;
using namespace moepack::ui;
using nlohmann::json;

namespace {

const QString kDemo = QStringLiteral(MOEPACK_SOURCE_DIR "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf");
constexpr int kTokens = 6;

QString artifactDir() {
  QString d = qEnvironmentVariable("MOEPACK_ARTIFACTS");
  if (d.isEmpty()) d = QStringLiteral(MOEPACK_BINARY_DIR "/test-artifacts");
  QDir().mkpath(d);
  return d;
}

// Pixels that are not (near) white.
qint64 inkPixels(const QImage& img) {
  qint64 n = 0;
  const QImage rgb = img.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < rgb.height(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
    for (int x = 0; x < rgb.width(); ++x) {
      if (qRed(line[x]) < 235 || qGreen(line[x]) < 235 || qBlue(line[x]) < 235) ++n;
    }
  }
  return n;
}

QByteArray slurp(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class BenchViewModelTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString pack_, prompts_;
  EngineSettings settings_;
  std::unique_ptr<BenchViewModel> ran_;  // the view-model that ran in runMatchesTheBenchLibrary

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MoePackTest"));
    QCoreApplication::setApplicationName(QStringLiteral("bench_view_model_test"));
    QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).removeRecursively();
    QSettings().clear();

    // Two prompts of two data sets, with published figures for the "beside ours" columns.
    prompts_ = dir_.filePath(QStringLiteral("prompts-2.json"));
    std::ofstream(prompts_.toStdString()) << R"({
      "name": "studio-test-2",
      "description": "Two short requests for the studio's Benchmarks page test.",
      "published_results": {"made-up": {"alpaca": {"prefill_tok_s": 3.0, "decode_tok_s": 2.0, "hit_rate": 0.5,
                                                   "ssd_gb_per_token": 1.5},
                                        "mmlu": {"decode_tok_s": 1.8, "hit_rate": 0.4}}},
      "requests": [
        {"id": "alpaca-a", "dataset": "alpaca", "prompt": "What is a cat?"},
        {"id": "mmlu-b", "dataset": "mmlu", "prompt": "Define the word \"river\"."}
      ]
    })";
    BuildOptions o;
    o.source = kDemo.toStdString();
    o.out_dir = dir_.filePath(QStringLiteral("pack")).toStdString();
    o.direct_io = false;
    o.safety_margin_bytes = 0;
    pack_ = QString::fromStdString(build_pack(o).pack_dir);
    // 40 of the demo's 160 routed experts fit (docs/benchmarks.md, "40 slots"): evictions.
    settings_.cache_bytes = 5242880;
    settings_.cache_vram_reserve_mib = 0;
    settings_.direct_io = false;
    settings_.threads = 1;
  }

  void runMatchesTheBenchLibrary() {
    ran_ = std::make_unique<BenchViewModel>();
    BenchViewModel& vm = *ran_;
    vm.setEngineSettings(settings_);
    vm.setModelPath(pack_);
    vm.setPromptSetPath(prompts_);
    QCOMPARE(vm.error(), QString());
    QCOMPARE(vm.promptCount(), 2);
    QCOMPARE(vm.promptSetName(), QStringLiteral("studio-test-2"));
    vm.setMaxTokens(kTokens);

    std::vector<double> progress;
    connect(&vm, &BenchViewModel::progressChanged, this, [&] { progress.push_back(vm.progress()); });
    QSignalSpy finished(&vm, &BenchViewModel::finished);
    QSignalSpy results(&vm, &BenchViewModel::resultsChanged);
    vm.run();
    QVERIFY(vm.running());
    QVERIFY(finished.wait(180000));
    QCOMPARE(finished.first().first().toBool(), true);
    QVERIFY2(vm.error().isEmpty(), qPrintable(vm.error()));
    QVERIFY(!vm.running());
    QVERIFY(vm.hasReport());
    QVERIFY(results.count() >= 3);  // cleared at start, then one per finished request
    QVERIFY(progress.size() >= 3);
    for (size_t i = 1; i < progress.size(); ++i) QVERIFY2(progress[i] >= progress[i - 1], "progress went back");
    QCOMPARE(progress.back(), 1.0);
    QCOMPARE(vm.results().size(), 2);
    QCOMPARE(vm.requestIndex(), 2);

    // The oracle: the bench library itself, as `moepack bench` calls it.
    bench::BenchOptions o;
    o.model_path = pack_.toStdString();
    o.settings = settings_;
    o.prompts = bench::load_prompt_set(prompts_.toStdString());
    o.max_tokens = kTokens;
    const json direct = bench::run_bench(o);
    const json& ours = vm.report();
    QCOMPARE(ours["requests"].size(), direct["requests"].size());
    for (size_t i = 0; i < direct["requests"].size(); ++i) {
      const json& a = ours["requests"][i]["results"]["moepack"];
      const json& b = direct["requests"][i]["results"]["moepack"];
      QVERIFY2(a["ok"].get<bool>(), a.dump().c_str());
      QCOMPARE(a["completion_tokens"].get<int>(), kTokens);
      QVERIFY2(a["completion_tokens"] == b["completion_tokens"], (a["completion_tokens"].dump() + " vs " + b["completion_tokens"].dump()).c_str());
      QVERIFY2(a["prompt_tokens"] == b["prompt_tokens"], (a["prompt_tokens"].dump() + " vs " + b["prompt_tokens"].dump()).c_str());
      QVERIFY2(a["text"] == b["text"], (a["text"].dump() + " vs " + b["text"].dump()).c_str());
      QVERIFY2(a["cache_hits"] == b["cache_hits"], (a["cache_hits"].dump() + " vs " + b["cache_hits"].dump()).c_str());
      QVERIFY2(a["cache_misses"] == b["cache_misses"], (a["cache_misses"].dump() + " vs " + b["cache_misses"].dump()).c_str());
      QVERIFY2(a["pack_read_bytes"] == b["pack_read_bytes"], (a["pack_read_bytes"].dump() + " vs " + b["pack_read_bytes"].dump()).c_str());
      const QVariantMap row = vm.results()[static_cast<qsizetype>(i)].toMap();
      QCOMPARE(row["completionTokens"].toInt(), kTokens);
      QCOMPARE(row["text"].toString().toStdString(), b["text"].get<std::string>());

      // The timeline: one sample per token, adding up to the request's own counters.
      const json& tl = a["timeline"];
      QCOMPARE(tl["tokens"].get<int>(), kTokens);
      QCOMPARE(tl["first_token"].get<int>(), 0);
      uint64_t read = 0, missed = 0;
      for (const json& v : tl["read_bytes"]) read += v.get<uint64_t>();
      for (const json& v : tl["experts_missed"]) missed += v.get<uint64_t>();
      QCOMPARE(read, a["pack_read_bytes"].get<uint64_t>());
      QCOMPARE(missed, a["cache_misses"].get<uint64_t>());
      double last = 0;
      for (const json& t : tl["t_ms"]) {
        if (t.is_null()) continue;
        QVERIFY(t.get<double>() >= last);
        last = t.get<double>();
      }
      QVERIFY(last > 0);
    }
    QVERIFY(ours["aggregates"][0]["results"]["moepack"]["cache_evictions"].get<uint64_t>() > 0);
    // The published figures beside ours: alpaca (ours, published), mmlu (ours, published), all.
    const QVariantList agg = vm.aggregates();
    QCOMPARE(agg.size(), 5);
    QCOMPARE(agg[1].toMap()["source"].toString(), QStringLiteral("published: made-up"));
    QCOMPARE(agg[1].toMap()["decodeTps"].toDouble(), 2.0);
    QVERIFY(vm.timelineTokens() == kTokens);
  }

  void exportsAllFormats() {
    BenchViewModel vm;
    QVERIFY(!vm.exportReport(QStringLiteral("json"), dir_.filePath(QStringLiteral("x.json"))));  // nothing yet
    QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("x.json"))));

    // Export through the view-model that ran (the same calls as the page's buttons).
    QVERIFY(ran_ && ran_->hasReport());
    BenchViewModel& run = *ran_;
    const QString out = dir_.filePath(QStringLiteral("export"));
    for (const char* f : {"json", "csv", "html", "pdf"}) {
      QVERIFY2(run.exportReport(QString::fromLatin1(f), out + "/report." + f), qPrintable(run.error()));
    }
    // The export dialog's suggestion names the model and the day.
    QCOMPARE(QFileInfo(run.suggestedReportFile(QStringLiteral("pdf")).toLocalFile()).fileName(),
             QStringLiteral("moepack-bench-pack-%1.pdf")
                 .arg(QDate::currentDate().toString(Qt::ISODate)));  // the pack folder "pack"
    QVERIFY(!run.exportReport(QStringLiteral("docx"), out + "/report.docx"));
    QVERIFY(run.error().contains(QStringLiteral("docx")));
    QCOMPARE(QDir(out).entryList(QDir::Files).size(), 4);  // no temp files left behind

    const json back = json::parse(slurp(out + "/report.json").toStdString());
    QVERIFY(back["schema"] == "moepack-bench-report");
    QCOMPARE(back["requests"].size(), size_t{2});
    QCOMPARE(back["requests"][0]["results"]["moepack"]["timeline"]["tokens"].get<int>(), kTokens);
    const QByteArray csv = slurp(out + "/report.csv");
    QCOMPARE(csv.count("\r\n"), qsizetype{1 + 2 + 3});  // header, 2 requests, 3 aggregate groups (1 system)
    const QByteArray html = slurp(out + "/report.html");
    QVERIFY(html.contains("id=\"chart-token-timeline\""));
    QVERIFY(html.contains("<polyline class=\"forward-ms\""));

    // PDF: every page renders; the title page and the charts (last) page carry ink.
    const QByteArray pdf = slurp(out + "/report.pdf");
    QVERIFY(pdf.startsWith("%PDF-"));
    QProcess ppm;
    ppm.start(QStringLiteral("pdftoppm"), {QStringLiteral("-r"), QStringLiteral("50"), QStringLiteral("-png"),
                                           out + "/report.pdf", out + "/page"});
    QVERIFY2(ppm.waitForFinished(120000), "pdftoppm (poppler-utils) did not finish");
    QCOMPARE(ppm.exitCode(), 0);
    const QStringList pages = QDir(out).entryList({QStringLiteral("page*.png")}, QDir::Files, QDir::Name);
    QVERIFY2(pages.size() >= 2, qPrintable(pages.join(',')));
    for (const QString& p : pages) {
      const QImage img(out + "/" + p);
      QVERIFY(!img.isNull());
      QVERIFY(img.width() > 300 && img.height() > 400);  // A4 at 50 dpi: 413 x 585
      QVERIFY(img.save(artifactDir() + "/bench-report-pdf-" + p));
    }
    const qint64 first = inkPixels(QImage(out + "/" + pages.first()));
    const qint64 charts = inkPixels(QImage(out + "/" + pages.last()));
    qInfo() << "PDF pages" << pages.size() << "ink pixels: first" << first << "charts" << charts;
    QVERIFY(first > 2000);
    QVERIFY(charts > 2000);

    // The HTML in headless Chromium (Debian's chromium): the timeline is in the parsed DOM, and
    // the page's screenshot is not blank.
    const QString url = QUrl::fromLocalFile(out + "/report.html").toString();
    const QStringList common = {QStringLiteral("--headless"), QStringLiteral("--no-sandbox"), QStringLiteral("--disable-gpu"),
                                QStringLiteral("--disable-dev-shm-usage"), QStringLiteral("--no-first-run"),
                                QStringLiteral("--user-data-dir=") + dir_.filePath(QStringLiteral("chromium-profile"))};
    QProcess dom;
    dom.start(QStringLiteral("chromium"), common + QStringList{QStringLiteral("--dump-dom"), url});
    QVERIFY2(dom.waitForFinished(120000), "chromium --dump-dom did not finish");
    const QByteArray tree = dom.readAllStandardOutput();
    QVERIFY2(tree.contains("id=\"chart-token-timeline\""), dom.readAllStandardError().constData());
    QVERIFY(tree.contains("class=\"forward-ms\""));
    const QString shot = artifactDir() + "/bench-report-html.png";
    QFile::remove(shot);
    QProcess png;
    png.start(QStringLiteral("chromium"), common + QStringList{QStringLiteral("--screenshot=") + shot,
                                                               QStringLiteral("--window-size=1280,6000"), url});
    QVERIFY2(png.waitForFinished(120000), "chromium --screenshot did not finish");
    const QImage page(shot);
    QVERIFY2(!page.isNull(), qPrintable(QString::fromLocal8Bit(png.readAllStandardError())));
    const qint64 ink = inkPixels(page);
    qInfo() << "HTML screenshot" << shot << "ink pixels" << ink;
    QVERIFY(ink > 20000);
  }

  // The PDF timeline's request labels (hand-checked): a label goes on the first row free by the
  // gap, else the second, else it is left out.
  void timelineLabelsNeverOverlap() {
    using moepack::ui::place_axis_labels;
    // Wide apart: all on row 0.
    QCOMPARE(place_axis_labels({0, 100, 200}, {30, 30, 30}, 5, 2), (std::vector<int>{0, 0, 0}));
    // 0..30 on row 0; 20 is too close (needs 35): row 1 (20..50); 40 needs row 0 (>= 35): row 0;
    // 45: row 0 ends at 70, row 1 at 50: neither (needs 75 / 55): left out; 80: row 0.
    QCOMPARE(place_axis_labels({0, 20, 40, 45, 80}, {30, 30, 30, 30, 30}, 5, 2),
             (std::vector<int>{0, 1, 0, -1, 0}));
    // One row: every second label of a tight run is dropped.
    QCOMPARE(place_axis_labels({0, 10, 20, 30}, {12, 12, 12, 12}, 2, 1), (std::vector<int>{0, -1, 0, -1}));
    QCOMPARE(place_axis_labels({}, {}, 2, 2), std::vector<int>{});
  }

  void cancelStopsPromptly() {
    BenchViewModel vm;
    vm.setEngineSettings(settings_);
    vm.setModelPath(pack_);
    vm.setPromptSetPath(prompts_);
    vm.setMaxTokens(400);
    vm.tokenSignalIntervalMs = 1;
    QElapsedTimer since;
    bool asked = false;
    connect(&vm, &BenchViewModel::progressChanged, this, [&] {
      if (!asked && vm.tokens() > 0) {
        asked = true;
        since.start();
        vm.cancel();
      }
    });
    QSignalSpy finished(&vm, &BenchViewModel::finished);
    vm.run();
    QVERIFY(finished.wait(180000));
    QVERIFY(asked);
    const qint64 ms = since.elapsed();
    qInfo() << "cancel took" << ms << "ms";
    QVERIFY2(ms < 5000, qPrintable(QString::number(ms)));
    QCOMPARE(finished.first().first().toBool(), false);
    QVERIFY(!vm.hasReport());
    QCOMPARE(vm.error(), QStringLiteral("Cancelled."));
    QVERIFY(vm.results().isEmpty());  // the first request was cut: nothing finished
    const QString out = dir_.filePath(QStringLiteral("cancelled"));
    QVERIFY(!vm.exportReport(QStringLiteral("pdf"), out + "/report.pdf"));
    QVERIFY(!QFile::exists(out + "/report.pdf"));
    QVERIFY(!QDir(out).exists() || QDir(out).isEmpty());
  }

  void studioBenchmarksPageAfterARun() {
    QSettings s;
    s.setValue("settings/cache_vram_mib", 4);
    s.setValue("settings/cache_vram_reserve_mib", 0);
    QQmlApplicationEngine qml;
    qml.addImportPath(QStringLiteral("qrc:/qt/qml"));
    QStringList warnings;
    connect(&qml, &QQmlApplicationEngine::warnings, this, [&](const QList<QQmlError>& ws) {
      for (const auto& w : ws) warnings << w.toString();
    });
    qml.setInitialProperties({{QStringLiteral("initialModel"), kDemo}});
    qml.load(QUrl(QStringLiteral("qrc:/qt/qml/MoePack/Ui/qml/Main.qml")));
    QCOMPARE(qml.rootObjects().size(), 1);
    auto* window = qobject_cast<QQuickWindow*>(qml.rootObjects().first());
    QVERIFY(window);
    auto* engine = window->property("engine").value<EngineController*>();
    auto* bench = window->property("bench").value<BenchViewModel*>();
    QVERIFY(engine && bench);
    QTRY_VERIFY_WITH_TIMEOUT(engine->state() == EngineController::Ready || engine->state() == EngineController::Failed,
                             180000);
    QVERIFY2(engine->state() == EngineController::Ready, qPrintable(engine->error()));
    // The default model is the chat's; the default prompt set the published ten.
    QCOMPARE(bench->modelPath(), engine->modelPath());
    QCOMPARE(bench->promptCount(), 10);
    QCOMPARE(bench->maxTokens(), 200);

    window->setProperty("currentPage", 5);
    bench->setPromptSetPath(prompts_);
    bench->setMaxTokens(kTokens);
    QSignalSpy finished(bench, &BenchViewModel::finished);
    QSignalSpy reloaded(engine, &EngineController::modelLoaded);
    QSignalSpy unloaded(engine, &EngineController::unloaded);
    const QString model = engine->modelPath();
    bench->run();
    // While it runs the Model field keeps the model (the chat's is unloaded: it went blank), and
    // the chat says that the benchmark has it, with no "Load again" offer.
    QVERIFY(bench->running());
    QVERIFY(engine->held());
    QCOMPARE(engine->state(), EngineController::Empty);
    QCOMPARE(bench->modelPath(), model);
    QCOMPARE(engine->benchmarkModel(), model);
    auto* field = window->findChild<QObject*>(QStringLiteral("benchModel"));
    QVERIFY(field);
    QTRY_COMPARE(field->property("text").toString(), model);
    auto* status = window->findChild<QObject*>(QStringLiteral("engineStatus"));
    QVERIFY(status);
    QCOMPARE(status->property("text").toString(), QStringLiteral("Benchmark"));
    auto* panelTitle = window->findChild<QObject*>(QStringLiteral("panelTitle"));
    QVERIFY(panelTitle);
    QCOMPARE(panelTitle->property("text").toString(), QStringLiteral("A benchmark is using the model"));
    // One model in memory: the chat engine is really released (EngineController::unloaded)
    // before the benchmark's copy loads, and stays unloaded while the run goes on.
    QVERIFY(unloaded.wait(60000) || unloaded.count() > 0);
    QVERIFY(engine->telemetry() == nullptr);
    QVERIFY(engine->state() == EngineController::Empty || finished.count() > 0);
    QVERIFY(finished.wait(180000) || finished.count() > 0);
    QVERIFY2(finished.first().first().toBool(), qPrintable(bench->error()));
    QCOMPARE(bench->results().size(), 2);
    // The chat model was unloaded for the run and comes back after it.
    QVERIFY(reloaded.wait(180000) || reloaded.count() > 0);
    QTRY_COMPARE_WITH_TIMEOUT(engine->state(), EngineController::Ready, 60000);
    QVERIFY(!engine->held());
    QCOMPARE(bench->modelPath(), engine->modelPath());
    QTest::qWait(300);
    const QImage img = window->grabWindow();
    QVERIFY(!img.isNull());
    QVERIFY(inkPixels(img) > 10000);
    const QString path = artifactDir() + "/studio-benchmarks.png";
    QVERIFY2(img.save(path), qPrintable(path));
    qInfo() << "screenshot" << path;
    for (const QString& w : warnings) {
      QVERIFY2(!w.contains(QStringLiteral("BenchmarksPage")), qPrintable(w));
    }
  }
};

QTEST_MAIN(BenchViewModelTest)
#include "bench_view_model_test.moc"
