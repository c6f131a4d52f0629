// A grouped bar chart in SVG: one group per shape, one bar per implementation, and an optional dashed line
// for a ceiling (the measured peak). Used for bench/results.json and for the live comparison, so both read
// the same way. SVG rather than a canvas: every bar is an element with its value in a <title> (a hover
// tooltip, and text for screen readers and tests), and it redraws crisply at any width.

import { ticksFromZero } from '../shared/ticks.js';

const NS = 'http://www.w3.org/2000/svg';
export const SERIES_COLOURS = ['#3b4cca', '#8e9be8', '#e07a1f', '#2a9d8f', '#8d99ae', '#b5179e', '#6a4c93', '#c9a227'];

const colourOf = (series, k) => series.colour ?? SERIES_COLOURS[k % SERIES_COLOURS.length];
const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

function el(name, attrs = {}, text = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = text;
  return node;
}

// data: { groups: string[], series: [{ key, label, values: (number|null)[], colour? }], peak: { value, label } | null };
// a series without a colour takes the palette's colour for its position.
// options: { unit, title, groupTitle }. Draws into `container` (replacing what was there) and redraws when
// the container's width changes.
export function drawBarChart(container, data, { unit = 'GFLOP/s', title = '', groupTitle = '' } = {}) {
  const render = () => {
    const frame = chartFrame(Math.max(300, Math.floor(container.clientWidth || 600)), data);
    const svg = el('svg', { viewBox: `0 0 ${frame.width} ${frame.height}`, width: frame.width, height: frame.height, role: 'img', class: 'bar-chart', 'aria-label': title });
    drawValueAxis(svg, frame, unit);
    data.groups.forEach((group, g) => {
      drawBarGroup(svg, frame, data.series, g, group, { unit, groupTitle });
      svg.append(groupLabel(frame, g, group));
    });
    if (groupTitle) {
      svg.append(el('text', { x: frame.margin.left + frame.plotW / 2, y: frame.height - 6, 'text-anchor': 'middle', class: 'axis-label' }, groupTitle));
    }
    svg.append(el('line', { x1: frame.margin.left, x2: frame.width - frame.margin.right, y1: frame.y(0), y2: frame.y(0), class: 'baseline' }));
    if (data.peak) svg.append(peakLine(frame, data.peak, unit));
    container.replaceChildren(svg, chartKey(data, unit));
  };
  render();
  redrawOnResize(container, render);
}

// The chart's geometry at this width: its size, the plot's margins, the value axis's ticks, y(value) → the
// height in pixels, and the width of a group and of a bar.
function chartFrame(width, data) {
  const narrow = width < 520;
  // Group labels that would not fit side by side (a phone) are slanted, with room made for them below.
  const longest = Math.max(...data.groups.map((g) => g.length));
  const slant = (width - 60) / data.groups.length < longest * 6.8 + 8;
  const height = (narrow ? 240 : 280) + (slant ? longest * 5 - 10 : 0);
  const margin = { top: 16, right: 12, bottom: slant ? 34 + longest * 5 : 44, left: 48 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const values = data.series.flatMap((s) => s.values).filter(isBarValue);
  const ticks = ticksFromZero(Math.max(...values, data.peak?.value ?? 0, 1e-9) * 1.05);
  const top = ticks[ticks.length - 1];
  const y = (v) => margin.top + plotH * (1 - v / top);
  const groupW = plotW / data.groups.length;
  const barW = Math.min(56, (groupW * 0.82) / data.series.length);
  return { width, height, margin, plotW, plotH, slant, ticks, y, groupW, barW };
}

// A value that is missing (null) or not finite draws no bar.
const isBarValue = (v) => typeof v === 'number' && Number.isFinite(v);

// The grid lines with their tick labels, and the unit along the axis.
function drawValueAxis(svg, { width, margin, plotH, ticks, y }, unit) {
  for (const t of ticks) {
    svg.append(el('line', { x1: margin.left, x2: width - margin.right, y1: y(t), y2: y(t), class: 'grid' }));
    svg.append(el('text', { x: margin.left - 6, y: y(t) + 4, 'text-anchor': 'end', class: 'tick' }, String(t)));
  }
  svg.append(el('text', { x: 12, y: margin.top + plotH / 2, transform: `rotate(-90 12 ${margin.top + plotH / 2})`, 'text-anchor': 'middle', class: 'axis-label' }, unit));
}

// Group g's bars, one per series, each with its value in a <title> and, where the bar is wide enough, on top.
function drawBarGroup(svg, { margin, groupW, barW, y }, series, g, group, { unit, groupTitle }) {
  const x0 = margin.left + g * groupW + (groupW - barW * series.length) / 2;
  series.forEach((s, k) => {
    const v = s.values[g];
    if (!isBarValue(v)) return;
    const rect = el('rect', {
      x: x0 + k * barW + 0.5,
      y: y(v),
      width: Math.max(1, barW - 1),
      height: Math.max(0, y(0) - y(v)),
      fill: colourOf(s, k),
      'data-series': s.key,
      'data-group': group,
      'data-value': v,
    });
    rect.append(el('title', {}, `${s.label}, ${groupTitle ? `${groupTitle} ` : ''}${group}: ${fmt(v)} ${unit}`));
    svg.append(rect);
    if (barW >= 26) svg.append(el('text', { x: x0 + (k + 0.5) * barW, y: y(v) - 3, 'text-anchor': 'middle', class: 'value' }, fmt(v)));
  });
}

// Group g's name under its bars, slanted when the names would not fit side by side.
function groupLabel({ margin, groupW, height, slant }, g, group) {
  const lx = margin.left + (g + 0.5) * groupW;
  const ly = height - margin.bottom + 16;
  return slant
    ? el('text', { x: lx, y: ly, 'text-anchor': 'end', transform: `rotate(-35 ${lx} ${ly})`, class: 'group' }, group)
    : el('text', { x: lx, y: ly, 'text-anchor': 'middle', class: 'group' }, group);
}

// The ceiling as a dashed line across the plot, its value in a <title>.
function peakLine({ width, margin, y }, peak, unit) {
  const py = y(peak.value);
  const line = el('line', { x1: margin.left, x2: width - margin.right, y1: py, y2: py, class: 'peak', 'data-value': peak.value });
  line.append(el('title', {}, `${peak.label}: ${fmt(peak.value)} ${unit}`));
  return line;
}

// The key under the chart, the peak line's among it: written on the plot, its label lay across bars.
function chartKey(data, unit) {
  const legend = document.createElement('ul');
  legend.className = 'bar-legend';
  data.series.forEach((s, k) => {
    const li = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = colourOf(s, k);
    li.append(swatch, s.label);
    legend.append(li);
  });
  if (data.peak) {
    const li = document.createElement('li');
    li.className = 'peak-key';
    const swatch = document.createElement('span');
    swatch.className = 'swatch peak-swatch';
    li.append(swatch, `${data.peak.label}: ${fmt(data.peak.value)} ${unit}`);
    legend.append(li);
  }
  return legend;
}

// Calls render() again when the container's width changes, replacing the observer of an earlier chart drawn
// into the same container.
function redrawOnResize(container, render) {
  container.__barChartObserver?.disconnect();
  let lastWidth = container.clientWidth;
  let frame = null;
  // Redrawn in the next frame, not inside the observer's callback: a chart of a new height changes the layout
  // the observer is reporting on, and the browser then drops notifications (and says so as an error event).
  const observer = new ResizeObserver(() => {
    if (container.clientWidth === lastWidth || frame !== null) return;
    frame = requestAnimationFrame(() => {
      frame = null;
      lastWidth = container.clientWidth;
      render();
    });
  });
  observer.observe(container);
  container.__barChartObserver = observer;
}
