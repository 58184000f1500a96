// The run's chart: the plot tool's PNG artifact, and the same bar chart drawn as SVG from the plot spec it was rendered
// from (values and the average on hover).
import { $, el, fmtNum, svg } from './dom.js';
import { t } from './i18n.js';
import { S } from './state.js';

function findPlotSpec() {
  for (let i = S.events.length - 1; i >= 0; i--) {
    const d = S.events[i].data || {};
    const o = d.observation;
    if (o && o.tool === 'plot' && o.result && o.result.spec) return o.result.spec;
  }
  return null;
}


// The bar chart drawn from the plot tool's own spec (labels, values, average, title, y label): the same
// observation the PNG was rendered from. Values and the average show on hover (<title>).
function chartSvg(spec) {
  const labels = spec.labels || []; const values = (spec.values || []).map(Number);
  const W = 640, H = 360, L = 56, R = 16, T = 36, B = 64;
  const pw = W - L - R, ph = H - T - B;
  const avg = typeof spec.average === 'number' ? spec.average : null;
  const top = Math.max(0, ...values, avg === null ? 0 : avg);
  const bottom = Math.min(0, ...values);
  const span = (top - bottom) || 1;
  const y = (v) => T + ph - ((v - bottom) / span) * ph;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': spec.title || 'chart', 'data-testid': 'chart-svg-root' });
  root.append(svg('text', { x: W / 2, y: 20, 'text-anchor': 'middle', class: 'chart-title' }, spec.title || ''));
  root.append(svg('line', { x1: L, y1: T, x2: L, y2: T + ph, class: 'axis' }), svg('line', { x1: L, y1: y(0), x2: L + pw, y2: y(0), class: 'axis' }));
  for (let i = 0; i <= 4; i++) {
    const v = bottom + (span * i) / 4;
    root.append(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, fmtNum(v)));
  }
  root.append(svg('text', { x: 14, y: T + ph / 2, transform: `rotate(-90 14 ${T + ph / 2})`, 'text-anchor': 'middle' }, spec.y_label || ''));
  const slot = pw / Math.max(1, values.length);
  values.forEach((v, i) => {
    const x = L + i * slot + slot * 0.15; const w = slot * 0.7;
    const y0 = y(Math.max(0, v)); const h = Math.abs(y(v) - y(0));
    root.append(svg('rect', { x, y: y0, width: w, height: Math.max(h, 1), class: 'bar-rect', 'data-label': labels[i], 'data-value': v },
      svg('title', {}, `${labels[i]}: ${fmtNum(v)}`)));
    root.append(svg('text', { x: x + w / 2, y: T + ph + 16, 'text-anchor': 'middle', class: 'bar-label' }, labels[i]));
  });
  if (avg !== null) {
    root.append(svg('line', { x1: L, y1: y(avg), x2: L + pw, y2: y(avg), class: 'avg-line', 'data-value': avg },
      svg('title', {}, `${t('chart_average')}: ${fmtNum(avg)}`)));
    root.append(svg('text', { x: L + pw - 4, y: y(avg) - 6, 'text-anchor': 'end', class: 'avg-label' }, `${t('chart_average')} ${fmtNum(avg)}`));
  }
  return root;
}

export function renderChart() {
  const box = $('chart-box');
  const arts = (S.result && S.result.artifacts) || [];
  const png = arts.find((a) => a.media_type === 'image/png') || arts[0];
  if (png) {
    const existing = box.querySelector('img');
    if (!existing || existing.dataset.id !== png.id) {
      box.replaceChildren(el('div', { class: 'muted small', text: t('chart_png_h') }),
        el('img', { src: `/artifacts/${encodeURIComponent(png.id)}`, alt: 'plot', 'data-id': png.id, 'data-testid': 'chart-img' }),
        el('div', { class: 'mono small', text: `${png.id} · ${png.bytes} ${t('bytes')} · blake3 ${String(png.blake3 || '').slice(0, 16)}…` }));
    }
  } else {
    box.replaceChildren(el('p', { class: 'muted', text: t('chart_empty') }));
  }
  const spec = findPlotSpec();
  const drawn = $('chart-svg');
  const key = spec ? JSON.stringify(spec) + S.lang : '';
  if (drawn.dataset.key !== key) {
    drawn.dataset.key = key;
    drawn.replaceChildren(...(spec ? [el('div', { class: 'muted small', text: t('chart_svg_h') }), chartSvg(spec)] : []));
  }
  $('chart-spec').hidden = !spec;
  $('chart-spec').textContent = spec ? JSON.stringify(spec, null, 2) : '';
}
