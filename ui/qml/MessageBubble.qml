pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Controls.Material
import MoePack.Ui

// One message of the chat pane. User messages: a tinted bubble on the right, editable.
// Replies: Markdown (TextEdit.MarkdownText, code blocks included) on the left, with the
// per-reply statistics line and Copy / Regenerate actions.
Item {
    id: bubble
    required property int index
    required property string role
    required property string content
    required property bool streaming
    required property string error
    required property int promptTokens
    required property int generatedTokens
    required property double ttftMs
    required property double prefillTps
    required property double decodeTps
    required property string stopReason
    property bool isLast: false
    property bool busy: false
    // Whether a reply can be asked for now (a model loaded, no reply being written anywhere):
    // Regenerate and "Save and re-run" are disabled otherwise (the chat's banners say why).
    property bool canRun: true
    property int contentWidth: 760

    signal copyRequested()
    signal regenerateRequested()
    signal editRequested(string text)

    readonly property bool isUser: role === "user"
    property bool editing: false

    // `line` with the spaces of each " · "-separated part that holds a digit made non-breaking,
    // so a wrap falls between parts, never between a number and its unit.
    // A reply is untrusted text, and TextEdit fetches the images its Markdown names: outside code
    // (``` fences, `spans`) every image ("![alt](url)", with a title, or by reference
    // "![alt][ref]") becomes a link to it and an HTML <img> tag shows as text.
    function safeMarkdown(md) {
        const parts = md.split(/(```[\s\S]*?(?:```|$)|`[^`\n]*`)/)
        for (let i = 0; i < parts.length; i += 2)
            parts[i] = parts[i].replace(/!\[(?=[^\]\n]*\][(\[])/g, "[").replace(/<(img|image|picture|source)\b/gi, "&lt;$1")
        return parts.join("")
    }
    function keepTogether(line) {
        return line.split(" · ").map(p => /[0-9]/.test(p) ? p.replace(/ /g, "\u00a0") : p).join(" · ")
    }

    implicitHeight: column.implicitHeight + 18
    width: ListView.view ? ListView.view.width : 800

    HoverHandler { id: hover }

    ColumnLayout {
        id: column
        spacing: 4
        width: Math.min(bubble.contentWidth, bubble.width - 48)
        anchors.horizontalCenter: parent.horizontalCenter
        anchors.top: parent.top
        anchors.topMargin: 9

        Label {
            Layout.alignment: bubble.isUser ? Qt.AlignRight : Qt.AlignLeft
            text: bubble.isUser ? qsTr("You") : qsTr("Assistant")
            font.pixelSize: 12
            font.bold: true
            color: "#6b7280"
        }

        Rectangle {
            id: box
            Layout.alignment: bubble.isUser ? Qt.AlignRight : Qt.AlignLeft
            Layout.preferredWidth: bubble.editing ? column.width
                                 : Math.min(column.width, body.implicitWidth + 28)
            Layout.preferredHeight: (bubble.editing ? editor.implicitHeight + 52 : body.implicitHeight) + 20
            radius: 12
            color: bubble.isUser ? "#e8edff" : (bubble.error.length > 0 ? "#fdecea" : "#ffffff")
            border.color: bubble.isUser ? "#d3dcff" : "#e5e7eb"

            TextEdit {
                id: body
                objectName: "messageText"
                visible: !bubble.editing
                x: 14; y: 10
                width: Math.min(implicitWidth, column.width - 28)
                readOnly: true
                selectByMouse: true
                wrapMode: TextEdit.Wrap
                // An error is plain text (a path's underscores are no emphasis).
                textFormat: bubble.isUser || bubble.error.length > 0 ? TextEdit.PlainText : TextEdit.MarkdownText
                font.pixelSize: 14
                color: "#111827"
                selectionColor: "#bfd0ff"
                // A reply's images ("![alt](url)") show as links: the text never fetches anything.
                text: bubble.error.length > 0
                      ? qsTr("The reply failed: %1").arg(bubble.error)
                      : (bubble.content.length > 0 ? (bubble.isUser ? bubble.content : bubble.safeMarkdown(bubble.content))
                                                   : (bubble.streaming ? "\u2026" : ""))
                // A model's reply is untrusted text: only web links open, in the browser (never
                // file:, smb:, ...).
                onLinkActivated: function(link) {
                    if (/^https?:\/\//i.test(link)) Qt.openUrlExternally(link)
                }
                // Clicked into (to select and copy), the text keeps Copy and Select All only:
                // Ctrl+N, Ctrl+Q and the window's other shortcuts still work.
                ShortcutPassThrough { target: body }
            }

            ColumnLayout {
                visible: bubble.editing
                anchors.fill: parent
                anchors.margins: 10
                TextArea {
                    id: editor
                    Layout.fillWidth: true
                    wrapMode: TextEdit.Wrap
                    font.pixelSize: 14
                }
                RowLayout {
                    Layout.alignment: Qt.AlignRight
                    Button {
                        text: qsTr("Cancel")
                        flat: true
                        onClicked: bubble.editing = false
                    }
                    Button {
                        text: qsTr("Save and re-run")
                        highlighted: true
                        Material.elevation: 0
                        enabled: !bubble.busy && bubble.canRun && editor.text.trim().length > 0
                        onClicked: {
                            bubble.editing = false
                            bubble.editRequested(editor.text)
                        }
                    }
                }
            }
        }

        // Statistics of a reply, then the actions.
        // Never wider than the column: a long statistics line wraps, and the actions stay on it.
        RowLayout {
            objectName: "replyActions"
            Layout.alignment: bubble.isUser ? Qt.AlignRight : Qt.AlignLeft
            Layout.fillWidth: false  // as wide as its content, up to the column
            Layout.maximumWidth: column.width
            spacing: 2
            Label {
                visible: !bubble.isUser && !bubble.streaming && bubble.generatedTokens > 0
                objectName: "replyStats"
                Layout.fillWidth: visible
                Layout.maximumWidth: implicitWidth
                wrapMode: Text.Wrap
                // The decode rate needs two tokens: a reply stopped after its first has none.
                // The line wraps only between its " · " parts: within a part holding a number,
                // spaces are non-breaking ("12.5 tok/s" stays on one line).
                text: bubble.keepTogether(qsTr("%n prompt token(s)", "", bubble.promptTokens)
                      + qsTr(" · %n token(s)", "", bubble.generatedTokens)
                      + qsTr(" · first token %1 ms · prefill %2 tok/s")
                        .arg(bubble.ttftMs.toFixed(0)).arg(bubble.prefillTps.toFixed(1))
                      + (bubble.generatedTokens >= 2 ? qsTr(" · decode %1 tok/s").arg(bubble.decodeTps.toFixed(1)) : "")
                      + (bubble.stopReason === "cancelled" ? qsTr(" · stopped")
                         : bubble.stopReason === "length" ? qsTr(" · length limit")
                         : bubble.stopReason === "context" ? qsTr(" · context full: start a new chat or raise the context length in Settings")
                         : ""))
                font.pixelSize: 11
                color: "#6b7280"
            }
            // A pulsing dot while the reply streams (it also keeps frames coming, so the
            // frame-pacing measurement sees stalls rather than idle time).
            Rectangle {
                visible: bubble.streaming
                width: 8; height: 8; radius: 4
                color: "#4f6bed"
                SequentialAnimation on opacity {
                    running: bubble.streaming
                    loops: Animation.Infinite
                    NumberAnimation { from: 1; to: 0.2; duration: 450; easing.type: Easing.InOutQuad }
                    NumberAnimation { from: 0.2; to: 1; duration: 450; easing.type: Easing.InOutQuad }
                }
            }
            Label {
                visible: bubble.streaming
                text: qsTr("generating…")
                font.pixelSize: 11
                color: "#4f6bed"
            }
            ToolButton {
                implicitHeight: 28
                font.capitalization: Font.MixedCase
                visible: !bubble.streaming && !bubble.editing
                opacity: hover.hovered ? 1 : 0.35
                id: copyButton
                property bool copied: false
                text: copyButton.copied ? qsTr("Copied") : qsTr("Copy")
                font.pixelSize: 11
                onClicked: {
                    bubble.copyRequested()
                    copyButton.copied = true  // for 1.5 s: the click did something
                    copiedTimer.restart()
                }
                Timer {
                    id: copiedTimer
                    interval: 1500
                    onTriggered: copyButton.copied = false
                }
            }
            ToolButton {
                implicitHeight: 28
                font.capitalization: Font.MixedCase
                visible: bubble.isUser && !bubble.editing && !bubble.busy
                opacity: hover.hovered ? 1 : 0.35
                text: qsTr("Edit")
                font.pixelSize: 11
                onClicked: {
                    editor.text = bubble.content
                    bubble.editing = true
                    editor.forceActiveFocus()
                }
            }
            ToolButton {
                implicitHeight: 28
                font.capitalization: Font.MixedCase
                objectName: "regenerateButton"
                visible: !bubble.isUser && bubble.isLast && !bubble.busy
                enabled: bubble.canRun
                opacity: !enabled ? 0.25 : (hover.hovered ? 1 : 0.35)
                text: qsTr("Regenerate")
                font.pixelSize: 11
                onClicked: bubble.regenerateRequested()
            }
        }
    }
}
