// Who wrote each decision of the run: per decision, the fields the runtime fixed in the prefix it writes before the
// policy's first token, the fields the policy (model or grammar-only draw) wrote after it, the answer the runtime
// wrote from the policy's slots and the task's template, and of the policy's tokens
// how many the decoder's masks forced — or that the share is unknown and why (a server applies the grammar unseen).
import { $, el } from './dom.js';
import { t } from './i18n.js';
import { S } from './state.js';

// A decision event (decision.valid / decision.repaired) paired with the model call that produced it.
function decisions() {
  const out = [];
  let call = null;
  for (const e of S.events) {
    if (e.phase === 'model.completed' || e.phase === 'model.repair.completed') call = e;
    if ((e.phase === 'decision.valid' || e.phase === 'decision.repaired') && e.data && e.data.written) {
      out.push({ event: e, call: call && call.step === e.step ? call.data : null });
    }
  }
  return out;
}

// `12 forced / 8 choice (60 % forced)`, or `unknown: <reason>`.
export function shareText(share) {
  if (!share) return t('share_none');
  if (share.status === 'unknown') return `${t('share_unknown')}: ${share.reason}`;
  const n = share.forced + share.choice;
  const pct = n ? ` (${Math.round((100 * share.forced) / n)} % ${t('share_forced')})` : '';
  return `${share.forced} ${t('share_forced')} / ${share.choice} ${t('share_choice')}${pct}`;
}

function fields(decision, names) {
  return names.map((k) => el('li', { class: 'mono small', 'data-field': k }, el('strong', { text: `${k}: ` }), JSON.stringify(decision[k])));
}

function card({ event, call }) {
  const d = event.data;
  const w = d.written;
  return el('div', { class: 'written-decision', 'data-testid': 'written-decision', 'data-step': event.step, 'data-attempt': event.attempt },
    el('div', { class: 'written-head' }, el('strong', { text: `${t('step')} ${event.step}` }),
      event.attempt ? el('span', { class: 'muted', text: ` ${t('attempt')} ${event.attempt}` }) : null, ' · ', d.summary || ''),
    el('div', { class: 'written-runtime', 'data-testid': 'written-runtime' },
      el('span', { class: 'written-label', text: t('written_runtime') }),
      w.runtime.length ? el('ul', {}, ...fields(d.decision, w.runtime)) : el('span', { class: 'muted', text: ` ${t('written_runtime_none')}` }),
      w.runtime_prefix ? el('div', { class: 'mono small muted', text: `${t('written_prefix')}: ${w.runtime_prefix}` }) : null),
    el('div', { class: 'written-policy', 'data-testid': 'written-policy' },
      el('span', { class: 'written-label', text: t('written_policy') }),
      el('ul', {}, ...fields(d.decision, w.policy))),
    w.composed && w.composed.length ? el('div', { class: 'written-composed', 'data-testid': 'written-composed' },
      el('span', { class: 'written-label', text: t('written_composed') }),
      el('ul', {}, ...fields(d.decision, w.composed))) : null,
    el('div', { class: 'written-share small', 'data-testid': 'written-share', 'data-status': call && call.share ? call.share.status : 'none' },
      `${t('share_tokens')}: ${shareText(call && call.share)}`));
}

export function renderWritten() {
  const box = $('written');
  if (!box) return;
  const list = decisions();
  if (!list.length) {
    box.replaceChildren(el('p', { class: 'muted', text: t('written_empty') }));
    return;
  }
  box.replaceChildren(el('p', { class: 'muted small', text: t('written_hint') }), ...list.map(card));
}
