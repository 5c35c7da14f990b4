/**
 * The demo's timeline chart, read back as a person reads it: no two pieces of text overlap
 * (marker labels of faults and events a few milliseconds apart, a long subtitle, axis and tick
 * labels, the legend), no marker line runs through a label, everything is on the canvas, and
 * each axis is named exactly as its series in the legend.
 */
import { describe, expect, it } from 'vitest';
import { lineChart, wrapText, type Marker, type Series } from '../demo/svg.js';

interface Box {
  text: string;
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

/** Text boxes from the SVG, with the same generous glyph-width estimate the chart uses. */
function textBoxes(svg: string): Box[] {
  const boxes: Box[] = [];
  for (const m of svg.matchAll(/<text ([^>]*)>([^<]*)<\/text>/g)) {
    const attrs = m[1]!;
    const text = m[2]!.replace(/&[a-z]+;/g, '_');
    const num = (name: string) => Number(new RegExp(`(?:^| )${name}="([-\\d.]+)"`).exec(attrs)?.[1]);
    const inherited = /font-size="(\d+)"/.exec(attrs)?.[1];
    // Texts without their own font-size inherit their group's: 11 for ticks and markers, 12 for the legend.
    const size = inherited ? Number(inherited) : 11.5;
    const bold = attrs.includes('font-weight="bold"') ? 1.1 : 1;
    const w = text.length * size * 0.6 * bold;
    const anchor = /text-anchor="(\w+)"/.exec(attrs)?.[1] ?? 'start';
    const x = num('x');
    const y = num('y');
    const start = anchor === 'middle' ? x - w / 2 : anchor === 'end' ? x - w : x;
    if (/rotate\((-?90)/.test(attrs)) {
      // Rotated about (x, y): the run of text becomes vertical, centred on y.
      const down = /rotate\(90/.test(attrs);
      boxes.push({ text, x0: down ? x - size * 0.2 : x - size * 0.8, x1: down ? x + size * 0.8 : x + size * 0.2, y0: y - w / 2, y1: y + w / 2 });
    } else {
      boxes.push({ text, x0: start, x1: start + w, y0: y - size * 0.8, y1: y + size * 0.25 });
    }
  }
  return boxes;
}

const overlaps = (a: Box, b: Box) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

function markerLines(svg: string): Array<{ x: number; y1: number; y2: number }> {
  const group = svg.split('<g ').find((g) => g.includes('stroke-width="1.2"')) ?? '';
  return [...group.matchAll(/<line x1="([-\d.]+)" y1="([-\d.]+)" x2="[-\d.]+" y2="([-\d.]+)"/g)].map((m) => ({ x: Number(m[1]), y1: Number(m[2]), y2: Number(m[3]) }));
}

/** Like the demo's: two faults, and the events that follow each within milliseconds. */
function demoChart(markers: Marker[]): string {
  const ops: [number, number][] = [];
  const errs: [number, number][] = [];
  for (let t = 0; t <= 20; t += 0.25) {
    ops.push([t, t > 6 && t < 7 ? 0 : 9000 + (t % 3) * 500]);
    errs.push([t, t > 6 && t < 7 ? 40 : 0]);
  }
  const series: Series[] = [
    { name: 'acknowledged writes / s', color: '#1f77b4', points: ops, step: true, fillOpacity: 0.12 },
    { name: 'failed commands per 250 ms', color: '#d62728', points: errs, axis: 'right', step: true },
  ];
  return lineChart({
    title: 'redis-ha-pool SentinelPool under a SENTINEL FAILOVER and a SIGKILL of the master',
    subtitle:
      '16 workers of idempotent SETs; 1,234,567 acked, 1,234 failed, 0 acked writes missing on the final master; 250 ms buckets; ' +
      'a subtitle long enough to need a second line on a chart of this width',
    xLabel: 'seconds since the load started',
    xMin: 0,
    xMax: 20,
    series,
    markers,
  });
}

const MARKERS: Marker[] = [
  { x: 5, label: 'SENTINEL FAILOVER', color: '#d62728' },
  { x: 5.02, label: 'failover-start', color: '#ff7f0e', dash: '4 3' },
  { x: 5.9, label: 'failover -> :6380 (pubsub)', color: '#2ca02c' },
  { x: 6.0, label: '+switch-master', color: '#7f7f7f', dash: '2 3' },
  { x: 12, label: 'SIGKILL :6380', color: '#d62728' },
  { x: 13.1, label: 'failover-start', color: '#ff7f0e', dash: '4 3' },
  { x: 13.2, label: 'failover -> :6381 (pubsub)', color: '#2ca02c' },
  { x: 13.21, label: '+switch-master', color: '#7f7f7f', dash: '2 3' },
  { x: 19.9, label: 'failover-abort', color: '#9467bd', dash: '4 3' },
];

describe('the failover timeline chart', () => {
  const svg = demoChart(MARKERS);
  const boxes = textBoxes(svg);

  it('has no overlapping text', () => {
    const clashes: string[] = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) if (overlaps(boxes[i]!, boxes[j]!)) clashes.push(`'${boxes[i]!.text}' / '${boxes[j]!.text}'`);
    }
    expect(clashes).toEqual([]);
  });

  it('runs no marker line through a label, and keeps all text on the canvas', () => {
    const lines = markerLines(svg);
    expect(lines).toHaveLength(MARKERS.length);
    for (const l of lines) {
      const crossed = boxes.filter((b) => b.x0 - 1 < l.x && l.x < b.x1 + 1 && b.y0 < l.y2 && l.y1 < b.y1).map((b) => b.text);
      expect(crossed).toEqual([]);
    }
    for (const b of boxes) {
      expect(b.x0, b.text).toBeGreaterThanOrEqual(0);
      expect(b.x1, b.text).toBeLessThanOrEqual(1100);
      expect(b.y0, b.text).toBeGreaterThanOrEqual(0);
      expect(b.y1, b.text).toBeLessThanOrEqual(520);
    }
  });

  it('names each axis as its series in the legend', () => {
    const texts = boxes.map((b) => b.text);
    expect(texts).toContain('acknowledged writes / s'); // left axis
    expect(texts).toContain('acknowledged writes / s (left axis)'); // legend
    expect(texts).toContain('failed commands per 250 ms'); // right axis
    expect(texts).toContain('failed commands per 250 ms (right axis)');
  });

  it('wraps a long subtitle instead of running off the chart', () => {
    expect(wrapText('a b c', 12, 1000)).toEqual(['a b c']);
    const lines = wrapText('word '.repeat(60).trim(), 12, 300);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l.length * 12 * 0.6).toBeLessThanOrEqual(300);
    const subtitle = [...svg.matchAll(/<text x="78" y="[\d.]+" [^>]*font-size="12" fill="#555">([^<]*)<\/text>/g)].map((m) => m[1]);
    expect(subtitle.length).toBeGreaterThan(1);
    expect(subtitle.join(' ')).toContain('0 acked writes missing on the final master; 250 ms buckets; a subtitle long enough');
  });
});
