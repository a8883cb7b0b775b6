pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Controls.Material
import MoePack.Ui

// Settings: engine, expert cache (with the slot count the values give, before applying),
// sampling defaults, paths and language. Edits go to SettingsViewModel's draft; Apply stores
// them (and reloads the model when an engine setting changed).
Item {
    id: page
    required property SettingsViewModel settings
    required property EngineController engine
    // Called as beforeReload(action, button, proceed) when Apply would reload the model: the
    // studio's ReplyStopGuard.whenReplyStops asks first while a reply is being written.
    property var beforeReload: (action, button, proceed) => proceed()

    Rectangle { anchors.fill: parent; color: "#f6f7fb" }

    // A setting's name and, under it, its hint (the key's own words or a note).
    component KeyLabel: ColumnLayout {
        id: keyLabel
        required property string label
        property string hint: ""
        Layout.preferredWidth: 300
        Layout.maximumWidth: 300
        spacing: 0
        Label { text: keyLabel.label; font.pixelSize: 13; color: "#111827" }
        Label {
            Layout.maximumWidth: 300
            wrapMode: Text.Wrap
            visible: keyLabel.hint.length > 0
            text: keyLabel.hint
            font.pixelSize: 11
            color: "#6b7280"
        }
    }

    // One labelled field bound to a settings key.
    component Field: RowLayout {
        id: field
        required property string key
        required property string label
        property string hint: ""
        Layout.fillWidth: true
        spacing: 12
        KeyLabel { label: field.label; hint: field.hint }
        TextField {
            id: input
            Layout.preferredWidth: 160
            objectName: "field_" + field.key
            horizontalAlignment: Text.AlignRight
            // A refused value stays as typed beside its error (the draft keeps the last valid one).
            property string refused: ""
            text: page.settings.errors[field.key] !== undefined ? input.refused : String(page.settings.values[field.key])
            onEditingFinished: {
                input.refused = text
                page.settings.setValue(field.key, text)
            }
        }
        Label {
            Layout.fillWidth: true
            text: page.settings.errors[field.key] !== undefined ? page.settings.errors[field.key] : ""
            color: "#b91c1c"
            font.pixelSize: 12
        }
    }

    // One labelled choice among fixed values of a settings key (the values are the key's own
    // words, as in a config file).
    component Choice: RowLayout {
        id: choice
        required property string key
        required property string label
        required property var choices
        property string hint: ""
        Layout.fillWidth: true
        spacing: 12
        KeyLabel { label: choice.label; hint: choice.hint }
        ComboBox {
            id: box
            objectName: "choice_" + choice.key
            Layout.preferredWidth: 160
            model: choice.choices
            currentIndex: Math.max(0, choice.choices.indexOf(page.settings.values[choice.key]))
            onActivated: function(i) { page.settings.setValue(choice.key, choice.choices[i]) }
            Connections {  // after Revert / Reset (a choice breaks the binding)
                target: page.settings
                function onValuesChanged() {
                    box.currentIndex = Math.max(0, choice.choices.indexOf(page.settings.values[choice.key]))
                }
            }
        }
        Item { Layout.fillWidth: true }
    }

    component Section: Rectangle {
        id: section
        default property alias content: inner.data
        property string title
        Layout.fillWidth: true
        implicitHeight: inner.implicitHeight + 52
        radius: 12
        color: "white"
        border.color: "#e5e7eb"
        Label {
            x: 16; y: 12
            text: section.title
            font.pixelSize: 15
            font.bold: true
        }
        ColumnLayout {
            id: inner
            x: 16; y: 40
            width: section.width - 32
            spacing: 6
        }
    }

    ScrollView {
        id: scroll
        anchors.fill: parent
        anchors.bottomMargin: buttons.height
        contentWidth: availableWidth

        ColumnLayout {
            width: Math.min(scroll.availableWidth - 36, 900)
            x: 18
            spacing: 14

            Label {
                Layout.topMargin: 18
                text: qsTr("Settings")
                font.pixelSize: 20
                font.bold: true
            }

            Section {
                title: qsTr("Engine")
                Choice { key: "backend"; label: qsTr("Backend"); choices: ["auto", "cpu", "cuda"] }
                Field {
                    key: "threads"
                    label: qsTr("CPU threads")
                    hint: qsTr("0 = automatic (%1: all cores but one, for the UI)").arg(page.settings.defaultThreads)
                }
                Field {
                    objectName: "nCtxField"
                    key: "n_ctx"
                    label: qsTr("Context length (tokens)")
                    // The engine caps n_ctx at the model's trained context: say so when it did.
                    hint: page.engine.nCtx > 0 && page.engine.nCtx < Number(page.settings.appliedValues.n_ctx)
                          ? qsTr("The loaded model runs with %1: its trained context.").arg(page.engine.nCtx)
                          : ""
                }
            }

            Section {
                title: qsTr("Expert cache and SSD reads")
                Field {
                    key: "cache_vram_mib"
                    label: qsTr("Cache budget (MiB)")
                    hint: qsTr("cache_vram_mib: VRAM on CUDA, host RAM on the CPU backend")
                }
                Field { key: "cache_vram_reserve_mib"; label: qsTr("Keep free (MiB)"); hint: "cache_vram_reserve_mib" }
                Choice {
                    key: "cache_policy"
                    label: qsTr("Which expert the cache evicts")
                    hint: qsTr("cache_policy: hybrid: the least used, and of those the least recently used; lru: the least recently used; lfu: the least used")
                    choices: ["hybrid", "lru", "lfu"]
                }
                Field {
                    key: "cache_ram_mib"
                    label: qsTr("Host-RAM tier (MiB)")
                    hint: qsTr("cache_ram_mib: experts the VRAM cache evicts wait here instead of on the SSD (CUDA). auto: half the free RAM, keeping 2 GiB free, now %1 MiB; 0: off")
                          .arg(page.settings.ramTierAutoMib.toFixed(0))
                }
                Choice {
                    key: "cache_ram_admission"
                    label: qsTr("Which evictions the RAM tier keeps")
                    hint: qsTr("cache_ram_admission (CUDA): frequency: only experts used more often than the one they would push out (far fewer copies down); all: every one")
                    choices: ["frequency", "all"]
                }
                Field { key: "stage_slots"; label: qsTr("Staging buffers"); hint: "stage_slots" }
                Field { key: "read_splits"; label: qsTr("Reads per expert"); hint: "read_splits" }
                RowLayout {
                    spacing: 12
                    ColumnLayout {
                        Layout.preferredWidth: 300
                        spacing: 0
                        Label { text: qsTr("Direct I/O (O_DIRECT)"); font.pixelSize: 13 }
                        Label { text: "direct_io"; font.pixelSize: 11; color: "#6b7280" }
                    }
                    CheckBox {
                        checked: page.settings.values.direct_io
                        onToggled: page.settings.setValue("direct_io", checked)
                    }
                }
                RowLayout {
                    spacing: 12
                    ColumnLayout {
                        Layout.preferredWidth: 300
                        spacing: 0
                        Label { text: qsTr("Read the next layer's experts ahead"); font.pixelSize: 13 }
                        Label { text: "prefetch_experts (Expert Pack)"; font.pixelSize: 11; color: "#6b7280" }
                    }
                    CheckBox {
                        checked: page.settings.values.prefetch_experts
                        onToggled: page.settings.setValue("prefetch_experts", checked)
                    }
                }
                RowLayout {
                    spacing: 12
                    ColumnLayout {
                        Layout.preferredWidth: 300
                        spacing: 0
                        Label { text: qsTr("Check each expert's SHA-256 on its first read"); font.pixelSize: 13 }
                        Label { text: "verify_pack_sha256"; font.pixelSize: 11; color: "#6b7280" }
                    }
                    CheckBox {
                        objectName: "verifyPackSha256"
                        checked: page.settings.values.verify_pack_sha256
                        onToggled: page.settings.setValue("verify_pack_sha256", checked)
                        ToolTip.visible: hovered
                        ToolTip.text: qsTr("A damaged Expert Pack stops the reply with an error naming the expert, instead of answering from wrong weights.")
                    }
                }
                Rectangle {
                    Layout.fillWidth: true
                    Layout.topMargin: 4
                    implicitHeight: preview.implicitHeight + 16
                    radius: 8
                    color: page.settings.previewProblem.length > 0 ? "#fdecea" : "#eef2ff"
                    Label {
                        id: preview
                        objectName: "slotPreview"
                        x: 10; y: 8
                        width: parent.width - 20
                        wrapMode: Text.Wrap
                        font.pixelSize: 13
                        text: page.settings.previewSlotCount < 0
                              ? qsTr("Load a model to see how many experts these values hold. Free memory: %1 MiB.")
                                    .arg(page.settings.freeMemoryMib.toFixed(0))
                              : qsTr("%1 MiB usable of %2 MiB free → %3 expert slots of %4 MiB.")
                                    .arg(page.settings.previewUsableMib.toFixed(0))
                                    .arg(page.settings.freeMemoryMib.toFixed(0))
                                    .arg(page.settings.previewSlotCount)
                                    .arg(page.settings.expertMib.toFixed(3))
                                + (page.settings.previewProblem.length > 0 ? "\n" + page.settings.previewProblem : "")
                    }
                }
            }

            Section {
                title: qsTr("Defaults for new conversations")
                Field { key: "temperature"; label: qsTr("Temperature"); hint: qsTr("0 = greedy (reproducible)") }
                Field { key: "top_p"; label: qsTr("Top-p") }
                Field { key: "top_k"; label: qsTr("Top-k"); hint: qsTr("0 = off") }
                Field { key: "min_p"; label: qsTr("Min-p") }
                Field { key: "repeat_penalty"; label: qsTr("Repetition penalty") }
                Field { key: "max_tokens"; label: qsTr("Max tokens per reply") }
                Field { key: "seed"; label: qsTr("Seed"); hint: qsTr("-1 = random") }
                Field { key: "system_prompt"; label: qsTr("System prompt") }
            }

            Section {
                title: qsTr("Models and language")
                Field { key: "models_folder"; label: qsTr("Expert Pack folder") }
                RowLayout {
                    spacing: 12
                    Label {
                        Layout.preferredWidth: 300
                        text: qsTr("Convert GGUF models to Expert Packs when opened")
                        font.pixelSize: 13
                        wrapMode: Text.Wrap
                    }
                    CheckBox {
                        checked: page.settings.values.convert_gguf
                        onToggled: page.settings.setValue("convert_gguf", checked)
                    }
                }
                RowLayout {
                    spacing: 12
                    Label { Layout.preferredWidth: 300; text: qsTr("Language"); font.pixelSize: 13 }
                    ComboBox {
                        id: language
                        objectName: "language"
                        Layout.preferredWidth: 200
                        readonly property var codes: ["system", "en", "zh_CN"]
                        model: [qsTr("System"), "English", "简体中文"]
                        currentIndex: Math.max(0, codes.indexOf(page.settings.values.language))
                        onActivated: function(i) { page.settings.setValue("language", codes[i]) }
                        // A retranslation replaces the model (qsTr("System")), which resets the
                        // index, and a choice breaks the binding: follow the settings again.
                        function follow() { currentIndex = Math.max(0, codes.indexOf(page.settings.values.language)) }
                        onModelChanged: follow()
                        Connections {
                            target: page.settings
                            function onValuesChanged() { language.follow() }
                        }
                    }
                }
            }
            Item { Layout.preferredHeight: 12 }
        }
    }

    Rectangle {
        id: buttons
        anchors.left: parent.left
        anchors.right: parent.right
        anchors.bottom: parent.bottom
        height: 60
        color: "white"
        border.color: "#e5e7eb"
        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: 18
            anchors.rightMargin: 18
            Label {
                Layout.fillWidth: true
                objectName: "applyStatus"
                wrapMode: Text.WordWrap
                color: page.settings.valid && !page.settings.applyBlocked ? "#6b7280" : "#b91c1c"
                text: !page.settings.valid ? qsTr("Fix the highlighted values first.")
                    : page.settings.applyBlocked
                      ? qsTr("The loaded model would not start with these cache values (see the preview); change them to apply.")
                    : page.settings.dirty ? qsTr("Changes are not applied yet.") : ""
            }
            Button {
                text: qsTr("Reset to defaults")
                font.capitalization: Font.MixedCase
                flat: true
                onClicked: page.settings.resetToDefaults()
            }
            Button {
                text: qsTr("Revert")
                font.capitalization: Font.MixedCase
                objectName: "revertButton"
                // Also with only refused values: Revert drops them.
                enabled: page.settings.dirty || !page.settings.valid
                onClicked: page.settings.revert()
            }
            Button {
                objectName: "applyButton"
                text: qsTr("Apply")
                font.capitalization: Font.MixedCase
                highlighted: true
                Material.elevation: 0
                enabled: page.settings.canApply
                onClicked: {
                    if (!page.settings.applyReloads) {
                        page.settings.apply()
                        return
                    }
                    page.beforeReload(qsTr("Applying these settings reloads the model."), qsTr("Apply"),
                                      () => page.settings.apply())
                }
            }
        }
    }
}
