// The pack builder's phases (packbuilder/pack_builder.h, BuildProgress::phase) as the studio
// names them, for the first-run panel and the convert wizard; unknown phases read "Preparing".
.pragma library

const names = {
  'plan': () => qsTr('Planning the Expert Pack'),
  'preflight': () => qsTr('Checking free space and direct I/O'),
  'dense': () => qsTr('Writing the dense weights'),
  'experts': () => qsTr('Writing the experts'),
  'finalize': () => qsTr('Finalising the pack'),
  'verify': () => qsTr('Verifying the pack'),
  'done': () => qsTr('Pack ready'),
  'open': () => qsTr('Opening the model'),
  'waiting': () => qsTr('Waiting for the benchmark to finish: it has the memory until then'),
};

function text(p) {
  const f = names[p];
  return f ? f() : qsTr('Preparing');
}
