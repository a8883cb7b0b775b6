// Convert wizard: source -> space -> options -> progress -> verify -> done (ConvertWizard).
import QtQuick
import QtQuick.Controls
import Qt.labs.platform as Platform
import QtQuick.Layouts
import MoePack.Ui
import "buildphases.js" as BuildPhases

Pane {
    id: page
    property string initialSource: ""
    property ConvertWizard wizard: ConvertWizard {}
    signal chatNow(string packDir)
    // Two decimals, as the plan below writes sizes ("21.59 MiB"): the same number reads the same.
    function bytes(b) {
        const units = ["B", "KiB", "MiB", "GiB", "TiB"]
        let i = 0
        while (b >= 1024 && i < units.length - 1) { b /= 1024; ++i }
        return b.toFixed(i > 0 ? 2 : 0) + " " + units[i]
    }
    onInitialSourceChanged: if (initialSource.length > 0) wizard.chooseSource(initialSource)

    // The pack goes into a folder of its own inside the chosen one, named after the source
    // ("<model>-pack", as a download converted when done): its three files never mix with
    // what the chosen folder already holds. A split set's shard suffix is dropped.
    function chooseFolder(folder) { page.wizard.chooseOutput(page.wizard.packFolderIn(folder)) }

    // Qt Labs Platform dialogs: the platform's own where there is one, else Qt Widgets'
    // QFileDialog (the studio is a QApplication). Qt 6.4's QML-drawn dialog joined a typed full
    // path to its current folder ("/work//tmp/x.md"), kept Save disabled until Enter, and chose
    // the highlighted child of a folder.
    Platform.FolderDialog {
        id: outDialog
        objectName: "convertOutputDialog"
        title: qsTr("Folder for the Expert Pack")
        onAccepted: page.chooseFolder(outDialog.folder)
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 10
        Label {
            font.bold: true
            text: [qsTr("1. Source"), qsTr("2. Space"), qsTr("3. Options"), qsTr("4. Converting"),
                   qsTr("5. Verifying"), qsTr("Done"), qsTr("Failed")][page.wizard.step]
        }
        Label { text: page.wizard.source; elide: Text.ElideMiddle; Layout.fillWidth: true }
        Label {
            visible: page.wizard.step >= ConvertWizard.Space
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            // The pack's size is the plan's, the same in every step; the free space the build
            // needs is the builder's count for the chosen folder (its manifest, what is already
            // there), so the two are not added up here.
            objectName: "convertSpaceText"
            text: qsTr("The pack's files take %1. The build needs %2 free, a safety margin of %3 included.")
                  .arg(page.bytes(page.wizard.packBytes))
                  .arg(page.bytes(page.wizard.neededBytes))
                  .arg(page.bytes(page.wizard.safetyMarginBytes)) + " "
                  + (page.wizard.outputDir.length > 0 && page.wizard.freeBytes >= 0
                     ? qsTr("%1 is free in %2.").arg(page.bytes(page.wizard.freeBytes)).arg(page.wizard.outputDir)
                     : qsTr("Choose a folder for it."))
        }
        Label {
            visible: page.wizard.step >= ConvertWizard.Space && page.wizard.shardModeNeededBytes >= 0
            text: qsTr("Shard-by-shard mode (deletes each source shard once it is in the pack and verified) needs %1")
                  .arg(page.bytes(page.wizard.shardModeNeededBytes))
        }
        Button {
            visible: page.wizard.step === ConvertWizard.Space && page.wizard.shardModeOffered
            text: qsTr("Convert shard by shard, deleting the source as it goes")
            onClicked: page.wizard.chooseShardMode()
        }
        Button {
            visible: page.wizard.step === ConvertWizard.Space || page.wizard.step === ConvertWizard.Options
            text: qsTr("Choose the output folder…")
            onClicked: outDialog.open()
        }
        CheckBox {
            visible: page.wizard.step === ConvertWizard.Options
            text: qsTr("Verify every expert's SHA-256 after building")
            checked: page.wizard.verifyFull
            onToggled: page.wizard.verifyFull = checked
        }
        CheckBox {
            visible: page.wizard.step === ConvertWizard.Options && page.wizard.sourceDeletable
            enabled: !page.wizard.shardMode
            text: page.wizard.shardMode
                  ? qsTr("Delete the source: each shard as soon as its bytes are in the pack and verified")
                  : qsTr("Delete the source after the pack passes a full verify")
            checked: page.wizard.deleteSourceAfterVerify
            onToggled: page.wizard.deleteSourceAfterVerify = checked
        }
        Label {
            visible: page.wizard.step === ConvertWizard.Options && !page.wizard.sourceDeletable
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: "#4b5563"
            text: qsTr("An Ollama model's file stays where it is: Ollama's models may share it (`ollama rm` removes it).")
        }
        Button {
            visible: page.wizard.step === ConvertWizard.Options
            text: qsTr("Convert")
            onClicked: page.wizard.start()
        }
        ProgressBar {
            objectName: "convertProgress"
            visible: page.wizard.step === ConvertWizard.Converting || page.wizard.step === ConvertWizard.Verifying
            Layout.fillWidth: true
            from: 0
            to: Math.max(page.wizard.overallTotal, 1)
            value: page.wizard.overallDone
        }
        Label {
            visible: page.wizard.step === ConvertWizard.Converting || page.wizard.step === ConvertWizard.Verifying
            // Rate and time left once the phase has measured them (0 before its first bytes).
            text: page.wizard.rate > 0 && page.wizard.eta > 0
                  ? qsTr("%1 · %2/s · %3 s left").arg(BuildPhases.text(page.wizard.phase)).arg(page.bytes(page.wizard.rate))
                    .arg(Math.round(page.wizard.eta))
                  : page.wizard.rate > 0 ? qsTr("%1 · %2/s").arg(BuildPhases.text(page.wizard.phase)).arg(page.bytes(page.wizard.rate))
                  : BuildPhases.text(page.wizard.phase)
        }
        Button {
            visible: page.wizard.step === ConvertWizard.Converting || page.wizard.step === ConvertWizard.Verifying
            text: qsTr("Cancel")
            onClicked: page.wizard.cancel()
        }
        CheckBox {
            id: confirmDelete
            visible: page.wizard.step === ConvertWizard.Done && page.wizard.verifyFull && !page.wizard.sourceDeleted
                     && page.wizard.sourceDeletable
            // (step in the binding: re-read the source's size when the wizard reaches Done)
            text: qsTr("Delete the source (%1 freed); the pack passed its full verify")
                  .arg(page.bytes(page.wizard.step === ConvertWizard.Done ? page.wizard.bytesFreedBySource() : 0))
        }
        RowLayout {
            visible: page.wizard.step === ConvertWizard.Done
            Button {
                visible: !page.wizard.sourceDeleted && page.wizard.sourceDeletable
                text: qsTr("Delete source")
                enabled: confirmDelete.checked
                onClicked: page.wizard.deleteSourceFiles(confirmDelete.checked)
            }
            Button {
                objectName: "convertChatNow"
                text: qsTr("Chat now")
                onClicked: page.chatNow(page.wizard.packDir)
            }
        }
        // The plan (a line per layer) or the error scrolls in the room the dialog leaves.
        ScrollView {
            objectName: "convertMessageScroll"
            Layout.fillWidth: true
            Layout.fillHeight: true
            Layout.minimumHeight: 48
            clip: true
            contentWidth: availableWidth
            Label {
                width: parent.width
                wrapMode: Text.Wrap
                text: page.wizard.error.length > 0 ? page.wizard.error : page.wizard.message
                color: page.wizard.error.length > 0 ? "firebrick" : palette.text
            }
        }
    }
}
