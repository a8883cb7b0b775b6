import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Controls.Material
import MoePack.Ui
import "buildphases.js" as BuildPhases

// Shown over the chat while the engine is not ready: the model being prepared (the demo GGUF
// is converted to an Expert Pack on first use, with progress), or the error and a way out.
Rectangle {
    id: panel
    required property EngineController engine
    property double conversationId: -1  // reopened by the restart after a lost GPU
    signal openSettings()
    // A benchmark has the memory: the chat's model waits for it.
    readonly property bool benchmarkHolds: engine.held && (engine.state === EngineController.Empty
                                                            || engine.state === EngineController.Loading)

    color: "#f6f7fb"

    function phaseText(p) { return BuildPhases.text(p) }

    ColumnLayout {
        anchors.centerIn: parent
        width: Math.min(parent.width - 64, 520)
        spacing: 14

        Label {
            Layout.fillWidth: true
            horizontalAlignment: Text.AlignHCenter
            font.pixelSize: 22
            font.bold: true
            objectName: "panelTitle"
            text: panel.benchmarkHolds ? qsTr("A benchmark is using the model")
                : panel.engine.state === EngineController.DeviceLost ? qsTr("The GPU stopped working")
                : panel.engine.state === EngineController.Failed ? qsTr("The model could not be loaded")
                : panel.engine.state === EngineController.Empty ? qsTr("No model loaded")
                : qsTr("Getting the model ready")
        }
        Label {
            Layout.fillWidth: true
            visible: panel.benchmarkHolds
            wrapMode: Text.Wrap
            horizontalAlignment: Text.AlignHCenter
            textFormat: Text.PlainText
            color: "#4b5563"
            text: qsTr("%1 is being benchmarked. The chat goes on when the benchmark has finished.")
                  .arg(String(panel.engine.benchmarkModel).replace(/\/+$/, "").replace(/^.*\//, ""))
        }
        Label {
            Layout.fillWidth: true
            visible: panel.engine.state === EngineController.Loading && !panel.benchmarkHolds
            horizontalAlignment: Text.AlignHCenter
            color: "#4b5563"
            text: panel.phaseText(panel.engine.progressPhase)
        }
        ProgressBar {
            objectName: "loadProgress"
            Layout.fillWidth: true
            visible: panel.engine.state === EngineController.Loading && !panel.benchmarkHolds
            from: 0; to: 1
            indeterminate: panel.engine.progress < 0
            value: Math.max(0, panel.engine.progress)
        }
        Label {
            Layout.fillWidth: true
            visible: panel.engine.state === EngineController.Loading && !panel.benchmarkHolds
                     && panel.engine.progressDetail.length > 0
            horizontalAlignment: Text.AlignHCenter
            elide: Text.ElideMiddle
            color: "#6b7280"
            font.pixelSize: 12
            text: panel.engine.progressDetail
        }
        Button {
            // Converting can take hours on a large model: stopping keeps what is written, and
            // loading the model again goes on from there.
            objectName: "stopLoading"
            Layout.alignment: Qt.AlignHCenter
            visible: panel.engine.state === EngineController.Loading && panel.engine.progressPhase !== "waiting"
                     && panel.engine.progressPhase !== "open"
            text: qsTr("Stop converting")
            onClicked: panel.engine.unload()
        }
        Label {
            Layout.fillWidth: true
            visible: panel.engine.state === EngineController.Failed || panel.engine.state === EngineController.DeviceLost
            wrapMode: Text.Wrap
            horizontalAlignment: Text.AlignHCenter
            color: "#b91c1c"
            text: panel.engine.error
        }
        RowLayout {
            Layout.alignment: Qt.AlignHCenter
            visible: !panel.benchmarkHolds && (panel.engine.state === EngineController.Failed
                     || (panel.engine.state === EngineController.Empty && panel.engine.requestedPath.length > 0))
            Button {
                text: panel.engine.state === EngineController.Empty ? qsTr("Load again") : qsTr("Reload")
                highlighted: true
                Material.elevation: 0
                onClicked: panel.engine.reload()
            }
            Button {
                text: qsTr("Settings")
                onClicked: panel.openSettings()
            }
        }
        Label {
            Layout.fillWidth: true
            visible: panel.engine.state === EngineController.DeviceLost
            wrapMode: Text.Wrap
            horizontalAlignment: Text.AlignHCenter
            color: "#4b5563"
            text: qsTr("The GPU cannot be used again until MoePack restarts. Your conversations are saved; "
                       + "the restarted app opens this one.")
        }
        Button {
            objectName: "restartButton"
            Layout.alignment: Qt.AlignHCenter
            visible: panel.engine.state === EngineController.DeviceLost
            text: qsTr("Restart MoePack")
            highlighted: true
            Material.elevation: 0
            onClicked: panel.engine.restartApplication(panel.conversationId)
        }
    }
}
