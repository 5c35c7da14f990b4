/**
 * A tiny, dependency-free SVG line-chart writer for the failover demo.
 *
 * One chart: a time axis (seconds), up to two y axes (series pick `axis: 'left' | 'right'`),
 * polyline series, and vertical markers whose labels are stacked in rows above the plot so
 * that markers close together in time never print on top of each other. Each y axis is named
 * after the series drawn on it, so the axis names and the legend cannot disagree; a title or
 * subtitle too long for the width wraps onto more lines.
 */

export interface Series {
  /** Legend entry, and the name of the series' y axis. */
  name: string;
  color: string;
  /** [x, y] points in x order (x in the same unit as the axis, e.g. seconds). */
  points: ReadonlyArray<readonly [number, number]>;
  /** Which y axis the series is scaled on. Default 'left'. */
  axis?: 'left' | 'right';
  /** Stroke width. Default 1.5. */
  width?: number;
  /** Draw as a step line (value held until the next point) instead of straight segments. */
  step?: boolean;
  /** Fill under the line with this opacity (0 = none). Default 0. */
  fillOpacity?: number;
}

export interface Marker {
  x: number;
  label: string;
  color: string;
  /** SVG stroke-dasharray, e.g. '4 3'. Default solid. */
  dash?: string;
}

export interface ChartOptions {
  title: string;
  subtitle?: string;
  xLabel: string;
  series: Series[];
  markers?: Marker[];
  /** Total size in px. Default 1100 x 520. */
  width?: number;
  height?: number;
  /** x range; default the data's extent. */
  xMin?: number;
  xMax?: number;
}

const FONT = 'font-family="Helvetica, Arial, sans-serif"';
/** Average glyph width of the 11 px label font, as a fraction of the font size (generous). */
const CHAR_W = 0.6;

export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** A "nice" step (1, 2, 2.5, 5 x 10^k) giving about `target` ticks over `span`. */
export function niceStep(span: number, target: number): number {
  if (!(span > 0)) return 1;
  const raw = span / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

/** Upper bound of an axis: the max rounded up to a nice step (at least `floor`). */
function niceMax(max: number, floor: number): { top: number; step: number } {
  const m = Math.max(max, floor);
  const step = niceStep(m, 5);
  return { top: Math.ceil(m / step) * step || step, step };
}

/** Short tick labels: 12000 -> 12k, 1500000 -> 1.5M. */
export function shortNumber(n: number): string {
  const a = Math.abs(n);
  const trim = (x: number) => String(Number(x.toFixed(1)));
  if (a >= 1e6) return `${trim(n / 1e6)}M`;
  if (a >= 1e3) return `${trim(n / 1e3)}k`;
  return trim(n);
}

/** Splits `text` into lines of at most `maxWidth` px at `fontSize` (estimated glyph widths). */
export function wrapText(text: string, fontSize: number, maxWidth: number): string[] {
  const perLine = Math.max(10, Math.floor(maxWidth / (fontSize * CHAR_W)));
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > perLine) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** Renders the chart as a standalone SVG document. */
export function lineChart(o: ChartOptions): string {
  const W = o.width ?? 1100;
  const H = o.height ?? 520;
  const markers = [...(o.markers ?? [])].sort((a, b) => a.x - b.x);
  const all = o.series.flatMap((s) => s.points.map((p) => p[0]));
  const xMin = o.xMin ?? Math.min(0, ...all);
  const xMax = o.xMax ?? Math.max(xMin + 1, ...all, ...markers.map((m) => m.x));
  const hasRight = o.series.some((s) => s.axis === 'right');

  const left = 78;
  const right = hasRight ? 70 : 24;
  const plotW = W - left - right;
  const sx = (x: number) => left + ((x - xMin) / (xMax - xMin)) * plotW;

  // Marker labels: rows between the title and the plot. A marker's line runs from its label's
  // row down to the plot, so a label may overlap neither another label of its row, nor the
  // line of a marker whose label sits in a row above it; and its own line may not cross a
  // label in a row below. Markers are placed left to right, each in the first row that fits.
  const labelFont = 11;
  const rowH = 15;
  const spans: { x0: number; x1: number; row: number; lineX: number }[] = [];
  let rows = 0;
  const placed = markers.map((m) => {
    const lineX = sx(m.x);
    const w = m.label.length * labelFont * CHAR_W + 6;
    let anchor: 'start' | 'end' = 'start';
    let x0 = lineX + 3;
    if (x0 + w > W - 4) {
      // Near the right edge: write the label to the left of its marker.
      anchor = 'end';
      x0 = lineX - 3 - w;
    }
    const x1 = x0 + w;
    const fits = (row: number) =>
      spans.every(
        (s) =>
          (s.row !== row || s.x1 + 4 <= x0 || x1 + 4 <= s.x0) && // same row: no overlap
          (s.row >= row || s.lineX < x0 - 2 || s.lineX > x1 + 2) && // a line from above crosses this label
          (s.row <= row || lineX < s.x0 - 2 || lineX > s.x1 + 2), // this line crosses a label below
      );
    let row = 0;
    while (row < rows && !fits(row)) row++;
    if (row === rows) rows++;
    spans.push({ x0, x1, row, lineX });
    return { m, row, anchor, tx: anchor === 'start' ? lineX + 3 : lineX - 3 };
  });
  const titleLines = wrapText(o.title, 16 * 1.1, W - left - 12); // bold: a little wider
  const subtitleLines = o.subtitle ? wrapText(o.subtitle, 12, W - left - 12) : [];
  const titleH = 12 + titleLines.length * 20 + subtitleLines.length * 16 + 6;
  const top = titleH + rows * rowH + 8;
  const legendH = 26;
  const bottom = 46 + legendH;
  const plotH = H - top - bottom;
  if (plotH < 80) throw new Error(`lineChart: ${rows} marker label rows leave no room for the plot; make the chart taller`);

  const axisMax = (axis: 'left' | 'right') =>
    niceMax(Math.max(0, ...o.series.filter((s) => (s.axis ?? 'left') === axis).flatMap((s) => s.points.map((p) => p[1]))), axis === 'left' ? 10 : 5);
  const L = axisMax('left');
  const R = axisMax('right');
  const sy = (y: number, axis: 'left' | 'right') => top + plotH - (y / (axis === 'left' ? L.top : R.top)) * plotH;

  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  titleLines.forEach((line, i) => out.push(`<text x="${left}" y="${28 + i * 20}" ${FONT} font-size="16" font-weight="bold" fill="#222">${escapeXml(line)}</text>`));
  subtitleLines.forEach((line, i) =>
    out.push(`<text x="${left}" y="${12 + titleLines.length * 20 + 10 + i * 16}" ${FONT} font-size="12" fill="#555">${escapeXml(line)}</text>`),
  );

  // Grid and axes.
  out.push(`<g ${FONT} font-size="11" fill="#444">`);
  for (let v = 0; v <= L.top + 1e-9; v += L.step) {
    const y = sy(v, 'left');
    out.push(`<line x1="${left}" y1="${fmt(y)}" x2="${left + plotW}" y2="${fmt(y)}" stroke="#e4e4e4"/>`);
    out.push(`<text x="${left - 6}" y="${fmt(y + 4)}" text-anchor="end">${shortNumber(v)}</text>`);
  }
  if (hasRight) {
    for (let v = 0; v <= R.top + 1e-9; v += R.step) {
      const y = sy(v, 'right');
      out.push(`<text x="${left + plotW + 6}" y="${fmt(y + 4)}">${shortNumber(v)}</text>`);
    }
  }
  const xs = niceStep(xMax - xMin, 12);
  for (let v = Math.ceil(xMin / xs) * xs; v <= xMax + 1e-9; v += xs) {
    const x = sx(v);
    out.push(`<line x1="${fmt(x)}" y1="${top}" x2="${fmt(x)}" y2="${top + plotH}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${fmt(x)}" y="${top + plotH + 18}" text-anchor="middle">${fmt(Number(v.toFixed(3)))}</text>`);
  }
  out.push(`<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`);
  out.push(`<text x="${left + plotW / 2}" y="${top + plotH + 36}" text-anchor="middle" font-size="12">${escapeXml(o.xLabel)}</text>`);
  const ly = top + plotH / 2;
  const axisName = (axis: 'left' | 'right') => o.series.filter((s) => (s.axis ?? 'left') === axis).map((s) => s.name).join(', ');
  out.push(`<text x="16" y="${ly}" text-anchor="middle" font-size="12" transform="rotate(-90 16 ${ly})">${escapeXml(axisName('left'))}</text>`);
  if (hasRight) {
    const rx = W - 14;
    out.push(`<text x="${rx}" y="${ly}" text-anchor="middle" font-size="12" transform="rotate(90 ${rx} ${ly})">${escapeXml(axisName('right'))}</text>`);
  }
  out.push('</g>');

  // Series, clipped to the plot.
  out.push(`<defs><clipPath id="plot"><rect x="${left}" y="${top}" width="${plotW}" height="${plotH}"/></clipPath></defs>`);
  out.push('<g clip-path="url(#plot)">');
  for (const s of o.series) {
    if (s.points.length === 0) continue;
    const axis = s.axis ?? 'left';
    const pts: string[] = [];
    s.points.forEach(([x, y], i) => {
      if (s.step && i > 0) pts.push(`${fmt(sx(x))},${fmt(sy(s.points[i - 1]![1], axis))}`);
      pts.push(`${fmt(sx(x))},${fmt(sy(y, axis))}`);
    });
    if (s.fillOpacity) {
      const base = fmt(sy(0, axis));
      const first = fmt(sx(s.points[0]![0]));
      const last = fmt(sx(s.points[s.points.length - 1]![0]));
      out.push(`<polygon points="${first},${base} ${pts.join(' ')} ${last},${base}" fill="${s.color}" fill-opacity="${s.fillOpacity}" stroke="none"/>`);
    }
    out.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${s.color}" stroke-width="${s.width ?? 1.5}" stroke-linejoin="round"/>`);
  }
  out.push('</g>');

  // Markers: a line through the plot, up to the label's row.
  out.push(`<g ${FONT} font-size="${labelFont}">`);
  for (const p of placed) {
    const x = fmt(sx(p.m.x));
    const ty = titleH + (p.row + 1) * rowH;
    const dash = p.m.dash ? ` stroke-dasharray="${p.m.dash}"` : '';
    out.push(`<line x1="${x}" y1="${ty - 10}" x2="${x}" y2="${top + plotH}" stroke="${p.m.color}" stroke-width="1.2"${dash}/>`);
    out.push(`<text x="${fmt(p.tx)}" y="${ty}" text-anchor="${p.anchor}" fill="${p.m.color}">${escapeXml(p.m.label)}</text>`);
  }
  out.push('</g>');

  // Legend under the x label.
  let lx = left;
  const legendY = H - 12;
  out.push(`<g ${FONT} font-size="12" fill="#333">`);
  for (const s of o.series) {
    out.push(`<line x1="${lx}" y1="${legendY - 4}" x2="${lx + 22}" y2="${legendY - 4}" stroke="${s.color}" stroke-width="3"/>`);
    const text = `${s.name}${hasRight ? (s.axis === 'right' ? ' (right axis)' : ' (left axis)') : ''}`;
    out.push(`<text x="${lx + 28}" y="${legendY}">${escapeXml(text)}</text>`);
    lx += 28 + text.length * 12 * CHAR_W + 24;
  }
  out.push('</g>');
  out.push('</svg>');
  return out.join('\n') + '\n';
}
