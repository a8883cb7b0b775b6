import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtCharts
import MoePack.Ui
import "niceaxis.js" as NiceAxis

// The model page: what `moepack inspect` shows, for the model opened in the studio.
Item {
    id: page
    required property ModelInspector inspector

    function mib(bytes) { return (bytes / 1048576).toFixed(2) + " MiB" }

    BusyIndicator {
        anchors.centerIn: parent
        running: page.inspector.loading
        visible: running
    }

    Label {
        anchors.centerIn: parent
        width: parent.width * 0.8
        visible: !page.inspector.loading && page.inspector.error.length > 0
        text: qsTr("Cannot open the model:\n%1").arg(page.inspector.error)
        wrapMode: Text.Wrap
        color: "#b00020"
        horizontalAlignment: Text.AlignHCenter
    }

    RowLayout {
        anchors.fill: parent
        spacing: 12
        visible: !page.inspector.loading && page.inspector.error.length === 0 && page.inspector.architecture.length > 0

        ColumnLayout {
            // Half the page whatever the language: its labels' widths (longer in English, shorter
            // in Chinese) would otherwise move the split and clip the chart's title.
            readonly property real half: (parent.width - parent.spacing) / 2
            Layout.preferredWidth: half
            Layout.minimumWidth: half
            Layout.maximumWidth: half
            Layout.fillHeight: true

            GroupBox {
                title: qsTr("Model")
                Layout.fillWidth: true
                GridLayout {
                    // The box's width, not its own: at the window's minimum width the File line
                    // ran past the border; held to the box, it is elided in the middle.
                    width: parent.width
                    columns: 2
                    columnSpacing: 16
                    Label { text: qsTr("Architecture") } Label { text: page.inspector.architecture; font.bold: true }
                    Label { text: qsTr("File") }
                    Label {
                        objectName: "inspectedFile"
                        Layout.fillWidth: true
                        Layout.maximumWidth: 360
                        elide: Text.ElideMiddle
                        text: (page.inspector.isPack ? qsTr("Expert Pack: %1") : qsTr("GGUF: %1")).arg(page.inspector.path)
                        ToolTip.visible: fileHover.hovered && truncated
                        ToolTip.text: page.inspector.path
                        HoverHandler { id: fileHover }
                    }
                    Label { text: qsTr("Size on disk") } Label { text: page.mib(page.inspector.fileBytes) }
                    Label { text: qsTr("Tensors") } Label { text: page.inspector.tensorCount }
                    Label { text: qsTr("Tokenizer") } Label { text: page.inspector.tokenizer }
                    Label { text: qsTr("Routed experts") }
                    Label {
                        text: qsTr("%1 per layer, top-%2, %3 shared").arg(page.inspector.expertCount)
                                  .arg(page.inspector.topK).arg(page.inspector.sharedExperts)
                    }
                    Label { text: qsTr("All routed experts") } Label { text: page.mib(page.inspector.routedExpertBytes) }
                }
            }

            GroupBox {
                title: qsTr("Hyperparameters")
                Layout.fillWidth: true
                Layout.fillHeight: true
                ListView {
                    anchors.fill: parent
                    clip: true
                    model: page.inspector.hyperparameters
                    ScrollBar.vertical: ScrollBar {}
                    delegate: RowLayout {
                        required property var modelData
                        width: ListView.view.width
                        Label { text: modelData.key; Layout.preferredWidth: 240; elide: Text.ElideRight }
                        Label { text: modelData.value; Layout.fillWidth: true; elide: Text.ElideRight }
                    }
                }
            }
        }

        ColumnLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true

            ChartView {
                id: chart
                Layout.fillWidth: true
                Layout.preferredHeight: 300
                title: qsTr("One routed expert per block (KiB)")
                legend.visible: false
                antialiasing: true
                BarSeries {
                    id: bars
                    axisX: BarCategoryAxis { id: categories }
                    axisY: ValueAxis { id: yAxis; min: 0 }
                }
                Connections {
                    target: page.inspector
                    function onSummaryChanged() {
                        bars.clear()
                        const names = []
                        const values = []
                        let maxv = 0
                        const m = page.inspector.layers
                        for (let r = 0; r < m.rowCount(); ++r) {
                            const idx = m.index(r, 0)
                            names.push(String(m.data(idx, 257)))
                            const kib = m.data(idx, 259) / 1024
                            values.push(kib)
                            maxv = Math.max(maxv, kib)
                        }
                        categories.categories = names
                        const top = maxv > 0 ? maxv : 1
                        yAxis.max = NiceAxis.max(top)
                        yAxis.tickCount = NiceAxis.ticks(top)
                        yAxis.labelFormat = NiceAxis.format(top)
                        bars.append(qsTr("expert KiB"), values)
                    }
                }
            }

            GroupBox {
                title: qsTr("Layers with routed experts")
                Layout.fillWidth: true
                Layout.fillHeight: true
                ListView {
                    id: layerList
                    anchors.fill: parent
                    clip: true
                    model: page.inspector.layers
                    ScrollBar.vertical: ScrollBar {}
                    delegate: ColumnLayout {
                        required property int block
                        required property int experts
                        required property double expertBytes
                        required property string rolesText
                        width: ListView.view.width
                        Label {
                            text: qsTr("blk.%1 — %2 experts × %3 KiB").arg(block).arg(experts)
                                      .arg((expertBytes / 1024).toFixed(1))
                            font.bold: true
                            wrapMode: Text.Wrap
                            Layout.fillWidth: true
                        }
                        Label { text: rolesText; opacity: 0.75; wrapMode: Text.Wrap; Layout.fillWidth: true }
                    }
                }
            }
        }
    }
}
