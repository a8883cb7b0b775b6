pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtCharts
import MoePack.Ui
import "niceaxis.js" as NiceAxis

// The telemetry dashboard: how fast the model talks and how the expert cache and the SSD behave
// meanwhile. Rates and counters on top, occupancy, then live charts (per token) fed by
// TelemetryViewModel.
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

    function count(n) { return Number(n).toLocaleString(Qt.locale(), "f", 0) }

    function rate(tps) { return tps > 0 ? qsTr("%1 tok/s").arg(tps.toFixed(tps < 100 ? 1 : 0)) : "–" }

    // A counter: its name in words, the engine's counter name (ARCHITECTURE.md) as a tooltip.
    component Card: Rectangle {
        id: card
        required property string name
        required property string value
        property string counter: ""
        property bool alarm: false
        property bool strong: false
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        Layout.preferredHeight: 66
        radius: 10
        color: card.strong ? "#4f6bed" : "white"
        border.color: card.alarm ? "#ef4444" : (card.strong ? "#4f6bed" : "#e5e7eb")
        HoverHandler { id: cardHover }
        ToolTip.visible: cardHover.hovered && card.counter.length > 0
        ToolTip.text: card.counter
        ToolTip.delay: 400
        Column {
            anchors.fill: parent
            anchors.margins: 11
            spacing: 4
            Label {
                width: parent.width
                text: card.name
                elide: Text.ElideRight
                color: card.strong ? "#dfe5ff" : "#6b7280"
                font.pixelSize: 12
            }
            Label {
                width: parent.width
                text: card.value
                elide: Text.ElideRight
                font.pixelSize: 19
                font.bold: true
                color: card.alarm ? "#b91c1c" : (card.strong ? "white" : "#111827")
            }
        }
    }

    Connections {
        target: page.telemetry
        function onUpdated() {
            page.telemetry.updateSeries(hitSeries, cumulativeSeries, readSeries, evictionSeries)
        }
    }

    Rectangle { anchors.fill: parent; color: "#f6f7fb" }

    // Scrolls when the page is lower than the cards plus the charts' minimum heights; the charts
    // fill the rest when it is higher. (The height follows the page, not the layout's implicit
    // height, which itself follows the height through the filling charts: a binding loop.)
    ScrollView {
        id: scroll
        anchors.fill: parent
        contentWidth: availableWidth
        contentHeight: column.height + 36

        ColumnLayout {
            id: column
            x: 18
            y: 18
            width: scroll.availableWidth - 36
            height: Math.max(page.height - 36, 960)
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

            // Speed and the cache first, then the SSD and GPU traffic (tooltips: the engine's
            // counter names, ARCHITECTURE.md).
            GridLayout {
                objectName: "dashboardCards"
                Layout.fillWidth: true
                columns: 5
                rowSpacing: 10
                columnSpacing: 10
                Card {
                    name: qsTr("Hit rate"); strong: true; counter: "cache_hits / (cache_hits + cache_misses)"
                    // "–" before the first lookup: 0 % would claim every lookup missed.
                    value: page.telemetry.cacheHits + page.telemetry.cacheMisses > 0 ? (page.telemetry.hitRate * 100).toFixed(1) + " %" : "–"
                }
                Card {
                    objectName: "decodeCard"
                    name: qsTr("Decode (last reply)"); strong: true
                    value: page.rate(page.telemetry.decodeTps)
                }
                Card { name: qsTr("Prefill (last reply)"); value: page.rate(page.telemetry.prefillTps) }
                Card {
                    name: qsTr("SSD read per token (last reply)")
                    counter: qsTr("the decoded tokens' pack_read_bytes / tokens (all tokens so far: %1)")
                             .arg(page.bytes(page.telemetry.readBytesPerToken))
                    value: page.bytes(page.telemetry.decodeReadBytesPerToken)
                }
                Card { name: qsTr("Tokens"); value: page.count(page.telemetry.tokens) }
                Card { name: qsTr("Cache hits"); counter: "cache_hits"; value: page.count(page.telemetry.cacheHits) }
                Card { name: qsTr("Cache misses"); counter: "cache_misses"; value: page.count(page.telemetry.cacheMisses) }
                Card { name: qsTr("Evictions"); counter: "cache_evictions"; value: page.count(page.telemetry.cacheEvictions) }
                Card {
                    name: qsTr("Prefetched: used / read"); counter: "prefetch_hits / prefetch_reads"
                    value: page.count(page.telemetry.prefetchHits) + " / " + page.count(page.telemetry.prefetchReads)
                }
                Card {
                    name: qsTr("Cache slots used")
                    value: page.telemetry.slotCount > 0
                           ? qsTr("%1 / %2").arg(page.telemetry.slotsUsed).arg(page.telemetry.slotCount)
                           : qsTr("resident")
                }
                Card { name: qsTr("Read from SSD"); counter: "pack_read_bytes"; value: page.bytes(page.telemetry.packReadBytes) }
                Card { name: qsTr("Copied to the GPU"); counter: "h2d_bytes"; value: page.bytes(page.telemetry.h2dBytes) }
                Card {
                    objectName: "ramTierCard"
                    name: qsTr("Misses served from RAM")
                    counter: qsTr("ram_tier_hits; tier of %1 slots, %2 MiB (cache_ram_mib); copied down: %3")
                             .arg(page.telemetry.ramTierSlots)
                             .arg((page.telemetry.ramTierSlots * page.telemetry.slotMib).toFixed(0))
                             .arg(page.bytes(page.telemetry.d2hBytes))
                    value: page.count(page.telemetry.ramTierHits)
                }
                Card {
                    name: qsTr("Buffered reads"); counter: qsTr("fallback_count: reads without O_DIRECT")
                    value: page.count(page.telemetry.fallbackCount)
                }
                Card {
                    name: qsTr("I/O errors"); counter: "io_errors"
                    value: page.count(page.telemetry.ioErrors); alarm: page.telemetry.ioErrors > 0
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
                    Layout.minimumHeight: 260
                    title: qsTr("Cache hit rate")
                    antialiasing: true
                    legend.alignment: Qt.AlignBottom
                    backgroundRoundness: 10
                    ValueAxis {
                        id: hitX
                        min: page.telemetry.xMin
                        max: page.telemetry.xMax
                        labelFormat: "%d"
                        // Ticks on round token numbers (multiples of the step), whatever the range.
                        tickType: ValueAxis.TicksDynamic
                        tickAnchor: 0
                        tickInterval: NiceAxis.tokenStep(page.telemetry.xMax - page.telemetry.xMin)
                        titleText: qsTr("token")
                    }
                    ValueAxis { id: hitY; min: 0; max: 1; tickCount: 6; labelFormat: "%.1f" }
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
                    Layout.minimumHeight: 210
                    title: qsTr("SSD reads per token (KiB)")
                    antialiasing: true
                    legend.visible: false
                    backgroundRoundness: 10
                    ValueAxis { id: readX; min: page.telemetry.xMin; max: page.telemetry.xMax; labelFormat: "%d"; tickType: ValueAxis.TicksDynamic; tickAnchor: 0; tickInterval: NiceAxis.tokenStep(page.telemetry.xMax - page.telemetry.xMin) }
                    ValueAxis { id: readY; min: 0; max: NiceAxis.max(Math.max(1, page.telemetry.readKiBMax)); tickCount: NiceAxis.ticks(Math.max(1, page.telemetry.readKiBMax)); labelFormat: NiceAxis.format(Math.max(1, page.telemetry.readKiBMax)) }
                    LineSeries { id: readSeries; axisX: readX; axisY: readY; color: "#0f9d8a"; width: 1.5 }
                }
                ChartView {
                    objectName: "evictionChart"
                    Layout.fillWidth: true
                    Layout.fillHeight: true
                    Layout.minimumHeight: 210
                    title: qsTr("Evictions per token")
                    antialiasing: true
                    legend.visible: false
                    backgroundRoundness: 10
                    ValueAxis { id: evX; min: page.telemetry.xMin; max: page.telemetry.xMax; labelFormat: "%d"; tickType: ValueAxis.TicksDynamic; tickAnchor: 0; tickInterval: NiceAxis.tokenStep(page.telemetry.xMax - page.telemetry.xMin) }
                    ValueAxis { id: evY; min: 0; max: NiceAxis.max(Math.max(1, page.telemetry.evictionsMax)); tickCount: NiceAxis.ticks(Math.max(1, page.telemetry.evictionsMax)); labelFormat: NiceAxis.format(Math.max(1, page.telemetry.evictionsMax)) }
                    LineSeries { id: evictionSeries; axisX: evX; axisY: evY; color: "#d97706"; width: 1.5 }
                }
                // Heat map: one row per MoE layer, one cell per expert; filled = in the cache now.
                Rectangle {
                    objectName: "residencyMap"
                    Layout.fillWidth: true
                    Layout.fillHeight: true
                    Layout.minimumHeight: 160
                    radius: 10
                    color: "white"
                    ColumnLayout {
                        anchors.fill: parent
                        anchors.margins: 12
                        spacing: 6
                        Label {
                            Layout.alignment: Qt.AlignHCenter
                            text: qsTr("Experts in the cache (rows: MoE layers, columns: experts)")
                            font.bold: true
                            color: "#374151"
                        }
                        Canvas {
                            id: heat
                            Layout.fillWidth: true
                            Layout.fillHeight: true
                            visible: page.telemetry.residencyLayers > 0
                            onPaint: {
                                const ctx = getContext("2d");
                                ctx.reset();
                                const rows = page.telemetry.residencyLayers;
                                const cols = page.telemetry.residencyExperts;
                                if (rows === 0 || cols === 0)
                                    return;
                                const map = page.telemetry.residency;
                                const cw = width / cols, ch = height / rows;
                                for (let l = 0; l < rows; ++l) {
                                    for (let e = 0; e < cols; ++e) {
                                        ctx.fillStyle = map[l * cols + e] ? "#4f6bed" : "#e5e7eb";
                                        ctx.fillRect(e * cw + 0.5, l * ch + 0.5, Math.max(1, cw - 1), Math.max(1, ch - 1));
                                    }
                                }
                            }
                            Connections {
                                target: page.telemetry
                                function onUpdated() { heat.requestPaint(); }
                            }
                        }
                        Label {
                            visible: page.telemetry.residencyLayers === 0
                            Layout.fillHeight: true
                            Layout.alignment: Qt.AlignHCenter
                            verticalAlignment: Text.AlignVCenter
                            color: "#6b7280"
                            text: qsTr("All experts are resident (no expert cache on this path)")
                        }
                    }
                }
            }
        }
    }
}
