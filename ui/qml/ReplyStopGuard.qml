import QtQuick
import QtQuick.Controls
import MoePack.Ui

// Asks before something stops the reply being written (loading another model, applying
// settings that reload this one, quitting). Its text so far is kept either way, as Stop keeps it
// (ChatViewModel). Declared inside the window, it opens over the window's overlay.
//   whenReplyStops(action, button, proceed): runs proceed() at once when no reply is being
//     written; otherwise opens, saying `action` (one sentence) with `button` as the accepting
//     button's text, and runs proceed() when that is chosen (Cancel, Escape or a click outside:
//     nothing happens). If the reply ends while it is open, proceed() runs then (nothing is left
//     to stop). A request while it is open is ignored: the open question stays as asked.
//   closeRequested(close, quit): for the window's onClosing; refuses the close while a reply is
//     being written (or while it is open) and asks, then calls quit() (which closes the window
//     again) if so chosen.
Dialog {
    id: guard
    objectName: "stopReplyDialog"
    required property ChatViewModel chat
    property string action
    property string button
    property string replyTitle  // the conversation written into, when it opened
    property var proceed: null
    property bool asking: false  // from open to the answer (visible also through the closing transition)
    property bool quitConfirmed: false

    function whenReplyStops(action, button, proceed) {
        if (guard.asking) return
        if (!guard.chat.replying) {
            proceed()
            return
        }
        guard.action = action
        guard.button = button
        guard.replyTitle = guard.chat.replyConversationTitle
        guard.proceed = proceed
        guard.asking = true
        guard.open()
    }
    function closeRequested(close, quit) {
        if (guard.quitConfirmed || (!guard.chat.replying && !guard.asking)) return
        close.accepted = false
        guard.whenReplyStops(qsTr("Quitting closes the studio."), qsTr("Quit"), () => {
            guard.quitConfirmed = true
            quit()
            guard.quitConfirmed = false  // (the window closed; were it refused, the next close asks again)
        })
    }
    Connections {
        target: guard.chat
        function onGeneratingChanged() {
            if (guard.asking && !guard.chat.replying) guard.accept()
        }
    }

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(520, (parent ? parent.width : 800) * 0.6)
    modal: true
    title: qsTr("Stop the reply being written?")
    // A plain white card: the style's own background (an elevation effect) is not drawn by the
    // software renderer (offscreen, virtual machines), leaving the text on the dimmed window.
    background: Rectangle { color: "white"; radius: 2 }
    // The question answered, however: what to run, if anything, and nothing asked any more.
    function answered() {
        const f = guard.proceed
        guard.proceed = null
        guard.asking = false
        return f
    }
    onAccepted: {
        const f = guard.answered()
        if (f) f()
    }
    onRejected: guard.answered()
    // However it closed (unless opened again, by a new question, before its exit transition ended).
    onClosed: if (!guard.visible) guard.answered()
    Label {
        objectName: "stopReplyText"
        width: guard.availableWidth
        wrapMode: Text.Wrap
        // One sentence of the caller's, then this one (one string: languages join them their way),
        // filled in one pass (a "%2" in a model's or a conversation's name stays as it is).
        text: qsTr("%1 The reply being written in “%2” stops there; what it has written so far is kept.")
                  .replace(/%([12])/g, (m, n) => n === "1" ? guard.action : guard.replyTitle)
    }
    // Buttons of its own, their texts bound (a standard button's text is reset when the language
    // changes).
    footer: DialogButtonBox {
        Button {
            objectName: "stopReplyAcceptButton"
            text: guard.button
            font.capitalization: Font.MixedCase
            DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
        }
        Button {
            objectName: "stopReplyCancelButton"
            text: qsTr("Cancel")
            font.capitalization: Font.MixedCase
            DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
        }
    }
}
