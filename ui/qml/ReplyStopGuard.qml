import QtQuick
import QtQuick.Controls
import MoePack.Ui

// Asks before something stops the reply being written (loading another model, applying
// settings that reload this one, quitting). Its text so far is kept either way, as Stop keeps it
// (ChatViewModel). Declared inside the window, it opens over the window's overlay.
//   whenReplyStops(action, button, proceed): runs proceed() at once when no reply is being
//     written; otherwise opens, saying `action` (one sentence) with `button` as the accepting
//     button's text, and runs proceed() when that is chosen (Cancel: nothing happens).
//   closeRequested(close, quit): for the window's onClosing; refuses the close while a reply is
//     being written and asks, then calls quit() (which closes the window again) if so chosen.
Dialog {
    id: guard
    objectName: "stopReplyDialog"
    required property ChatViewModel chat
    property string action
    property string button
    property var proceed: null
    property bool quitConfirmed: false

    function whenReplyStops(action, button, proceed) {
        if (!guard.chat.replying) {
            proceed()
            return
        }
        guard.action = action
        guard.button = button
        guard.proceed = proceed
        guard.open()
    }
    function closeRequested(close, quit) {
        if (!guard.chat.replying || guard.quitConfirmed) return
        close.accepted = false
        guard.whenReplyStops(qsTr("Quitting closes the studio."), qsTr("Quit"), () => {
            guard.quitConfirmed = true
            quit()
        })
    }

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(520, (parent ? parent.width : 800) * 0.6)
    modal: true
    title: qsTr("Stop the reply being written?")
    // A plain white card: the style's own background (an elevation effect) is not drawn by the
    // software renderer (offscreen, virtual machines), leaving the text on the dimmed window.
    background: Rectangle { color: "white"; radius: 2; border.color: "#d1d5db" }
    onAccepted: {
        const f = guard.proceed
        guard.proceed = null
        if (f) f()
    }
    onRejected: guard.proceed = null
    Label {
        objectName: "stopReplyText"
        width: guard.availableWidth
        wrapMode: Text.Wrap
        text: guard.action + " " +
              qsTr("The reply being written in “%1” stops there; what it has written so far is kept.")
                  .arg(guard.chat.replyConversationTitle)
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
