import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import MoePack.Ui

ApplicationWindow {
    id: window
    width: 1100
    height: 760
    visible: true
    title: inspector.modelName.length > 0 ? qsTr("MoePack Studio — %1").arg(inspector.modelName)
                                          : qsTr("MoePack Studio")

    property alias inspector: inspector
    required property string initialModel

    ModelInspector {
        id: inspector
        Component.onCompleted: if (window.initialModel.length > 0) load(window.initialModel)
    }

    header: ToolBar {
        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: 12
            anchors.rightMargin: 12
            Label {
                text: qsTr("MoePack Studio")
                font.bold: true
                font.pixelSize: 16
            }
            Label {
                Layout.fillWidth: true
                text: inspector.path
                elide: Text.ElideMiddle
                horizontalAlignment: Text.AlignRight
                opacity: 0.7
            }
        }
    }

    ModelPage {
        anchors.fill: parent
        anchors.margins: 12
        inspector: inspector
    }
}
