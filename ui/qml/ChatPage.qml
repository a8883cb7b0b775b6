pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import MoePack.Ui

// The chat screen: conversations on the left, the open conversation in the middle, its system
// prompt and sampling settings in a panel on the right. Every change goes through ChatViewModel
// commands.
Item {
    id: page
    required property ChatViewModel chat
    required property EngineController engine
    signal openSettings()
    signal openLibrary()
    signal openBenchmarks()
    signal openModel(string path)

    property bool showOptions: false
    // A benchmark has the memory: the chat's model is unloaded (or its load waits) until it ends.
    readonly property bool benchmarkHolds: engine.held && (engine.state === EngineController.Empty
                                                            || engine.state === EngineController.Loading)
    // A model's name as the chat shows it: the file or pack folder name.
    function modelName(path) {
        const p = String(path).replace(/\/+$/, "")
        return p.substring(p.lastIndexOf("/") + 1)
    }

    // A filled accent button drawn without the style's elevation shader (so it also renders
    // with the software scene graph).
    component AccentButton: Button {
        id: accentButton
        font.capitalization: Font.MixedCase
        implicitHeight: 38
        contentItem: Label {
            text: accentButton.text
            color: "white"
            font.bold: true
            horizontalAlignment: Text.AlignHCenter
            verticalAlignment: Text.AlignVCenter
        }
        background: Rectangle {
            radius: 9
            color: !accentButton.enabled ? "#c7cbe0" : (accentButton.down ? "#3b55d1" : (accentButton.hovered ? "#5f79f0" : "#4f6bed"))
        }
    }
    component PlainToolButton: ToolButton {
        font.capitalization: Font.MixedCase
        font.pixelSize: 13
    }

    RowLayout {
        anchors.fill: parent
        spacing: 0

        // --- Conversation list -------------------------------------------------------------
        // Steps aside while the options are open on a window too narrow for the list, the chat
        // (at least 480 px) and the options side by side.
        Rectangle {
            objectName: "conversationPane"
            visible: !page.showOptions || page.width >= 264 + 480 + 300
            Layout.fillHeight: true
            Layout.preferredWidth: 264
            color: "#f3f4f8"
            border.color: "#e5e7eb"

            ColumnLayout {
                anchors.fill: parent
                anchors.margins: 12
                spacing: 8

                AccentButton {
                    objectName: "newChat"
                    Layout.fillWidth: true
                    text: qsTr("+ New chat")
                    onClicked: page.chat.newConversation()
                }
                Label {
                    text: qsTr("Conversations")
                    color: "#6b7280"
                    font.pixelSize: 12
                    Layout.topMargin: 6
                }
                ListView {
                    id: conversationList
                    Layout.fillWidth: true
                    Layout.fillHeight: true
                    clip: true
                    spacing: 2
                    model: page.chat.conversations
                    ScrollBar.vertical: ScrollBar {}
                    delegate: ItemDelegate {
                        id: convItem
                        required property var conversationId
                        required property string title
                        required property var updated
                        width: ListView.view.width
                        highlighted: conversationId === page.chat.currentConversationId
                        onClicked: page.chat.selectConversation(conversationId)
                        background: Rectangle {
                            radius: 8
                            color: convItem.highlighted ? "#dfe5ff" : (convItem.hovered ? "#e9ebf2" : "transparent")
                        }
                        contentItem: RowLayout {
                            spacing: 4
                            ColumnLayout {
                                Layout.fillWidth: true
                                spacing: 1
                                Label {
                                    Layout.fillWidth: true
                                    text: convItem.title
                                    textFormat: Text.PlainText  // a title is the user's text, not markup
                                    elide: Text.ElideRight
                                    font.pixelSize: 13
                                    color: "#111827"
                                }
                                Label {
                                    Layout.fillWidth: true
                                    // The conversation a reply is being written into says so.
                                    readonly property bool writing: convItem.conversationId === page.chat.replyConversationId
                                    objectName: writing ? "conversationWriting" : ""
                                    text: writing ? qsTr("writing a reply…")
                                                  : Qt.formatDateTime(convItem.updated, Qt.DefaultLocaleShortDate)
                                    font.pixelSize: 11
                                    color: writing ? "#4f6bed" : "#6b7280"
                                }
                            }
                            // Rename / delete, also on right click.
                            ToolButton {
                                implicitWidth: 28
                                implicitHeight: 28
                                visible: convItem.hovered || convItem.highlighted
                                text: "\u22EF"
                                font.pixelSize: 16
                                onClicked: conversationMenu.openFor(convItem.conversationId, convItem.title)
                            }
                        }
                        TapHandler {
                            acceptedButtons: Qt.RightButton
                            onTapped: conversationMenu.openFor(convItem.conversationId, convItem.title)
                        }
                    }
                }
                Label {
                    Layout.fillWidth: true
                    visible: conversationList.count === 0
                    wrapMode: Text.Wrap
                    color: "#9ca3af"
                    font.pixelSize: 12
                    text: qsTr("Your conversations appear here.")
                }
            }
        }

        // --- Chat pane ---------------------------------------------------------------------
        Item {
            Layout.fillWidth: true
            Layout.fillHeight: true

            ColumnLayout {
                anchors.fill: parent
                spacing: 0

                // Title bar.
                Rectangle {
                    Layout.fillWidth: true
                    Layout.preferredHeight: 56
                    color: "white"
                    border.color: "#e5e7eb"
                    RowLayout {
                        anchors.fill: parent
                        anchors.leftMargin: 20
                        anchors.rightMargin: 12
                        ColumnLayout {
                            spacing: 0
                            Layout.fillWidth: true
                            Label {
                                Layout.fillWidth: true
                                text: page.chat.title.length > 0 ? page.chat.title : qsTr("New chat")
                                textFormat: Text.PlainText
                                font.pixelSize: 16
                                font.bold: true
                                elide: Text.ElideRight
                            }
                            Label {
                                Layout.fillWidth: true
                                textFormat: Text.PlainText
                                objectName: "chatModelLine"
                                text: page.benchmarkHolds
                                      ? qsTr("Benchmark running on %1").arg(page.modelName(page.engine.benchmarkModel))
                                      : page.engine.modelName.length > 0
                                      ? qsTr("%1 · %2 backend").arg(page.engine.modelName).arg(page.engine.backendName)
                                      : ""
                                font.pixelSize: 12
                                color: "#6b7280"
                                elide: Text.ElideRight
                            }
                        }
                        PlainToolButton {
                            text: qsTr("Rename")
                            enabled: page.chat.currentConversationId !== 0
                            onClicked: conversationMenu.openRename(page.chat.currentConversationId, page.chat.title)
                        }
                        PlainToolButton {
                            text: qsTr("Export")
                            enabled: page.chat.currentConversationId !== 0
                            onClicked: exportDialog.openSuggesting(page.chat.suggestedExportFile("md"))
                        }
                        PlainToolButton {
                            objectName: "optionsButton"
                            text: qsTr("Options")
                            checkable: true
                            checked: page.showOptions
                            onClicked: page.showOptions = !page.showOptions
                        }
                    }
                }

                Rectangle {
                    objectName: "noModelBanner"
                    Layout.fillWidth: true
                    Layout.leftMargin: 16
                    Layout.rightMargin: 16
                    Layout.topMargin: 8
                    implicitHeight: bannerRow.implicitHeight + 16
                    radius: 8
                    color: "#fef2f2"
                    border.color: "#fecaca"
                    visible: messageList.count > 0 && !page.benchmarkHolds
                             && (page.engine.state === EngineController.Failed || page.engine.state === EngineController.Empty)
                    RowLayout {
                        id: bannerRow
                        anchors.fill: parent
                        anchors.margins: 8
                        Label {
                            Layout.fillWidth: true
                            wrapMode: Text.Wrap
                            color: "#991b1b"
                            text: page.engine.state === EngineController.Failed
                                  ? qsTr("No model is loaded, so this conversation cannot continue: %1").arg(page.engine.error)
                                  : qsTr("No model is loaded: open one from the Library to continue this conversation.")
                        }
                        // The model this conversation was held with, when it is not the one that
                        // failed (Reload retries that one) and is still there.
                        Button {
                            objectName: "bannerLoadConversationModel"
                            visible: page.chat.offerConversationModel
                            text: qsTr("Load %1").arg(page.modelName(page.chat.conversationModelPath))
                            onClicked: page.openModel(page.chat.conversationModelPath)
                        }
                        Button {
                            objectName: "bannerReload"
                            visible: page.engine.state === EngineController.Failed
                            text: qsTr("Reload")
                            onClicked: page.engine.reload()
                        }
                        Button {
                            objectName: "bannerSettings"
                            visible: page.engine.state === EngineController.Failed
                            text: qsTr("Settings")
                            onClicked: page.openSettings()
                        }
                        Button {
                            objectName: "bannerLibrary"
                            text: qsTr("Library")
                            onClicked: page.openLibrary()
                        }
                    }
                }

                // A benchmark has the model: the conversation stays readable (and exportable) and
                // goes on when the benchmark has finished.
                Rectangle {
                    objectName: "benchmarkBanner"
                    Layout.fillWidth: true
                    Layout.leftMargin: 16
                    Layout.rightMargin: 16
                    Layout.topMargin: 8
                    implicitHeight: benchmarkRow.implicitHeight + 16
                    radius: 8
                    color: "#eef2ff"
                    border.color: "#c7d2fe"
                    visible: messageList.count > 0 && page.benchmarkHolds
                    RowLayout {
                        id: benchmarkRow
                        anchors.fill: parent
                        anchors.margins: 8
                        Label {
                            objectName: "benchmarkBannerText"
                            Layout.fillWidth: true
                            wrapMode: Text.Wrap
                            textFormat: Text.PlainText
                            color: "#3730a3"
                            text: qsTr("A benchmark is using the model (%1). This conversation can be read and exported; it goes on when the benchmark has finished.")
                                  .arg(page.modelName(page.engine.benchmarkModel))
                        }
                        Button {
                            objectName: "bannerBenchmarks"
                            text: qsTr("Benchmarks")
                            onClicked: page.openBenchmarks()
                        }
                    }
                }

                // `auto` passed over the GPU backend (a GPU it cannot run on, a build without code for it):
                // say why the model runs on the CPU, until dismissed (kept across starts; a different
                // reason shows again).
                Rectangle {
                    objectName: "backendNoteBanner"
                    Layout.fillWidth: true
                    Layout.leftMargin: 16
                    Layout.rightMargin: 16
                    Layout.topMargin: 8
                    implicitHeight: backendNoteRow.implicitHeight + 16
                    radius: 8
                    color: "#fffbeb"
                    border.color: "#fcd34d"
                    visible: page.engine.state === EngineController.Ready && page.engine.backendNoteShown
                    RowLayout {
                        id: backendNoteRow
                        anchors.fill: parent
                        anchors.margins: 8
                        Label {
                            objectName: "backendNoteText"
                            Layout.fillWidth: true
                            wrapMode: Text.Wrap
                            textFormat: Text.PlainText
                            color: "#92400e"
                            text: qsTr("Running on the CPU, not the GPU: %1").arg(page.engine.backendNote)
                        }
                        Button {
                            objectName: "backendNoteDismiss"
                            text: qsTr("Dismiss")
                            onClicked: page.engine.dismissBackendNote()
                        }
                    }
                }

                // An old conversation opened while another model is loaded: its next reply would
                // come from that model. Say so, and offer the conversation's own model.
                Rectangle {
                    objectName: "otherModelBanner"
                    Layout.fillWidth: true
                    Layout.leftMargin: 16
                    Layout.rightMargin: 16
                    Layout.topMargin: 8
                    implicitHeight: otherModelRow.implicitHeight + 16
                    radius: 8
                    color: "#fffbeb"
                    border.color: "#fde68a"
                    visible: page.chat.otherModelLoaded && !page.chat.generating
                    RowLayout {
                        id: otherModelRow
                        anchors.fill: parent
                        anchors.margins: 8
                        Label {
                            Layout.fillWidth: true
                            wrapMode: Text.Wrap
                            textFormat: Text.PlainText
                            color: "#92400e"
                            text: (page.chat.conversationModelAvailable
                                   ? qsTr("This conversation was held with %1; its next reply will come from %2.")
                                   : qsTr("This conversation was held with %1, which is no longer on disk; its next reply will come from %2."))
                                  .arg(page.modelName(page.chat.conversationModelPath))
                                  .arg(page.modelName(page.engine.modelPath))
                        }
                        Button {
                            objectName: "loadConversationModel"
                            visible: page.chat.conversationModelAvailable
                            text: qsTr("Load %1").arg(page.modelName(page.chat.conversationModelPath))
                            onClicked: page.openModel(page.chat.conversationModelPath)
                        }
                    }
                }

                ListView {
                    id: messageList
                    objectName: "messageList"
                    Layout.fillWidth: true
                    Layout.fillHeight: true
                    clip: true
                    model: page.chat.messages
                    topMargin: 12
                    bottomMargin: 12
                    ScrollBar.vertical: ScrollBar {}
                    // Keep the newest text in view while a reply streams, and once more when it
                    // ends (its statistics line appears after the last token).
                    onCountChanged: Qt.callLater(positionViewAtEnd)
                    onContentHeightChanged: if (page.chat.generating) Qt.callLater(positionViewAtEnd)
                    Timer {
                        id: afterReply
                        interval: 50
                        onTriggered: messageList.positionViewAtEnd()
                    }
                    Connections {
                        target: page.chat
                        function onReplyFinished() { afterReply.restart() }
                    }
                    delegate: MessageBubble {
                        isLast: index === messageList.count - 1
                        busy: page.chat.generating
                        canRun: page.chat.canSend
                        onCopyRequested: page.chat.copyMessage(index)
                        onRegenerateRequested: page.chat.regenerate()
                        onEditRequested: function(text) { page.chat.editMessage(index, text) }
                    }

                    Label {
                        anchors.centerIn: parent
                        visible: messageList.count === 0 && page.engine.state === EngineController.Ready
                        horizontalAlignment: Text.AlignHCenter
                        color: "#9ca3af"
                        font.pixelSize: 15
                        text: qsTr("Ask something, for example:\nWhat does \"salmon\" mean?")
                    }
                }

                Label {
                    Layout.fillWidth: true
                    Layout.leftMargin: 20
                    objectName: "chatError"
                    // A failed reply's error is in its bubble already.
                    visible: page.chat.lastError.length > 0 && !page.chat.lastErrorInReply
                    text: page.chat.lastError
                    color: "#b91c1c"
                    wrapMode: Text.Wrap
                }

                // A reply being written into another conversation (one engine): this one waits
                // for it; say where it is, with a way there and a way to stop it.
                Rectangle {
                    objectName: "replyElsewhereBanner"
                    Layout.fillWidth: true
                    Layout.leftMargin: 16
                    Layout.rightMargin: 16
                    Layout.topMargin: 8
                    implicitHeight: elsewhereRow.implicitHeight + 16
                    radius: 8
                    color: "#eef2ff"
                    border.color: "#c7d2fe"
                    visible: page.chat.replyElsewhere
                    RowLayout {
                        id: elsewhereRow
                        anchors.fill: parent
                        anchors.margins: 8
                        Label {
                            objectName: "replyElsewhereText"
                            Layout.fillWidth: true
                            wrapMode: Text.Wrap
                            textFormat: Text.PlainText
                            color: "#3730a3"
                            text: qsTr("A reply is being written in “%1”. You can send here when it has finished, or stop it.")
                                  .arg(page.chat.replyConversationTitle)
                        }
                        Button {
                            objectName: "showReplyConversation"
                            visible: page.chat.replyConversationId !== 0
                            text: qsTr("Show it")
                            onClicked: page.chat.selectConversation(page.chat.replyConversationId)
                        }
                        Button {
                            objectName: "stopReplyElsewhere"
                            text: qsTr("Stop it")
                            onClicked: page.chat.stop()
                        }
                    }
                }

                // Input box: Enter sends, Shift+Enter inserts a newline.
                Rectangle {
                    Layout.fillWidth: true
                    Layout.preferredHeight: Math.min(220, input.implicitHeight + 28)
                    Layout.margins: 16
                    radius: 14
                    color: "white"
                    border.color: input.activeFocus ? "#4f6bed" : "#d1d5db"

                    RowLayout {
                        anchors.fill: parent
                        anchors.margins: 8
                        ScrollView {
                            Layout.fillWidth: true
                            Layout.fillHeight: true
                            TextArea {
                                id: input
                                objectName: "input"
                                placeholderText: qsTr("Message the model (Enter to send, Shift+Enter for a new line)")
                                wrapMode: TextEdit.Wrap
                                font.pixelSize: 14
                                background: null
                                Keys.onPressed: function(event) {
                                    if ((event.key === Qt.Key_Return || event.key === Qt.Key_Enter)
                                            && !(event.modifiers & Qt.ShiftModifier)) {
                                        event.accepted = true
                                        if (page.chat.send(input.text)) input.clear()
                                    }
                                }
                            }
                        }
                        AccentButton {
                            objectName: "sendButton"
                            Layout.alignment: Qt.AlignBottom
                            visible: !page.chat.generating
                            text: qsTr("Send")
                            enabled: page.chat.canSend && input.text.trim().length > 0
                            onClicked: if (page.chat.send(input.text)) input.clear()
                        }
                        AccentButton {
                            objectName: "stopButton"
                            Layout.alignment: Qt.AlignBottom
                            visible: page.chat.generating
                            text: qsTr("Stop")
                            onClicked: page.chat.stop()
                        }
                    }
                }
            }

            // Loading, a lost GPU, or nothing to read: the panel covers the chat. A conversation
            // with messages stays readable (and exportable) without a model: a banner says why
            // it cannot continue.
            FirstRunPanel {
                anchors.fill: parent
                objectName: "chatPanel"
                visible: page.engine.state !== EngineController.Ready
                         && ((page.engine.state === EngineController.Loading && !page.benchmarkHolds)
                             || page.engine.state === EngineController.DeviceLost || messageList.count === 0)
                engine: page.engine
                conversationId: page.chat.currentConversationId
                onOpenSettings: page.openSettings()
            }
        }

        // --- Conversation options -------------------------------------------------------------
        Rectangle {
            Layout.fillHeight: true
            Layout.preferredWidth: 300
            visible: page.showOptions
            color: "#fafbfc"
            border.color: "#e5e7eb"

            ScrollView {
                anchors.fill: parent
                anchors.margins: 14
                contentWidth: availableWidth
                ColumnLayout {
                    width: parent.width
                    spacing: 8
                    Label { text: qsTr("System prompt"); font.bold: true }
                    TextArea {
                        Layout.fillWidth: true
                        Layout.preferredHeight: 96
                        wrapMode: TextEdit.Wrap
                        placeholderText: qsTr("Optional instructions for the model")
                        text: page.chat.systemPrompt
                        onEditingFinished: page.chat.setSystemPrompt(text)
                        background: Rectangle { border.color: "#d1d5db"; radius: 6 }
                    }
                    Label { text: qsTr("Sampling"); font.bold: true; Layout.topMargin: 8 }
                    Repeater {
                        model: [
                            { key: "temperature", label: qsTr("Temperature (0 = greedy)") },
                            { key: "top_p", label: qsTr("Top-p") },
                            { key: "top_k", label: qsTr("Top-k (0 = off)") },
                            { key: "min_p", label: qsTr("Min-p") },
                            { key: "repeat_penalty", label: qsTr("Repetition penalty") },
                            { key: "max_tokens", label: qsTr("Max tokens") },
                            { key: "seed", label: qsTr("Seed (-1 = random)") }
                        ]
                        delegate: RowLayout {
                            id: field
                            required property var modelData
                            Layout.fillWidth: true
                            Label {
                                Layout.fillWidth: true
                                text: field.modelData.label
                                font.pixelSize: 13
                            }
                            TextField {
                                Layout.preferredWidth: 90
                                horizontalAlignment: Text.AlignRight
                                text: String(page.chat.sampling[field.modelData.key])
                                // Plain C-locale numbers ("0.7", "-1"): what Number() reads in every locale.
                                validator: RegularExpressionValidator { regularExpression: /-?([0-9]+\.?[0-9]*|\.[0-9]+)/ }
                                onEditingFinished: page.chat.setSamplingValue(field.modelData.key, Number(text))
                            }
                        }
                    }
                    Button {
                        text: qsTr("Reset to defaults")
                        flat: true
                        onClicked: page.chat.resetSampling()
                    }
                }
            }
        }
    }

    // Rename / delete menu of a conversation.
    Menu {
        id: conversationMenu
        objectName: "conversationMenu"
        property var targetId: 0
        property string targetTitle: ""
        function openFor(id, title) { targetId = id; targetTitle = title; popup() }
        function openRename(id, title) { targetId = id; targetTitle = title; renameDialog.open() }
        MenuItem { text: qsTr("Rename…"); onTriggered: renameDialog.open() }
        MenuItem { text: qsTr("Delete…"); onTriggered: deleteDialog.open() }
    }

    // Deleting a conversation cannot be undone: ask first.
    // Its width is its own, bounded, never its content's: sized from a long title it spanned the
    // window with the title cut (its "?" lost), and its content following it was a binding loop.
    // The title wraps, a very long name elided in the middle, so the question mark always shows.
    Dialog {
        id: deleteDialog
        objectName: "deleteConversationDialog"
        title: qsTr("Delete “%1”?").arg(deleteTitleMetrics.elidedText)
        anchors.centerIn: parent
        width: Math.min(480, page.width * 0.6)
        modal: true
        // A plain white card (ReplyStopGuard.qml says why).
        background: Rectangle { color: "white"; radius: 2 }
        onAccepted: page.chat.deleteConversation(conversationMenu.targetId)
        TextMetrics {
            id: deleteTitleMetrics
            font: deleteTitle.font
            text: conversationMenu.targetTitle
            elide: Text.ElideMiddle
            // At most two lines of the name: with "Delete “…”?" the title stays within three.
            elideWidth: 2 * Math.max(0, deleteTitle.width - deleteTitle.leftPadding - deleteTitle.rightPadding) - 40
        }
        header: Label {
            id: deleteTitle
            objectName: "deleteConversationTitle"
            text: deleteDialog.title
            wrapMode: Text.WrapAtWordBoundaryOrAnywhere
            padding: 24
            bottomPadding: 0
            font.bold: true
            font.pixelSize: 16
            // Its own background, as the style's title has (the light theme's dialog colour).
            background: Rectangle { color: "white"; radius: 2 }
        }
        Label {
            width: deleteDialog.availableWidth
            wrapMode: Text.Wrap
            text: qsTr("Its messages are deleted for good.")
        }
        // Buttons of its own, their texts bound: a standard button's text set once is reset to
        // "OK" when the language changes.
        footer: DialogButtonBox {
            Button {
                objectName: "deleteConversationButton"
                text: qsTr("Delete")
                DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
            }
            Button {
                text: qsTr("Cancel")
                DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
            }
        }
    }

    Dialog {
        id: renameDialog
        title: qsTr("Rename conversation")
        anchors.centerIn: parent
        modal: true
        standardButtons: Dialog.Ok | Dialog.Cancel
        onAboutToShow: renameField.text = conversationMenu.targetTitle
        // Typing goes to the name at once, its text selected.
        onOpened: {
            renameField.forceActiveFocus()
            renameField.selectAll()
        }
        onAccepted: page.chat.renameConversation(conversationMenu.targetId, renameField.text)
        TextField {
            id: renameField
            implicitWidth: 320
            onAccepted: renameDialog.accept()
        }
    }

    // The desktop's own save dialog (SaveFileDialog.qml says why not Qt 6.4's QML-drawn one).
    SaveFileDialog {
        id: exportDialog
        objectName: "chatExportDialog"
        title: qsTr("Export conversation")
        // Suggests the conversation's title in the documents folder.
        nameFilters: [qsTr("Markdown (*.md)"), qsTr("JSON (*.json)")]
        onAccepted: {
            // The name's own suffix decides the format; a name without one gets the chosen filter's.
            let url = file.toString()
            const json = /\.json$/i.test(url) || (!/\.md$/i.test(url) && selectedNameFilter.index === 1)
            if (url.substring(url.lastIndexOf("/") + 1).indexOf(".") < 0) url += json ? ".json" : ".md"
            const err = page.chat.exportConversation(url, json ? "json" : "md")
            exportNote.text = err.length > 0 ? qsTr("Export failed: %1").arg(err)
                                             : qsTr("Exported to %1").arg(decodeURIComponent(url.replace(/^file:\/\//, "")))
            exportNote.open()
        }
    }
    ToolTip {
        id: exportNote
        objectName: "chatExportNote"
        x: (page.width - width) / 2
        y: page.height - height - 96
        timeout: 4000
    }
}
