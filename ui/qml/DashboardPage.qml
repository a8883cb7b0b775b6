pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtCharts
import MoePack.Ui

// The telemetry dashboard: how the expert cache and the SSD behave while the model talks.
// Counters and occupancy on top, then live charts (per token) fed by TelemetryViewModel.
Item {
    id: page
    required property TelemetryViewModel telemetry
    required property EngineController engine

    function bytes(b) {
        if (b >= 1073741824) return (b / 1073741824).toFixed(2) + " GiB"
        if (b >= 1048576) return (b / 1048576).toFixed(1) + " MiB"
        if (b >= 1024) return (b / 1024).toFixed(1) + " KiB"
        return b.toFixed(0) + " B"
    }

    Connections {
        target: page.telemetry
        function onUpdated() {
            page.telemetry.updateSeries(hitSeries, cumulativeSeries, readSeries, evictionSeries)
        }
    }

    Rectangle { anchors.fill: parent; color: "#f6f7fb" }

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: 18
        spacing: 12

        RowLayout {
            Layout.fillWidth: true
            Label {
                text: qsTr("Expert cache and SSD")
                font.pixelSize: 20
                font.bold: true
            }
            Item { Layout.fillWidth: true }
            Label {
                color: "#6b7280"
                text: page.engine.state === EngineController.Ready
                      ? qsTr("%1 · %2 backend · %n token(s)", "", page.telemetry.tokens)
                            .arg(page.engine.modelName).arg(page.engine.backendName)
                      : qsTr("No model loaded")
            }
        }

        // Counters.
        GridLayout {
            Layout.fillWidth: true
            columns: 5
            rowSpacing: 10
            columnSpacing: 10
            Repeater {
                model: [
                    { name: qsTr("Hit rate"), value: (page.telemetry.hitRate * 100).toFixed(1) + " %", key: "" },
                    { name: "cache_hits", value: page.telemetry.cacheHits.toLocaleString(Qt.locale(), "f", 0), key: "" },
                    { name: "cache_misses", value: page.telemetry.cacheMisses.toLocaleString(Qt.locale(), "f", 0), key: "" },
                    { name: "cache_evictions", value: page.telemetry.cacheEvictions.toLocaleString(Qt.locale(), "f", 0), key: "" },
                    { name: "pack_read_bytes", value: page.bytes(page.telemetry.packReadBytes), key: "" },
                    { name: "h2d_bytes", value: page.bytes(page.telemetry.h2dBytes), key: "" },
                    { name: "fallback_count", value: page.telemetry.fallbackCount.toFixed(0), key: "" },
                    { name: "io_errors", value: page.telemetry.ioErrors.toFixed(0), key: "err" },
                    { name: qsTr("Tokens"), value: page.telemetry.tokens.toFixed(0), key: "" },
                    { name: qsTr("Cache slots used"),
                      value: page.telemetry.slotCount > 0
                             ? qsTr("%1 / %2").arg(page.telemetry.slotsUsed).arg(page.telemetry.slotCount)
                             : qsTr("resident"), key: "" }
                ]
                delegate: Rectangle {
                    id: card
                    required property var modelData
                    Layout.fillWidth: true
                    Layout.preferredHeight: 64
                    radius: 10
                    color: "white"
                    border.color: card.modelData.key === "err" && page.telemetry.ioErrors > 0 ? "#ef4444" : "#e5e7eb"
                    Column {
                        anchors.fill: parent
                        anchors.margins: 10
                        spacing: 4
                        Label { text: card.modelData.name; color: "#6b7280"; font.pixelSize: 12 }
                        Label { text: card.modelData.value; font.pixelSize: 18; font.bold: true; color: "#111827" }
                    }
                }
            }
        }

        // Occupancy.
        RowLayout {
            Layout.fillWidth: true
            spacing: 12
            Label {
                text: qsTr("Cache occupancy")
                color: "#374151"
            }
            ProgressBar {
                Layout.fillWidth: true
                from: 0
                to: Math.max(1, page.telemetry.slotCount)
                value: page.telemetry.slotsUsed
            }
            Label {
                color: "#374151"
                text: page.telemetry.slotCount > 0
                      ? qsTr("%1 of %2 MiB").arg((page.telemetry.slotsUsed * page.telemetry.slotMib).toFixed(1))
                                             .arg((page.telemetry.slotCount * page.telemetry.slotMib).toFixed(1))
                      : qsTr("experts resident (no cache)")
            }
        }

        // Charts.
        GridLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            columns: 2
            rowSpacing: 10
            columnSpacing: 10

            ChartView {
                objectName: "hitRateChart"
                Layout.columnSpan: 2
                Layout.fillWidth: true
                Layout.fillHeight: true
                Layout.minimumHeight: 180
                title: qsTr("Cache hit rate")
                antialiasing: true
                legend.alignment: Qt.AlignBottom
                backgroundRoundness: 10
                ValueAxis {
                    id: hitX
                    min: page.telemetry.xMin
                    max: page.telemetry.xMax
                    labelFormat: "%d"
                    titleText: qsTr("token")
                }
                ValueAxis { id: hitY; min: 0; max: 1; labelFormat: "%.1f" }
                LineSeries {
                    id: hitSeries
                    name: qsTr("per token")
                    axisX: hitX
                    axisY: hitY
                    color: "#93a5f5"
                    width: 1.5
                }
                LineSeries {
                    id: cumulativeSeries
                    name: qsTr("cumulative")
                    axisX: hitX
                    axisY: hitY
                    color: "#1f3bb3"
                    width: 2.5
                }
            }
            ChartView {
                objectName: "readChart"
                Layout.fillWidth: true
                Layout.fillHeight: true
                Layout.minimumHeight: 160
                title: qsTr("SSD reads per token (KiB)")
                antialiasing: true
                legend.visible: false
                backgroundRoundness: 10
                ValueAxis { id: readX; min: page.telemetry.xMin; max: page.telemetry.xMax; labelFormat: "%d" }
                ValueAxis { id: readY; min: 0; max: page.telemetry.readKiBMax * 1.1; labelFormat: "%.0f" }
                LineSeries { id: readSeries; axisX: readX; axisY: readY; color: "#0f9d8a"; width: 1.5 }
            }
            ChartView {
                objectName: "evictionChart"
                Layout.fillWidth: true
                Layout.fillHeight: true
                Layout.minimumHeight: 160
                title: qsTr("Evictions per token")
                antialiasing: true
                legend.visible: false
                backgroundRoundness: 10
                ValueAxis { id: evX; min: page.telemetry.xMin; max: page.telemetry.xMax; labelFormat: "%d" }
                ValueAxis { id: evY; min: 0; max: page.telemetry.evictionsMax * 1.1; labelFormat: "%.1f" }
                LineSeries { id: evictionSeries; axisX: evX; axisY: evY; color: "#d97706"; width: 1.5 }
            }
        }
    }
}
