// Axis ticks at 1, 2 or 5 × 10ᵏ steps, for the bar charts and the scaling charts' linear axes (uPlot's own
// spacing rule can leave a narrow range with a single labelled tick).

// The step of about `count` ticks over `span`.
export function niceStep(span, count) {
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw * (1 - 1e-12));
}

// Every multiple of the step inside [min, max]: at least two ticks for any range wider than zero.
export function ticksBetween(min, max, count = 4) {
  if (!(max > min)) return [min];
  let step = niceStep(max - min, count);
  let ticks = [];
  for (;;) {
    ticks = [];
    for (let v = Math.ceil(min / step - 1e-9) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
    if (ticks.length >= 2 || step < (max - min) * 1e-6) return ticks;
    step = niceStep(max - min, count * 2.5); // a narrow range between two round numbers: finer steps
  }
}

// Ticks from 0 to at least `max` (the last one at or above it), for a bar chart's value axis.
export function ticksFromZero(max, count = 5) {
  if (!(max > 0)) return [0, 1];
  const step = niceStep(max, count);
  const ticks = [];
  for (let k = 0; ; k++) {
    const v = Number((k * step).toPrecision(12));
    ticks.push(v);
    if (v >= max) return ticks;
  }
}
