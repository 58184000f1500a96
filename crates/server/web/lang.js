// The page's one language setting, shared by every panel (runner, course, evaluation): kept in localStorage
// ('forge.lang') and announced by the 'forge:lang' event, so the panels switch together and a reload keeps it.
const KEY = 'forge.lang';

export function currentLang() { return localStorage.getItem(KEY) === 'zh' ? 'zh' : 'en'; }

export function setLang(lang) {
  localStorage.setItem(KEY, lang);
  document.dispatchEvent(new CustomEvent('forge:lang', { detail: lang }));
}

export function onLangChange(fn) {
  document.addEventListener('forge:lang', (e) => fn(e.detail === 'zh' ? 'zh' : 'en'));
}
