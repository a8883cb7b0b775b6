import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import MoePack.Ui

// The studio window: a navigation rail (Chat, Dashboard, Models, Settings) and one page per
// screen. The view-models are created here and handed to the pages (no singletons).
ApplicationWindow {
    id: window
    width: 1280
    height: 820
    minimumWidth: 900
    minimumHeight: 560
    visible: true
    title: engine.modelName.length > 0 ? qsTr("MoePack Studio — %1").arg(engine.modelName)
                                       : qsTr("MoePack Studio")

    property alias inspector: inspector
    property alias engine: engine
    property alias chat: chat
    property alias telemetry: telemetry
    property alias settings: settings
    property alias bench: bench
    property alias currentPage: rail.currentIndex
    required property string initialModel
    property double initialConversation: 0  // --open-conversation (after a restart)

    readonly property color railColor: "#1f2430"
    readonly property color accent: "#4f6bed"

    EngineController {
        id: engine
        onModelLoaded: {
            // The Models page shows what was opened: the pack a GGUF was converted to, with
            // the pack's size on disk.
            if (inspector.path !== engine.modelPath) inspector.load(engine.modelPath)
            // What was opened joins the library (the model given at start, then the pack
            // loaded, so the source links to it), once a session, quietly.
            const paths = []
            for (const p of [window.initialModel, engine.modelPath]) {
                if (p.length > 0 && !window.listedModels[p]) {
                    window.listedModels[p] = true
                    paths.push(p)
                }
            }
            if (paths.length > 0) libraryPage.library.addQuietly(paths)
        }
    }
    property var listedModels: ({})
    SettingsViewModel {
        id: settings
        engine: engine
        onApplied: function(engineChanged) { if (engineChanged) engine.reload() }
    }
    ChatViewModel {
        id: chat
        initialConversation: window.initialConversation
        engine: engine
        settings: settings
    }
    TelemetryViewModel {
        id: telemetry
        engine: engine
    }
    ModelInspector { id: inspector }
    BenchViewModel {
        id: bench
        engine: engine
    }

    // Ctrl+Q closes the studio (Cmd+Q on macOS, its Quit); Ctrl+N starts a new chat. Ctrl+Q
    // by name: StandardKey.Quit is no key at all where the platform has no Quit binding
    // (Windows, the offscreen platform of the tests).
    Shortcut {
        objectName: "quitShortcut"
        sequence: "Ctrl+Q"
        onActivated: window.close()
    }
    Shortcut {
        sequences: [StandardKey.New]
        onActivated: {
            chat.newConversation()
            rail.currentIndex = 0
        }
    }

    // Loading another model, applying settings that reload this one, or quitting stops a reply
    // being written: the studio asks first (ReplyStopGuard.qml).
    ReplyStopGuard {
        id: replyStopGuard
        chat: chat
    }
    onClosing: close => replyStopGuard.closeRequested(close, () => window.close())
    // Loads `path` (the Library's or the chat's choice), asking first while a reply is written.
    function openModel(path, then) {
        const name = path.split("/").filter(p => p.length > 0).pop() || path
        replyStopGuard.whenReplyStops(qsTr("Loading “%1” unloads the model writing it.").arg(name), qsTr("Load"), () => {
            inspector.load(path)
            engine.load(path, settings.values.convert_gguf)
            if (then) then()
        })
    }

    Component.onCompleted: {
        if (window.initialModel.length > 0) {
            inspector.load(window.initialModel)
            engine.load(window.initialModel, settings.values.convert_gguf)
        }
    }

    RowLayout {
        anchors.fill: parent
        spacing: 0

        // Navigation rail.
        Rectangle {
            Layout.fillHeight: true
            Layout.preferredWidth: 92
            color: window.railColor

            ColumnLayout {
                id: rail
                property int currentIndex: 0
                anchors.fill: parent
                anchors.topMargin: 14
                spacing: 6

                Label {
                    Layout.alignment: Qt.AlignHCenter
                    Layout.bottomMargin: 12
                    text: "MoE\nPack"
                    horizontalAlignment: Text.AlignHCenter
                    color: "white"
                    font.bold: true
                    font.pixelSize: 15
                }
                Repeater {
                    model: [
                        { glyph: "\u25A4", label: qsTr("Chat") },
                        { glyph: "\u2248", label: qsTr("Dashboard") },
                        { glyph: "\u25A6", label: qsTr("Models") },
                        { glyph: "\u2699", label: qsTr("Settings") },
                        { glyph: "\u25A3", label: qsTr("Library") },
                        { glyph: "\u25D4", label: qsTr("Benchmarks") }
                    ]
                    delegate: ItemDelegate {
                        id: navItem
                        required property int index
                        required property var modelData
                        Layout.fillWidth: true
                        Layout.leftMargin: 8
                        Layout.rightMargin: 8
                        implicitHeight: 62
                        objectName: "nav" + index
                        highlighted: rail.currentIndex === index
                        onClicked: rail.currentIndex = index
                        background: Rectangle {
                            radius: 10
                            color: navItem.highlighted ? window.accent
                                                       : (navItem.hovered ? "#2c3342" : "transparent")
                        }
                        contentItem: Column {
                            spacing: 2
                            Label {
                                anchors.horizontalCenter: parent.horizontalCenter
                                text: navItem.modelData.glyph
                                color: "white"
                                font.pixelSize: 20
                            }
                            Label {
                                anchors.horizontalCenter: parent.horizontalCenter
                                text: navItem.modelData.label
                                color: navItem.highlighted ? "white" : "#c5cad6"
                                font.pixelSize: 12
                            }
                        }
                    }
                }
                Item { Layout.fillHeight: true }
                // Engine status at the bottom of the rail.
                Rectangle {
                    Layout.alignment: Qt.AlignHCenter
                    Layout.bottomMargin: 4
                    width: 10; height: 10; radius: 5
                    readonly property bool benchmark: engine.held && engine.state !== EngineController.Ready
                    color: benchmark ? "#ffb300"
                         : engine.state === EngineController.Ready ? "#3ecf8e"
                         : engine.state === EngineController.Failed ? "#ef5350"
                         : engine.state === EngineController.Loading ? "#ffb300" : "#7a8191"
                }
                Label {
                    Layout.alignment: Qt.AlignHCenter
                    Layout.bottomMargin: 14
                    Layout.maximumWidth: 84
                    horizontalAlignment: Text.AlignHCenter
                    elide: Text.ElideRight
                    color: "#c5cad6"
                    font.pixelSize: 11
                    objectName: "engineStatus"
                    // A benchmark has the memory: the chat's model is unloaded until it ends.
                    text: engine.held && engine.state !== EngineController.Ready ? qsTr("Benchmark")
                        : engine.state === EngineController.Ready ? engine.backendName.toUpperCase()
                        : engine.state === EngineController.Loading ? qsTr("Loading")
                        : engine.state === EngineController.Failed ? qsTr("Error") : qsTr("No model")
                    // Why a model runs on the CPU under backend "auto" (the chat's banner says it too).
                    HoverHandler { id: engineStatusHover }
                    ToolTip.visible: engineStatusHover.hovered && engine.state === EngineController.Ready
                                     && engine.backendNote.length > 0
                    ToolTip.text: engine.backendNote
                }
            }
        }

        StackLayout {
            id: stack
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: rail.currentIndex

            ChatPage {
                chat: chat
                engine: engine
                onOpenSettings: rail.currentIndex = 3
                onOpenLibrary: rail.currentIndex = 4
                onOpenBenchmarks: rail.currentIndex = 5
                onOpenModel: path => window.openModel(path)
            }
            DashboardPage {
                telemetry: telemetry
                engine: engine
            }
            Item {
                ModelPage {
                    anchors.fill: parent
                    anchors.margins: 16
                    inspector: inspector
                }
            }
            SettingsPage {
                settings: settings
                engine: engine
                beforeReload: replyStopGuard.whenReplyStops
            }
            LibraryPage {
                id: libraryPage
                objectName: "libraryPage"
                settings: settings
                onOpenModel: path => window.openModel(path, () => { rail.currentIndex = 0 })
            }
            BenchmarksPage { bench: bench }
        }
    }
}
