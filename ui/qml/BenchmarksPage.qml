pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Qt.labs.platform as Platform
import QtCharts
import MoePack.Ui
import "niceaxis.js" as NiceAxis

// The Benchmarks page (issue 10): the published evaluation as a button. Settings on top, then
// Run / Cancel and progress, live charts (decode tokens/s and hit rate per request, the running
// request's per-token timeline), the results table and the published figures beside ours, and
// the exports (JSON, CSV, HTML, PDF). BenchViewModel runs the bench library on a worker thread.
Item {
    id: page
    required property BenchViewModel bench

    // Axes with whole-number ticks: requests 1..n (0 and n + 1 as margins), tokens 0..n - 1.
    readonly property int requestAxisMax: page.bench.requestCount <= 20 ? Math.max(1, page.bench.requestCount) + 1
                                                                       : Math.ceil((page.bench.requestCount + 1) / 10) * 10
    readonly property int requestTicks: page.bench.requestCount <= 20 ? page.requestAxisMax + 1 : 11
    // Token ticks 1, 2 or 5 × 10^k apart, as the dashboard's (not 13, 26, 39...).
    readonly property int tokenStep: NiceAxis.tokenStep(Math.max(1, page.bench.timelineTokens - 1))
    readonly property int tokenAxisMax: Math.max(1, Math.ceil((page.bench.timelineTokens - 1) / page.tokenStep)) * page.tokenStep
    readonly property int tokenTicks: page.tokenAxisMax / page.tokenStep + 1

    function fmt(v, digits) { return v < 0 ? "–" : Number(v).toFixed(digits) }

    // A table row: the first two columns wide, the rest numbers.
    component Row6: RowLayout {
        id: row
        property var cells: []
        property bool header: false
        Layout.fillWidth: true
        spacing: 0
        Repeater {
            model: row.cells
            delegate: Label {
                required property var modelData
                required property int index
                Layout.fillWidth: true
                Layout.preferredWidth: index < 2 ? 160 : 90
                elide: Text.ElideRight
                text: modelData
                font.bold: row.header
                color: row.header ? "#374151" : "#111827"
            }
        }
    }

    Connections {
        target: page.bench
        function onResultsChanged() { page.refreshCharts() }
        function onTimelineChanged() { page.refreshCharts() }
    }
    function refreshCharts() {
        page.bench.updateSeries(decodeSeries, hitSeries, timelineMsSeries, timelineKibSeries)
    }

    // Qt Labs Platform dialogs: the platform's own where there is one, else Qt Widgets'
    // QFileDialog (the studio is a QApplication). Qt 6.4's QML-drawn dialog joined a typed full
    // path to its current folder ("/work//tmp/x.md"), kept Save disabled until Enter, and chose
    // the highlighted child of a folder.
    Platform.FileDialog {
        id: promptDialog
        objectName: "benchPromptDialog"
        title: qsTr("Load a prompt set")
        nameFilters: [qsTr("Prompt sets (*.json)")]
        onAccepted: page.bench.promptSetPath = promptDialog.file
    }
    SaveFileDialog {
        id: exportDialog
        objectName: "benchExportDialog"
        property string format: "json"
        title: qsTr("Export the report")
        // Suggests "moepack-bench-<model>-<date>" in the documents folder.
        defaultSuffix: exportDialog.format
        nameFilters: [exportDialog.format.toUpperCase() + " (*." + exportDialog.format + ")"]
        onAccepted: page.bench.exportReport(exportDialog.format, exportDialog.file)
    }

    Rectangle { anchors.fill: parent; color: "#f6f7fb" }

    ScrollView {
        id: scroll
        anchors.fill: parent
        contentWidth: availableWidth

        ColumnLayout {
            width: scroll.availableWidth - 36
            x: 18
            y: 18
            spacing: 12

            Label {
                text: qsTr("Benchmarks")
                font.pixelSize: 20
                font.bold: true
            }
            Label {
                Layout.fillWidth: true
                wrapMode: Text.WordWrap
                color: "#6b7280"
                text: qsTr("Requests one at a time, greedy, end-of-generation ignored, fresh KV cache per request and the expert cache kept — the method of moepack bench and of the published evaluation.")
            }

            // Settings.
            GridLayout {
                Layout.fillWidth: true
                columns: 3
                columnSpacing: 10
                rowSpacing: 6
                enabled: !page.bench.running

                Label { text: qsTr("Model") }
                TextField {
                    objectName: "benchModel"
                    Layout.fillWidth: true
                    text: page.bench.modelPath
                    placeholderText: qsTr("GGUF file, Ollama name or Expert Pack (default: the chat model)")
                    onEditingFinished: page.bench.modelPath = text
                }
                Item { implicitWidth: 1 }

                Label { text: qsTr("Prompt set") }
                Label {
                    Layout.fillWidth: true
                    elide: Text.ElideMiddle
                    text: qsTr("%1 (%n request(s)) — %2", "", page.bench.promptCount)
                              .arg(page.bench.promptSetName).arg(page.bench.promptSetPath)
                }
                Button { text: qsTr("Load…"); onClicked: promptDialog.open() }

                Label { text: qsTr("Max tokens") }
                SpinBox {
                    objectName: "benchMaxTokens"
                    from: 1
                    to: 100000
                    editable: true
                    value: page.bench.maxTokens
                    onValueModified: page.bench.maxTokens = value
                }
                Item { implicitWidth: 1 }

                Label { text: qsTr("Baseline URL") }
                TextField {
                    Layout.fillWidth: true
                    text: page.bench.baselineUrl
                    placeholderText: qsTr("optional: an OpenAI-compatible server, e.g. http://127.0.0.1:8080")
                    onEditingFinished: page.bench.baselineUrl = text
                }
                Item { implicitWidth: 1 }
            }

            // Run / Cancel and progress.
            RowLayout {
                Layout.fillWidth: true
                spacing: 10
                Button {
                    objectName: "benchRun"
                    text: qsTr("Run")
                    enabled: !page.bench.running
                    onClicked: page.bench.run()
                }
                Button {
                    objectName: "benchCancel"
                    text: qsTr("Cancel")
                    enabled: page.bench.running
                    onClicked: page.bench.cancel()
                }
                ProgressBar {
                    objectName: "benchProgress"
                    Layout.fillWidth: true
                    from: 0
                    to: 1
                    value: page.bench.progress
                }
                Label {
                    color: "#374151"
                    text: page.bench.requestCount > 0
                          ? qsTr("request %1 of %2 · %3 of %4 tokens").arg(page.bench.requestIndex)
                                .arg(page.bench.requestCount).arg(page.bench.tokens).arg(page.bench.maxTokens)
                          : ""
                }
            }
            Label { text: page.bench.status; color: "#374151" }
            Label {
                Layout.fillWidth: true
                visible: page.bench.error.length > 0
                text: page.bench.error
                color: "#b91c1c"
                wrapMode: Text.WordWrap
            }

            // Live charts.
            GridLayout {
                Layout.fillWidth: true
                columns: 2
                columnSpacing: 10
                rowSpacing: 10
                ChartView {
                    objectName: "benchDecodeChart"
                    Layout.fillWidth: true
                    Layout.preferredHeight: 240
                    title: qsTr("Decode tokens/s per request")
                    antialiasing: true
                    legend.visible: false
                    backgroundRoundness: 10
                    ValueAxis { id: decX; min: 0; max: page.requestAxisMax; tickCount: page.requestTicks; labelFormat: "%.0f"; titleText: qsTr("request") }
                    ValueAxis { id: decY; min: 0; max: NiceAxis.max(Math.max(1, page.bench.decodeMax)); tickCount: NiceAxis.ticks(Math.max(1, page.bench.decodeMax)); labelFormat: NiceAxis.format(Math.max(1, page.bench.decodeMax)) }
                    LineSeries { id: decodeSeries; axisX: decX; axisY: decY; color: "#2f6fdf"; width: 2; pointsVisible: true }
                }
                ChartView {
                    objectName: "benchHitChart"
                    Layout.fillWidth: true
                    Layout.preferredHeight: 240
                    title: qsTr("Expert cache hit rate per request")
                    antialiasing: true
                    legend.visible: false
                    backgroundRoundness: 10
                    ValueAxis { id: hitX; min: 0; max: page.requestAxisMax; tickCount: page.requestTicks; labelFormat: "%.0f"; titleText: qsTr("request") }
                    ValueAxis { id: hitY; min: 0; max: 1; tickCount: 6; labelFormat: "%.1f" }
                    LineSeries { id: hitSeries; axisX: hitX; axisY: hitY; color: "#3aa35c"; width: 2; pointsVisible: true }
                }
                ChartView {
                    objectName: "benchTimelineChart"
                    Layout.columnSpan: 2
                    Layout.fillWidth: true
                    Layout.preferredHeight: 260
                    title: qsTr("Running request, per token: forward ms and SSD KiB")
                    antialiasing: true
                    legend.alignment: Qt.AlignBottom
                    backgroundRoundness: 10
                    ValueAxis { id: tlX; min: 0; max: page.tokenAxisMax; tickCount: page.tokenTicks; labelFormat: "%.0f"; titleText: qsTr("token") }
                    ValueAxis { id: tlMs; min: 0; max: NiceAxis.max(Math.max(1, page.bench.timelineMaxMs)); tickCount: NiceAxis.ticks(Math.max(1, page.bench.timelineMaxMs)); labelFormat: NiceAxis.format(Math.max(1, page.bench.timelineMaxMs)) }
                    ValueAxis { id: tlKb; min: 0; max: NiceAxis.max(Math.max(1, page.bench.timelineMaxKib)); tickCount: NiceAxis.ticks(Math.max(1, page.bench.timelineMaxKib)); labelFormat: NiceAxis.format(Math.max(1, page.bench.timelineMaxKib)) }
                    LineSeries { id: timelineMsSeries; name: qsTr("forward ms"); axisX: tlX; axisY: tlMs; color: "#2f6fdf"; width: 1.5 }
                    LineSeries { id: timelineKibSeries; name: qsTr("SSD KiB"); axisX: tlX; axisYRight: tlKb; color: "#e0703a"; width: 1.5 }
                }
            }

            // Results.
            Label { text: qsTr("Requests"); font.bold: true; font.pixelSize: 15 }
            Row6 {
                header: true
                cells: [qsTr("request"), qsTr("system"), qsTr("prompt"), qsTr("completion"), qsTr("TTFT ms"),
                        qsTr("prefill tok/s"), qsTr("decode tok/s"), qsTr("hit rate"), qsTr("SSD MiB/token")]
            }
            Repeater {
                objectName: "benchResults"
                model: page.bench.results
                delegate: Row6 {
                    required property var modelData
                    cells: modelData.ok
                           ? [modelData.id + " · " + modelData.dataset,
                              modelData.system, page.fmt(modelData.promptTokens, 0), page.fmt(modelData.completionTokens, 0),
                              page.fmt(modelData.ttftMs, 1), page.fmt(modelData.prefillTps, 1), page.fmt(modelData.decodeTps, 2),
                              page.fmt(modelData.hitRate, 3),
                              modelData.readBytesPerToken < 0 ? "–" : (modelData.readBytesPerToken / 1048576).toFixed(2)]
                           : [modelData.id, modelData.system, qsTr("error: %1").arg(modelData.error)]
                }
            }

            Label { text: qsTr("Per data set, published figures beside ours"); font.bold: true; font.pixelSize: 15 }
            Row6 {
                header: true
                cells: [qsTr("data set"), qsTr("source"), qsTr("prefill tok/s"), qsTr("decode tok/s"), qsTr("hit rate"),
                        qsTr("SSD GB/token")]
            }
            Repeater {
                objectName: "benchAggregates"
                model: page.bench.aggregates
                delegate: Row6 {
                    required property var modelData
                    cells: [modelData.group, modelData.source, page.fmt(modelData.prefillTps, 1),
                            page.fmt(modelData.decodeTps, 2), page.fmt(modelData.hitRate, 3),
                            page.fmt(modelData.ssdGbPerToken, modelData.published ? 2 : 6)]
                }
            }
            Label {
                Layout.fillWidth: true
                wrapMode: Text.WordWrap
                color: "#6b7280"
                text: qsTr("Published figures are from the prompt set (other models and machines): context, not a like-for-like comparison.")
            }

            // Exports.
            RowLayout {
                spacing: 10
                enabled: page.bench.hasReport && !page.bench.running
                Label { text: qsTr("Export") }
                Repeater {
                    model: ["json", "csv", "html", "pdf"]
                    delegate: Button {
                        required property string modelData
                        text: modelData.toUpperCase()
                        onClicked: {
                            exportDialog.format = modelData
                            exportDialog.openSuggesting(page.bench.suggestedReportFile(modelData))
                        }
                    }
                }
            }
            Item { implicitHeight: 18 }
        }
    }
}
