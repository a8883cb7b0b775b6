// Round chart axes: a value axis from 0 to `v` gets a step of 1, 2, 2.5 or 5 times a power of
// ten (about five intervals), a maximum that is a whole number of steps at or above `v`, and
// labels with as many decimals as the step needs ("0 100 200 300", "0.0 0.2 ... 1.0"), instead
// of QtCharts' even division of an arbitrary maximum ("0 63 127 190 253").
.pragma library

function step(v) {
  const raw = Math.max(Math.abs(v), 1e-9) / 5
  const p = Math.pow(10, Math.floor(Math.log10(raw)))
  for (const m of [1, 2, 2.5, 5]) {
    if (m * p >= raw * (1 - 1e-9)) return m * p
  }
  return 10 * p
}

function max(v) {
  const s = step(v)
  return Math.max(s, Math.ceil(v / s - 1e-9) * s)
}

function ticks(v) {
  return Math.round(max(v) / step(v)) + 1
}

// printf-style format for the labels: decimals of the step (2.5 -> 1, 0.25 -> 2, 20 -> 0).
function format(v) {
  const s = step(v)
  let d = 0
  while (d < 6 &&
         Math.abs(Math.round(s * Math.pow(10, d)) - s * Math.pow(10, d)) > 1e-6 * Math.pow(10, d))++ d
  return '%.' + d + 'f'
}

// The step between ticks of a token axis spanning `span` tokens: 1, 2 or 5 times a power of ten
// (about five intervals), at least one token: tokens are whole, so never step()'s 2.5.
function tokenStep(span) {
  const raw = Math.max(1, span) / 5
  const p = Math.pow(10, Math.floor(Math.log10(raw)))
  for (const m of [1, 2, 5]) {
    if (m * p >= raw * (1 - 1e-9)) return Math.max(1, m * p)
  }
  return Math.max(1, 10 * p)
}
