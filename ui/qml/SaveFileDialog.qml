import QtQuick
import Qt.labs.platform as Platform

// The desktop's own save dialog (Qt Labs Platform: the platform's dialog where there is one,
// else QFileDialog; the studio is a QApplication), opened on a suggested file. Qt 6.4's
// QML-drawn dialog joined a typed full path to its current folder ("/work//tmp/x.md"), kept
// Save disabled until Enter, and chose the highlighted child of a folder.
Platform.FileDialog {
    fileMode: Platform.FileDialog.SaveFile
    // Opens in the suggested file's folder with its name filled in. (The file is set once the
    // dialog is open: Qt Labs' dialog drops one set before it exists.)
    function openSuggesting(file) {
        const url = file.toString()
        folder = url.substring(0, url.lastIndexOf("/"))
        open()
        currentFile = file
    }
}
