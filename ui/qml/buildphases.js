// The pack builder's phases (packbuilder/pack_builder.h, BuildProgress::phase) as the studio
// names them, for the first-run panel and the convert wizard; unknown phases read "Preparing".
.pragma library

function text(p) {
  switch (p) {
    case 'plan':
      return qsTr('Planning the Expert Pack')
      case 'preflight': return qsTr('Checking free space and direct I/O')
      case 'dense': return qsTr('Writing the dense weights')
      case 'experts': return qsTr('Writing the experts')
      case 'finalize': return qsTr('Finalising the pack')
      case 'verify': return qsTr('Verifying the pack')
      case 'done': return qsTr('Pack ready')
      case 'open': return qsTr('Opening the model')
      case 'waiting': return qsTr(
          'Waiting for the benchmark to finish: it has the memory until then') default: return qsTr('Preparing')
  }
}
