// The model library: every known model with its pack status and the context it can afford,
// add by file / drop / folder scan / Ollama name, remove with a confirmation stating the bytes
// freed, and downloads (URL or hub repository + file or shard pattern, convert when done).
import QtQuick
import QtQuick.Controls
import Qt.labs.platform as Platform
import QtQuick.Layouts
import MoePack.Ui

Page {
    id: page
    // "Load" on a row (or a double click), "Chat now" after a conversion: the studio loads the
    // model and shows the chat.
    signal openModel(string path)
    property LibraryViewModel library: LibraryViewModel {
        // The applied folder (the one the engine converts into), never an unapplied draft.
        packsFolder: page.settings && page.settings.appliedValues.models_folder !== undefined
                     ? page.settings.appliedValues.models_folder : ""
    }
    // The Settings (the expert cache the library plans with starts at their cache budget).
    property SettingsViewModel settings: null
    function followSettingsCache() {
        if (page.settings && page.settings.values.cache_vram_mib !== undefined)
            page.library.expertCacheBytes = page.settings.values.cache_vram_mib * 1048576
    }
    Connections {
        target: page.settings
        function onApplied(engineChanged) { page.followSettingsCache() }
    }
    // Converts finished downloads marked "convert when done" (one at a time, queued).
    property ConvertWizard downloadConverter: ConvertWizard {
        onFinished: ok => { if (ok) page.library.addPath(page.downloadConverter.packDir); page.library.refresh() }
    }
    property DownloadsViewModel downloads: DownloadsViewModel {
        modelsFolder: page.library.modelsFolder
        convertWizard: page.downloadConverter
        onDownloadFinished: path => page.library.addPath(path)
        onErrorOccurred: message => status.show(message, true)
        onConversionStarted: (source, packDir) => {
            status.show(qsTr("Converting %1 to an Expert Pack in %2").arg(source).arg(packDir), false)
            conversionDialog.open()
        }
        // The wizard stays on its step (e.g. not enough space, with the shard-by-shard offer).
        onConversionRefused: (source, message) => conversionDialog.open()
    }
    // Restores the download list (and resumes interrupted downloads) once the settings are in.
    Component.onCompleted: {
        page.followSettingsCache()
        downloads.databasePath = library.databasePath
        library.refresh()
    }
    function gib(bytes) { return Math.round(bytes / 1073741824 * 10) / 10 }

    Connections {
        target: page.library
        function onErrorOccurred(message) { status.show(message, true) }
        function onMessage(text) { status.show(text, false) }
    }

    // Qt Labs Platform dialogs: the platform's own where there is one, else Qt Widgets'
    // QFileDialog (the studio is a QApplication). Qt 6.4's QML-drawn dialog joined a typed full
    // path to its current folder ("/work//tmp/x.md"), kept Save disabled until Enter, and chose
    // the highlighted child of a folder.
    Platform.FileDialog {
        id: fileDialog
        objectName: "libraryAddFileDialog"
        title: qsTr("Add a model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("Expert Pack manifests (manifest.json)")]
        onAccepted: page.library.addPath(fileDialog.file)
    }
    Platform.FolderDialog {
        id: folderDialog
        objectName: "libraryScanFolderDialog"
        title: qsTr("Scan a folder for models")
        onAccepted: page.library.scanFolder(folderDialog.folder)
    }

    Dialog {
        id: removeDialog
        property var modelId: -1
        property string modelName: ""
        title: qsTr("Remove %1?").arg(modelName)
        modal: true
        anchors.centerIn: parent
        // Unticked at every opening: deleting files is chosen for this model, never inherited.
        onAboutToShow: deleteBox.checked = false
        footer: DialogButtonBox {
            Button {
                objectName: "removeConfirm"
                text: deleteBox.checked ? qsTr("Remove and delete files") : qsTr("Remove from the library")
                DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
            }
            Button {
                text: qsTr("Cancel")
                DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
            }
        }
        readonly property double freed: page.library.bytesFreed(modelId, deleteBox.checked)
        ColumnLayout {
            CheckBox {
                id: deleteBox
                text: qsTr("Also delete its files from disk")
                enabled: page.library.deleteRefusal(removeDialog.modelId).length === 0
            }
            Label {
                Layout.maximumWidth: 420
                wrapMode: Text.Wrap
                text: !deleteBox.enabled ? page.library.deleteRefusal(removeDialog.modelId)
                      : deleteBox.checked ? qsTr("%1 will be freed.").arg(page.library.formatBytes(removeDialog.freed))
                                          : qsTr("The files stay on disk; no space is freed.")
            }
        }
        onAccepted: page.library.remove(modelId, deleteBox.checked)
    }

    Dialog {
        id: convertDialog
        objectName: "libraryConvertDialog"
        property string source: ""
        title: qsTr("Convert to an Expert Pack")
        modal: true
        anchors.centerIn: parent
        width: Math.min(page.width - 40, 640)
        height: Math.min(page.height - 40, 520)
        // Closing unloads the wizard, which stops a conversion: asked first while one runs
        // (what is written stays; converting again goes on from there).
        closePolicy: Popup.NoAutoClose
        footer: DialogButtonBox {
            Button {
                objectName: "convertDialogClose"
                text: qsTr("Close")
                DialogButtonBox.buttonRole: DialogButtonBox.ActionRole
                onClicked: {
                    if (convertLoader.item && convertLoader.item.wizard.busy) stopConvertDialog.open()
                    else convertDialog.close()
                }
            }
        }
        onClosed: page.library.refresh()
        contentItem: Loader {
            id: convertLoader
            active: convertDialog.visible
            sourceComponent: ConvertWizardPage {
                id: convertPage
                objectName: "libraryConvertPage"
                initialSource: convertDialog.source
                onChatNow: packDir => { convertDialog.close(); page.openModel(packDir) }
                // The new pack joins the library, and its source's row shows it ready.
                Connections {
                    target: convertPage.wizard
                    function onFinished(ok) { if (ok) page.library.addPath(convertPage.wizard.packDir) }
                }
            }
        }
    }

    Dialog {
        id: cancelDownloadDialog
        objectName: "cancelDownloadDialog"
        property int row: -1
        property string name: ""
        title: qsTr("Cancel the download of %1?").arg(name)
        modal: true
        anchors.centerIn: parent
        width: Math.min(page.width - 40, 460)
        Label {
            width: parent.width
            wrapMode: Text.Wrap
            text: qsTr("What was downloaded of it (and of the other files of its group) is deleted. Pause keeps it instead.")
        }
        footer: DialogButtonBox {
            Button {
                text: qsTr("Keep it")
                DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
            }
            Button {
                objectName: "cancelDownloadConfirm"
                text: qsTr("Cancel and delete")
                DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
            }
        }
        onAccepted: page.downloads.cancel(row)
    }

    Dialog {
        id: stopConvertDialog
        objectName: "stopConvertDialog"
        title: qsTr("Stop the conversion?")
        modal: true
        anchors.centerIn: parent
        width: Math.min(page.width - 40, 440)
        Label {
            width: parent.width
            wrapMode: Text.Wrap
            text: qsTr("What is written so far stays on disk; converting the same model again goes on from there.")
        }
        footer: DialogButtonBox {
            Button {
                text: qsTr("Keep converting")
                DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
            }
            Button {
                objectName: "stopConvertConfirm"
                text: qsTr("Stop and close")
                DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
            }
        }
        onAccepted: {
            if (convertLoader.item) convertLoader.item.wizard.cancel()
            convertDialog.close()
        }
    }

    Dialog {
        id: conversionDialog
        title: qsTr("Converting a finished download")
        modal: false
        anchors.centerIn: parent
        onClosed: page.downloads.resumeConversions()
        width: Math.min(page.width - 40, 640)
        height: Math.min(page.height - 40, 520)
        standardButtons: Dialog.Close
        contentItem: Loader {
            active: conversionDialog.visible
            sourceComponent: ConvertWizardPage {
                wizard: page.downloadConverter
                onChatNow: packDir => { conversionDialog.close(); page.openModel(packDir) }
            }
        }
    }

    // Two rows, so nothing is clipped at the default width: adding models, then the budget the
    // rows' affordable context is planned with. The expert cache starts at the Settings' cache
    // budget (cache_vram_mib) and follows it when the Settings are applied; changing it here
    // only plans (the engine keeps the Settings' value).
    header: ToolBar {
        // Light, as the page: the style's primary-coloured bar left its dark labels unreadable.
        background: Rectangle { color: "#f3f4f8"; border.color: "#e5e7eb" }
        ColumnLayout {
            anchors.fill: parent
            spacing: 0
            RowLayout {
                Layout.fillWidth: true
                Button { text: qsTr("Add file…"); onClicked: fileDialog.open() }
                Button { text: qsTr("Scan folder…"); onClicked: folderDialog.open() }
                TextField {
                    id: ollamaName
                    Layout.fillWidth: true
                    Layout.maximumWidth: 320
                    placeholderText: qsTr("Ollama model, e.g. qwen3:30b")
                    onAccepted: if (text.length > 0) page.library.addOllama(text)
                }
                Button {
                    text: qsTr("Add Ollama model")
                    enabled: ollamaName.text.length > 0
                    onClicked: page.library.addOllama(ollamaName.text)
                }
                Button { text: qsTr("Refresh"); onClicked: page.library.refresh() }
                BusyIndicator { running: page.library.busy; implicitHeight: 28; implicitWidth: 28 }
                Item { Layout.fillWidth: true }
            }
            RowLayout {
                Layout.fillWidth: true
                Layout.leftMargin: 8
                Label { text: qsTr("Plan the context for: memory (GiB)") }
                SpinBox {
                    objectName: "libraryMemorySpin"
                    from: 1; to: 4096; editable: true
                    value: Math.max(1, Math.round(page.gib(page.library.memoryBudgetBytes)))
                    onValueModified: page.library.memoryBudgetBytes = value * 1073741824
                    ToolTip.visible: hovered
                    ToolTip.text: qsTr("Memory for the model: dense weights, the expert cache and the context")
                }
                Label { text: qsTr("expert cache (MiB)") }
                SpinBox {
                    objectName: "libraryCacheSpin"
                    from: 0; to: 16777216; stepSize: 256; editable: true
                    value: Math.round(page.library.expertCacheBytes / 1048576)
                    onValueModified: page.library.expertCacheBytes = value * 1048576
                    ToolTip.visible: hovered
                    ToolTip.text: qsTr("Starts at the Settings' cache budget; a change here only plans")
                }
                Item { Layout.fillWidth: true }
            }
        }
    }

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: 8

        // The last command's summary and every error it reported (a folder scan reports one a
        // file), until dismissed or the next summary.
        RowLayout {
            id: status
            objectName: "libraryStatus"
            Layout.fillWidth: true
            visible: summary.length > 0 || errors.length > 0
            property string summary: ""
            property var errors: []
            function show(message, error) {
                if (error) {
                    errors = errors.concat([message])
                } else {
                    summary = message
                    errors = []
                }
            }
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 2
                Label {
                    Layout.fillWidth: true
                    visible: status.summary.length > 0
                    wrapMode: Text.Wrap
                    text: status.summary
                }
                Label {
                    objectName: "libraryErrors"
                    Layout.fillWidth: true
                    visible: status.errors.length > 0
                    wrapMode: Text.Wrap
                    color: "firebrick"
                    text: status.errors.slice(0, 6).join("\n")
                          + (status.errors.length > 6 ? "\n" + qsTr("… and %n more (in the log)", "", status.errors.length - 6) : "")
                }
            }
            ToolButton {
                objectName: "dismissLibraryStatus"
                Layout.alignment: Qt.AlignTop
                text: "\u2715"
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Dismiss")
                onClicked: { status.summary = ""; status.errors = [] }
            }
        }

        DropArea {
            id: drop
            Layout.fillWidth: true
            Layout.fillHeight: true
            onDropped: event => {
                const paths = []
                for (let i = 0; i < event.urls.length; ++i) paths.push(event.urls[i].toString())
                page.library.addPaths(paths)
                event.acceptProposedAction()
            }
            Rectangle {
                anchors.fill: parent
                color: drop.containsDrag ? Qt.rgba(0.2, 0.5, 1.0, 0.08) : "transparent"
                border.color: drop.containsDrag ? "steelblue" : "transparent"
            }
            ListView {
                id: list
                anchors.fill: parent
                clip: true
                model: page.library.models
                spacing: 4
                Label {
                    anchors.centerIn: parent
                    visible: list.count === 0
                    text: qsTr("No models yet. Drop GGUF files or pack folders here, or scan a folder.")
                    opacity: 0.6
                }
                delegate: ItemDelegate {
                    id: row
                    required property var modelId
                    required property string name
                    required property string kind
                    required property string path
                    required property string architecture
                    required property double sizeBytes
                    required property string quantTypes
                    required property int experts
                    required property int topK
                    required property string packStatus
                    required property string packPath
                    required property string statusDetail
                    required property bool sourcePresent
                    required property double ctxBytesPerToken
                    required property double ctxFixedBytes
                    required property string ctxFormula
                    readonly property double affordable: page.library.affordableContext(
                        modelId, page.library.memoryBudgetBytes, page.library.expertCacheBytes)
                    width: ListView.view.width
                    // What "Load" opens: a pack as it is; a model with a ready pack, its pack; else
                    // the model itself (converted first when the Settings say so).
                    readonly property string loadPath: row.kind === "pack" ? row.path
                                                       : row.packStatus === "ready" && row.packPath.length > 0 ? row.packPath
                                                       : row.path
                    // (Not while its pack is being built: loading would convert it a second time.)
                    readonly property bool loadable: row.kind === "pack" ? row.packStatus === "ready"
                                                     : row.packStatus === "building" ? false
                                                     : row.sourcePresent || (row.packStatus === "ready" && row.packPath.length > 0)
                    onDoubleClicked: if (row.loadable) page.openModel(row.loadPath)
                    contentItem: RowLayout {
                        ColumnLayout {
                            Layout.fillWidth: true
                            Label { text: row.name; textFormat: Text.PlainText; font.bold: true; elide: Text.ElideRight; Layout.fillWidth: true }
                            Label {
                                Layout.fillWidth: true
                                elide: Text.ElideMiddle
                                opacity: 0.7
                                text: row.sourcePresent ? row.path : qsTr("%1 (deleted)").arg(row.path)
                            }
                            // The detail lines wrap: at the window's minimum width they would
                            // otherwise push Load / Convert / Remove off the row.
                            Label {
                                Layout.fillWidth: true
                                wrapMode: Text.Wrap
                                opacity: 0.8
                                text: qsTr("%1 · %2 · %3 · %4 experts, top-%5 · %6")
                                      .arg(row.kind).arg(row.architecture)
                                      .arg(page.library.formatBytes(row.sizeBytes)).arg(row.experts)
                                      .arg(row.topK).arg(row.quantTypes)
                            }
                            Label {
                                Layout.fillWidth: true
                                wrapMode: Text.Wrap
                                opacity: 0.8
                                visible: row.ctxBytesPerToken > 0
                                text: qsTr("KV cache %1 per token + %2 per sequence · %3 tokens of context next to a %4 expert cache in %5")
                                      .arg(page.library.formatBytes(row.ctxBytesPerToken))
                                      .arg(page.library.formatBytes(row.ctxFixedBytes))
                                      .arg(row.affordable.toLocaleString(Qt.locale(), "f", 0))
                                      .arg(page.library.formatBytes(page.library.expertCacheBytes))
                                      .arg(page.library.formatBytes(page.library.memoryBudgetBytes))
                                ToolTip.visible: ctxHover.hovered
                                ToolTip.text: qsTr("(memory - expert cache - dense weights - fixed state) / bytes per token, at most the trained context. %1")
                                              .arg(row.ctxFormula)
                                HoverHandler { id: ctxHover }
                            }
                        }
                        Label {
                            text: row.packStatus === "ready" ? qsTr("pack ready")
                                : row.packStatus === "building" ? qsTr("pack building")
                                : row.packStatus === "failed-verify" ? qsTr("pack failed verify")
                                : qsTr("no pack")
                            color: row.packStatus === "failed-verify" ? "firebrick" : palette.text
                            ToolTip.visible: statusHover.hovered && row.statusDetail.length > 0
                            ToolTip.text: row.statusDetail
                            HoverHandler { id: statusHover }
                        }
                        Button {
                            objectName: "libraryLoad:" + row.name + ":" + row.kind
                            text: qsTr("Load")
                            font.bold: true
                            enabled: row.loadable
                            ToolTip.visible: hovered
                            ToolTip.text: qsTr("Load %1 and chat with it").arg(row.loadPath)
                            onClicked: page.openModel(row.loadPath)
                        }
                        Button {
                            text: qsTr("Convert…")
                            visible: row.kind !== "pack" && row.sourcePresent
                            onClicked: {
                                convertDialog.source = row.path
                                convertDialog.open()
                            }
                        }
                        Button {
                            text: qsTr("Remove…")
                            onClicked: {
                                removeDialog.modelId = row.modelId
                                removeDialog.modelName = row.name
                                removeDialog.open()
                            }
                        }
                    }
                }
            }
        }

        GroupBox {
            title: qsTr("Downloads")
            Layout.fillWidth: true
            ColumnLayout {
                anchors.fill: parent
                // The URL, the one field to fill, keeps the most room: at the window's minimum
                // width it shrank to ~80 px while the optional fields kept theirs. The optional
                // ones give way first (down to their minimums); the URL takes what is left.
                RowLayout {
                    Layout.fillWidth: true
                    TextField {
                        id: source
                        objectName: "downloadSource"
                        Layout.fillWidth: true
                        Layout.minimumWidth: 220
                        Layout.preferredWidth: 360
                        placeholderText: qsTr("https:// URL or owner/repo")
                    }
                    TextField {
                        id: file
                        objectName: "downloadFile"
                        placeholderText: qsTr("file or shard pattern, e.g. *Q2_K*.gguf")
                        Layout.fillWidth: true
                        Layout.minimumWidth: 110
                        Layout.preferredWidth: 220
                        Layout.maximumWidth: 220
                    }
                    TextField {
                        id: sha
                        objectName: "downloadSha"
                        Layout.fillWidth: true
                        Layout.minimumWidth: 90
                        Layout.preferredWidth: 180
                        Layout.maximumWidth: 180
                        placeholderText: qsTr("SHA-256 (optional)")
                    }
                    CheckBox {
                        id: convertBox
                        text: qsTr("Convert when done")
                        ToolTip.visible: hovered
                        ToolTip.text: qsTr("Build an Expert Pack once verified; the space check counts the pack too")
                    }
                    Button {
                        objectName: "downloadButton"
                        text: qsTr("Download")
                        enabled: source.text.length > 0
                        onClicked: page.downloads.addDownload(source.text, file.text, sha.text, convertBox.checked)
                    }
                }
                RowLayout {
                    Label { text: qsTr("Hub") }
                    TextField {
                        Layout.fillWidth: true
                        text: page.downloads.hubBaseUrl
                        onEditingFinished: page.downloads.hubBaseUrl = text
                    }
                }
                RowLayout {
                    visible: downloadList.count > 0
                    Label {
                        Layout.fillWidth: true
                        text: qsTr("%n download(s)", "", downloadList.count)
                        color: "#6b7280"
                    }
                    Button {
                        objectName: "clearEndedDownloads"
                        text: qsTr("Clear finished")
                        flat: true
                        onClicked: page.downloads.clearEnded()
                    }
                }
                // At most about five rows high: a long list scrolls instead of pushing the
                // models off the page.
                ListView {
                    id: downloadList
                    objectName: "downloadList"
                    Layout.fillWidth: true
                    Layout.preferredHeight: Math.min(contentHeight, 240)
                    clip: true
                    spacing: 2
                    boundsBehavior: Flickable.StopAtBounds
                    ScrollBar.vertical: ScrollBar { policy: downloadList.contentHeight > downloadList.height
                                                            ? ScrollBar.AlwaysOn : ScrollBar.AsNeeded }
                    model: page.downloads.downloads
                    delegate: RowLayout {
                        id: dl
                        width: ListView.view.width - 12
                        required property int index
                        required property string name
                        required property string state
                        required property double bytesDone
                        required property double bytesTotal
                        required property double rate
                        required property double eta
                        required property string error
                        required property double hashedBytes
                        required property int groupSize
                        required property int position
                        Label {
                            text: dl.groupSize > 1 ? qsTr("%1 (file %2 of %3)").arg(dl.name).arg(dl.position).arg(dl.groupSize)
                                                   : dl.name
                            Layout.preferredWidth: 260
                            elide: Text.ElideMiddle
                        }
                        ProgressBar {
                            Layout.fillWidth: true
                            from: 0
                            to: dl.bytesTotal > 0 ? dl.bytesTotal : 1
                            value: dl.state === "hashing" ? dl.hashedBytes : dl.bytesDone
                            indeterminate: dl.bytesTotal < 0 && dl.state === "downloading"
                        }
                        // A fixed width, elided (the whole text in a tooltip): a long error must not push
                        // the row's buttons and the panel's fields out of the window.
                        Label {
                            id: dlStatus
                            objectName: "downloadStatus"
                            Layout.preferredWidth: 360
                            Layout.maximumWidth: 360
                            elide: Text.ElideRight
                            color: dl.state === "failed" ? "firebrick" : palette.text
                            text: dl.state === "failed" ? dl.error
                                : dl.state === "hashing" ? qsTr("checking %1 of %2 already downloaded")
                                  .arg(page.library.formatBytes(dl.hashedBytes)).arg(page.library.formatBytes(dl.bytesDone))
                                : dl.state === "queued" ? qsTr("queued")
                                : dl.state === "cancelled" ? qsTr("cancelled")
                                : dl.state === "finished" ? qsTr("done · %1").arg(page.library.formatBytes(dl.bytesDone))
                                : dl.state === "paused" ? (dl.bytesTotal > 0
                                  ? qsTr("paused · %1 of %2").arg(page.library.formatBytes(dl.bytesDone))
                                    .arg(page.library.formatBytes(dl.bytesTotal))
                                  : qsTr("paused · %1").arg(page.library.formatBytes(dl.bytesDone)))
                                : dl.state === "probing" ? qsTr("asking the server")
                                : dl.state === "waiting" ? (dl.error.length > 0 ? qsTr("retrying soon: %1").arg(dl.error)
                                                                               : qsTr("retrying soon"))
                                : dl.state === "verifying" ? qsTr("verifying")
                                : dl.state !== "downloading" ? dl.state
                                : qsTr("%1 of %2 · %3/s · %4").arg(page.library.formatBytes(dl.bytesDone))
                                  .arg(page.library.formatBytes(Math.max(dl.bytesTotal, 0)))
                                  .arg(page.library.formatBytes(dl.rate))
                                  .arg(dl.eta >= 0 ? qsTr("%1 s left").arg(Math.round(dl.eta)) : dl.state)
                            HoverHandler { id: dlHover }
                            ToolTip.visible: dlHover.hovered && dlStatus.truncated
                            ToolTip.text: dlStatus.text
                        }
                        Button {
                            text: dl.state === "paused" || dl.state === "failed" ? qsTr("Resume") : qsTr("Pause")
                            enabled: dl.state !== "finished" && dl.state !== "cancelled" && dl.state !== "queued"
                            onClicked: dl.state === "paused" || dl.state === "failed" ? page.downloads.resume(dl.index)
                                                                                      : page.downloads.pause(dl.index)
                        }
                        Button {
                            text: qsTr("Cancel")
                            enabled: dl.state !== "finished" && dl.state !== "cancelled"
                            onClicked: {
                                cancelDownloadDialog.row = dl.index
                                cancelDownloadDialog.name = dl.name
                                cancelDownloadDialog.open()
                            }
                        }
                    }
                }
            }
        }
    }
}
