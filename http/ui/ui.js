// hoard's browser UI. The server sends a plain HTML listing (which works
// without script); this module takes it over: it reads ?ls JSON and
// builds the listing, the tools and the uploader. Every name from the
// server is put in the page as text (textContent), never as markup.
import { Uploader, fmtSize, fmtTime } from './up2k.js';

const loc = document.body.dataset.loc || '';

// h builds an element: attrs are properties (on*, className, ...) or,
// for names with a dash, attributes; string children become text nodes.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.includes('-') || k === 'role' || k === 'for') el.setAttribute(k, v === true ? '' : v);
    else el[k] = v;
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    el.append(typeof k === 'string' || typeof k === 'number' ? document.createTextNode(String(k)) : k);
  }
  return el;
}

const IMG = /\.(jpe?g|png|gif|webp|avif|bmp|svg|ico|heic|jxl)$/i;
const VID = /\.(mp4|webm|mkv|mov|m4v|ogv|avi)$/i;
const AUD = /\.(mp3|ogg|opus|flac|wav|m4a|aac|wma)$/i;
const MD = /\.(md|markdown)$/i;
const TXT = /\.(txt|log|json|csv|tsv|ini|conf|cfg|ya?ml|toml|xml|html?|css|js|mjs|ts|go|py|rs|c|h|cpp|hpp|java|kt|sh|bash|zsh|rb|pl|php|sql|diff|patch|nfo|srt|vtt|env|gitignore|mod|sum)$/i;

const S = {
  path: location.pathname, // URL path of the folder shown, escaped, ends with /
  ls: null,
  sort: JSON.parse(localStorage.getItem('hoard.sort') || '{"key":"name","dir":1}'),
  view: localStorage.getItem('hoard.view') || 'list',
  sel: new Set(), // hrefs
  cursor: -1,
  rows: [], // entries in shown order
  search: null, // {q, n, rep, err}
};

const app = document.getElementById('app');
const top = document.getElementById('top');
const live = h('div', { className: 'sr', 'aria-live': 'polite', role: 'status' });
document.body.append(live);
// a keyboard's way past the header and the folder tree
app.tabIndex = -1;
document.body.prepend(h('a', { className: 'skip', href: '#app', onclick: (e) => { e.preventDefault(); app.focus(); } }, 'skip to the files'));
const say = (msg) => { live.textContent = msg; };

// ---- requests ----

async function req(method, url, body, type) {
  const opt = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) { opt.body = body; opt.headers['Content-Type'] = type; }
  const r = await fetch(url, opt);
  const text = await r.text();
  return { ok: r.ok, status: r.status, text };
}

function errText(r) {
  try { const j = JSON.parse(r.text); if (j && j.error) return j.error; } catch { /* text */ }
  return (r.text || 'HTTP ' + r.status).trim();
}

function decPath(p) { try { return decodeURIComponent(p); } catch { return p; } }

// ---- modal dialogs (in the page: no window.prompt) ----

function modal(title, fields, okLabel) {
  return new Promise((resolve) => {
    const inputs = fields.map((f, i) => h('input', { id: 'mf' + i, type: 'text', value: f.value || '', spellcheck: false }));
    const form = h('form', { method: 'dialog', className: 'modal' },
      h('h2', {}, title),
      fields.map((f, i) => h('p', {}, h('label', { for: 'mf' + i }, f.label), h('br'), inputs[i])),
      h('p', { className: 'btns' }, h('button', { value: 'ok', className: 'primary' }, okLabel || 'ok'), ' ', h('button', { value: 'cancel', type: 'button', onclick: () => dlg.close('cancel') }, 'cancel')));
    const dlg = h('dialog', { 'aria-label': title }, form);
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'ok' ? inputs.map((x) => x.value) : null);
    });
    document.body.append(dlg);
    dlg.showModal();
    if (inputs[0]) { inputs[0].focus(); inputs[0].select(); }
  });
}

function confirmBox(title, lines) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { 'aria-label': title }, h('form', { method: 'dialog', className: 'modal' },
      h('h2', {}, title), h('ul', {}, lines.slice(0, 20).map((l) => h('li', {}, l)), lines.length > 20 ? h('li', {}, `… and ${lines.length - 20} more`) : null),
      h('p', { className: 'btns' }, h('button', { value: 'ok', className: 'danger' }, 'yes'), ' ', h('button', { value: 'no', autofocus: true }, 'no'))));
    dlg.addEventListener('close', () => { dlg.remove(); resolve(dlg.returnValue === 'ok'); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

function toast(msg, bad) {
  // an error is an alert (read out at once); a success a polite status
  const t = h('div', { className: 'toast' + (bad ? ' bad' : ''), role: bad ? 'alert' : 'status' }, msg);
  let box = document.querySelector('.toasts');
  if (!box) { box = h('div', { className: 'toasts' }); document.body.append(box); }
  // at most five at once (a failed move of many items says so per item):
  // the oldest goes first; a click dismisses one
  while (box.children.length >= 5) box.firstElementChild.remove();
  t.addEventListener('click', () => t.remove());
  box.append(t);
  setTimeout(() => t.remove(), bad ? 8000 : 3000);
}

// ---- header: breadcrumb, search ----

function crumbs() {
  const nav = top.querySelector('.crumbs');
  nav.replaceChildren(h('a', { href: loc + '/' }, '/'));
  let href = loc + '/';
  const rel = S.path.slice(loc.length).split('/').filter(Boolean);
  rel.forEach((p, i) => {
    href += p + '/';
    const a = h('a', { href }, decPath(p));
    if (i === rel.length - 1) a.setAttribute('aria-current', 'page');
    nav.append(a, '/');
  });
  document.title = decPath(S.path.slice(loc.length)) || '/';
}

const searchInput = h('input', { type: 'search', id: 'q', name: 'q', placeholder: 'search', autocomplete: 'off', 'aria-label': 'search' });
const searchForm = h('form', { className: 'search', role: 'search', onsubmit: (e) => { e.preventDefault(); doSearch(searchInput.value, 100); } },
  searchInput, ' ', h('button', {}, 'search'),
  h('details', { className: 'help' }, h('summary', { 'aria-label': 'search help', title: 'search help' }, '?'), h('div', {},
    h('p', {}, 'All terms must match. Examples:'),
    h('ul', {},
      h('li', {}, h('code', {}, 'holiday 2024'), ' — words in the path'),
      h('li', {}, h('code', {}, '"exact phrase"'), ', ', h('code', {}, '*.log'), ' — phrase, wildcard'),
      h('li', {}, h('code', {}, 'size:>10M'), ', ', h('code', {}, 'date:>2024-01-01')),
      h('li', {}, h('code', {}, 'path:music/'), ', ', h('code', {}, 'ext:jpg,png')),
      h('li', {}, h('code', {}, 'artist:"Some One"'), ', ', h('code', {}, 'year:1999'), ', ', h('code', {}, 'dur:>300'))),
  )));
if (!('share' in document.body.dataset)) top.insertBefore(searchForm, top.querySelector('.acct'));

async function doSearch(q, n) {
  q = q.trim();
  if (!q) { S.search = null; render(); return; }
  S.search = { q, n, busy: true };
  render();
  const r = await req('POST', S.path, JSON.stringify({ q, n }), 'application/json');
  if (!S.search || S.search.q !== q) return;
  if (!r.ok) S.search = { q, n, err: errText(r) };
  else S.search = { q, n, rep: JSON.parse(r.text) };
  render();
  say(S.search.err ? 'search failed: ' + S.search.err : `${S.search.rep.hits.length} hits`);
}

function renderSearch() {
  const s = S.search;
  const box = h('section', { className: 'results', 'aria-label': 'search results' },
    h('h2', {}, 'search: ', h('q', {}, s.q), ' ', h('button', { onclick: () => { S.search = null; searchInput.value = ''; render(); } }, 'close')));
  if (s.busy) box.append(h('p', {}, 'searching…'));
  else if (s.err) box.append(h('p', { className: 'err', role: 'alert' }, s.err));
  else {
    const hits = s.rep.hits || [];
    if (!hits.length) box.append(h('p', {}, 'nothing found'));
    const tb = h('tbody');
    for (const x of hits) {
      const href = x.href || '/' + x.rp;
      if (!href.startsWith('/') || href.startsWith('//')) continue; // only paths on this server
      const dir = href.replace(/[^/]*$/, '');
      tb.append(h('tr', {},
        h('td', {}, h('a', { href: (x.href ? '' : loc) + href }, decPath(x.rp))),
        h('td', { className: 's' }, fmtSize(x.sz)),
        h('td', {}, fmtDate(x.mt || x.ts)),
        h('td', {}, h('a', { href: dir, className: 'dim' }, 'folder'))));
    }
    box.append(h('table', { className: 'ls' }, h('thead', {}, h('tr', {}, h('th', {}, 'path'), h('th', {}, 'size'), h('th', {}, 'date'), h('th', {}))), tb));
    if (s.rep.trunc) box.append(h('p', {}, h('button', { onclick: () => doSearch(s.q, s.n * 4) }, 'more…')));
  }
  return box;
}

// ---- listing ----

function fmtDate(ts) {
  if (!ts) return '';
  const d = new Date(ts * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

async function load(path, push) {
  if (path !== S.path) filterInput.value = '';
  S.path = path;
  S.sel.clear();
  S.cursor = -1;
  if (push) history.pushState(null, '', path);
  crumbs();
  const r = await fetch(path + '?ls', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  if (path !== S.path) return;
  if (!r.ok) {
    S.ls = null;
    S.lsErr = { status: r.status, msg: (await r.text()).trim() };
  } else {
    S.lsErr = null;
    S.ls = await r.json();
  }
  render();
  if (S.ls && !can('read') && can('write')) loadUps();
  if (S.ls) loadTree();
}

const can = (p) => !!(S.ls && S.ls.perms && S.ls.perms.includes(p));

const coll = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

function sorted() {
  if (!S.ls) return [];
  const { key, dir } = S.sort;
  const cmp = (a, b) => {
    let c = 0;
    if (key === 'size') c = a.sz - b.sz;
    else if (key === 'date') c = a.ts - b.ts;
    if (c === 0) c = coll.compare(a.name, b.name);
    return c * dir;
  };
  // the filter looks at every entry of the folder, not only the rows in
  // the page (a big folder is put in the page in slices)
  const q = filterInput.value.trim().toLocaleLowerCase();
  const keep = (e) => !q || e.name.toLocaleLowerCase().includes(q);
  const d = S.ls.dirs.filter(keep).map((e) => ({ ...e, dir: true })).sort(cmp);
  const f = S.ls.files.filter(keep).map((e) => ({ ...e, dir: false })).sort(cmp);
  return d.concat(f);
}

// The folder's filter box: names containing its text, over all entries.
const filterInput = h('input', {
  type: 'search', id: 'filt', placeholder: 'filter this folder', autocomplete: 'off', spellcheck: false, 'data-k': 'filter',
  'aria-label': 'filter this folder by name (every entry, not only those shown)',
  oninput: () => {
    render();
    // what is selected and no longer listed is no longer selected
    const listed = new Set(S.rows.map((e) => e.href));
    const n = S.sel.size;
    for (const x of S.sel) if (!listed.has(x)) S.sel.delete(x);
    if (S.sel.size !== n) selChanged();
    say(filterInput.value.trim() ? `${S.rows.length} entries match` : `${S.rows.length} entries`);
  },
});
const total = () => (S.ls ? S.ls.dirs.length + S.ls.files.length : 0);

function setSort(key) {
  S.sort = { key, dir: S.sort.key === key ? -S.sort.dir : 1 };
  localStorage.setItem('hoard.sort', JSON.stringify(S.sort));
  render();
}

function toolbar() {
  const n = S.sel.size;
  const b = (label, fn, on, title) => h('button', { type: 'button', onclick: fn, disabled: !on, title: title || '', 'data-k': 'tool\n' + label }, label);
  const bar = h('div', { className: 'tools', role: 'toolbar', 'aria-label': 'folder tools' },
    can('write') ? b('new folder', mkdir, true) : null,
    can('move') ? b('rename', rename, n === 1, 'F2') : null,
    can('move') ? b('move', move, n > 0) : null,
    can('delete') ? b('delete', del, n > 0, 'Delete') : null,
    can('read') ? b('zip', () => archive('zip'), n > 0) : null,
    can('read') ? b('tar', () => archive('tar'), n > 0) : null,
    can('read') ? h('a', { className: 'btn', href: S.path + '?zip' }, 'folder as zip') : null,
    S.ls.acct && S.ls.acct !== '*' && !('share' in document.body.dataset) && (can('read') || can('write')) ? b('share', share, true, 'a link for others; the selection, or this folder') : null,
    can('read') ? h('button', { type: 'button', onclick: toggleView, 'aria-pressed': String(S.view === 'grid') }, S.view === 'grid' ? 'list view' : 'grid view') : null,
  );
  const info = h('p', { className: 'info' },
    n ? `${n} selected · ` : '',
    'you may: ', (S.ls.perms || []).join(', ') || 'nothing here',
    S.ls.srvinf ? ' · disk: ' + S.ls.srvinf : '');
  return h('div', { id: 'bar' }, bar, info);
}

// selChanged shows a change of the selection without rebuilding the
// listing: the toolbar, and the rows in the page.
function selChanged() {
  const bar = document.getElementById('bar');
  if (bar) {
    const k = bar.contains(document.activeElement) ? document.activeElement.dataset.k : undefined;
    const n = toolbar();
    bar.replaceWith(n);
    if (k !== undefined) refocus(n, k);
  }
  for (const el of app.querySelectorAll('#rows > [data-i]')) {
    const e = S.rows[Number(el.dataset.i)];
    const on = S.sel.has(e.href);
    el.classList.toggle('sel', on);
    const box = el.querySelector('input[type=checkbox]');
    if (box) box.checked = on;
  }
  const all = document.getElementById('selall');
  if (all) all.checked = S.rows.length > 0 && S.sel.size === S.rows.length;
  say(S.sel.size + ' selected');
}

function toggleView() {
  S.view = S.view === 'grid' ? 'list' : 'grid';
  localStorage.setItem('hoard.view', S.view);
  render();
}

function selBox(e) {
  return h('input', {
    type: 'checkbox', checked: S.sel.has(e.href), 'aria-label': 'select ' + e.name,
    onchange: (ev) => { ev.target.checked ? S.sel.add(e.href) : S.sel.delete(e.href); selChanged(); },
  });
}

// A big folder is put in the page in slices: the first FIRST rows at
// once, then STEP more whenever the end of the list comes near the screen
// (or the keyboard moves past it). Sorting, selection and the keyboard
// work on all of S.rows; only the rows' elements wait.
const FIRST = 200, STEP = 500;
let shown = 0; // S.rows[0, shown) are in the page
let moreObs = null;

function listTable(rows) {
  const arrow = (k) => (S.sort.key === k ? (S.sort.dir > 0 ? ' ▲' : ' ▼') : '');
  const th = (k, label) => h('th', { 'aria-sort': S.sort.key === k ? (S.sort.dir > 0 ? 'ascending' : 'descending') : 'none' },
    h('button', { type: 'button', className: 'sort', onclick: () => setSort(k), 'aria-label': 'sort by ' + label }, label + arrow(k)));
  const all = h('input', { type: 'checkbox', id: 'selall', 'aria-label': 'select all', checked: rows.length > 0 && S.sel.size === rows.length,
    onchange: (ev) => { S.sel = new Set(ev.target.checked ? rows.map((e) => e.href) : []); selChanged(); } });
  const tb = h('tbody', { id: 'rows' });
  if (S.path !== loc + '/') tb.append(h('tr', {}, h('td'), h('td', {}, h('a', { href: '../', className: 'up', 'aria-label': 'parent folder' }, '../')), h('td'), h('td')));
  return h('table', { className: 'ls' }, h('thead', {}, h('tr', {}, h('th', {}, all), th('name', 'name'), th('size', 'size'), th('date', 'date'))), tb);
}

function listRow(e, i) {
  return h('tr', { className: (S.sel.has(e.href) ? 'sel' : '') + (i === S.cursor ? ' cur' : ''), 'data-i': i },
    h('td', {}, selBox(e)),
    h('td', { className: 'n' }, h('a', { href: S.path + e.href, className: e.dir ? 'd' : 'f', 'data-i': i }, e.name + (e.dir ? '/' : ''))),
    h('td', { className: 's' }, e.dir ? '' : fmtSize(e.sz)),
    h('td', { className: 't' }, fmtDate(e.ts)));
}

function gridView() {
  return h('ul', { className: 'grid', id: 'rows' });
}

function gridRow(e, i) {
  const thumb = !e.dir && (IMG.test(e.name) || VID.test(e.name) || AUD.test(e.name));
  const pic = thumb ? h('img', { src: S.path + e.href + (e.href.includes('?') ? '&' : '?') + 'th', loading: 'lazy', alt: '', decoding: 'async' }) : h('span', { className: 'icon', 'aria-hidden': 'true' }, e.dir ? 'dir' : (e.ext || '').slice(0, 4));
  if (thumb) pic.onerror = () => pic.replaceWith(h('span', { className: 'icon', 'aria-hidden': 'true' }, (e.ext || '').slice(0, 4)));
  return h('li', { className: (S.sel.has(e.href) ? 'sel' : '') + (i === S.cursor ? ' cur' : ''), 'data-i': i },
    h('a', { href: S.path + e.href, className: e.dir ? 'd' : 'f', 'data-i': i }, pic, h('span', { className: 'nm' }, e.name)),
    selBox(e));
}

// fill puts rows up to S.rows[upto) in the page, and says how many wait.
function fill(upto) {
  const box = document.getElementById('rows');
  if (!box) return;
  const row = S.view === 'grid' ? gridRow : listRow;
  const end = Math.min(upto, S.rows.length);
  if (end > shown) {
    const frag = document.createDocumentFragment();
    for (let i = shown; i < end; i++) frag.append(row(S.rows[i], i));
    box.append(frag);
    shown = end;
  }
  const more = document.getElementById('more');
  if (!more) return;
  if (shown >= S.rows.length) {
    more.replaceChildren(S.rows.length < total() ? `${S.rows.length} of ${total()} entries match the filter` : '');
    if (moreObs) moreObs.disconnect();
    return;
  }
  more.replaceChildren(`showing ${shown} of ${S.rows.length}${S.rows.length < total() ? ` matching (${total()} in the folder)` : ''} · `,
    h('button', { type: 'button', onclick: () => fill(S.rows.length) }, `show all ${S.rows.length}`));
}

function render() {
  const focusI = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.i : undefined;
  const focusK = document.activeElement && app.contains(document.activeElement) && document.activeElement.dataset ? document.activeElement.dataset.k : undefined;
  const parts = [];
  if (S.search) parts.push(renderSearch());
  if (S.lsErr) {
    parts.push(h('div', { className: 'denied', role: 'alert' },
      h('h2', {}, S.lsErr.status === 401 ? 'log in to see this folder' : 'not allowed'),
      h('p', {}, S.lsErr.msg),
      S.lsErr.status === 401 || S.lsErr.status === 403 ? h('p', {}, 'use the password box at the top right.') : null));
  } else if (S.ls) {
    parts.push(toolbar());
    if (can('write')) parts.push(upPanel());
    if (can('read')) {
      S.rows = sorted();
      if (total() > 1) parts.push(h('p', { className: 'filter' }, filterInput));
      parts.push(S.view === 'grid' ? gridView() : listTable(S.rows));
      if (!S.rows.length) parts.push(h('p', { className: 'dim' }, total() ? 'nothing here matches the filter' : 'this folder is empty'));
      parts.push(h('p', { id: 'more', className: 'dim', role: 'status' }));
    } else if (can('write')) {
      parts.push(h('p', {}, 'you may upload here, but not see what is here.'), upsList());
    }
  } else parts.push(h('p', {}, 'loading…'));
  // the same rows as before in the page again (a re-render of the same
  // folder keeps what was scrolled to), at least a screenful
  const keep = S.rowsFor === S.path ? shown : 0;
  shown = 0;
  app.replaceChildren(...parts);
  S.rowsFor = S.path;
  if (S.ls && can('read')) {
    fill(Math.max(FIRST, keep, S.cursor + 1));
    const more = document.getElementById('more');
    if (moreObs) moreObs.disconnect();
    if (more && shown < S.rows.length) {
      moreObs = new IntersectionObserver((es) => { if (es.some((x) => x.isIntersecting)) fill(shown + STEP); }, { rootMargin: '800px' });
      moreObs.observe(more);
    }
  }
  if (focusI !== undefined) {
    const el = app.querySelector(`a[data-i="${focusI}"]`);
    if (el) el.focus();
  } else if (focusK !== undefined) refocus(app, focusK);
}

// ---- folder tree (wide screens): the chain from the top to here ----

// (not in a share: ?tree is not served there, and the shared folder is
// the top)
const inShare = 'share' in document.body.dataset;
const treeNav = h('nav', { className: 'tree', 'aria-label': 'folder tree' });
if (!inShare) {
  document.body.classList.add('has-tree');
  document.body.insertBefore(treeNav, app);
}
let treeFor = null;

// loadTree fetches the tree when the folder or its subfolders changed (a
// folder made, renamed, moved, deleted or uploaded here shows in the tree)
async function loadTree() {
  const key = S.path + '\n' + (S.ls.dirs || []).map((d) => d.href).join('\n');
  if (inShare || treeFor === key) return;
  treeFor = key;
  const r = await fetch(S.path + '?tree', { credentials: 'same-origin' });
  if (!r.ok || treeFor !== key) return;
  const t = await r.json();
  const rel = S.path.slice(loc.length).split('/').filter(Boolean);
  const build = (node, depth, base) => {
    const ul = h('ul', {});
    const names = [...(node.a || [])];
    const next = rel[depth];
    if (next !== undefined && !names.includes(next)) names.push(next);
    names.sort((a, b) => decPath(a).localeCompare(decPath(b), undefined, { numeric: true }));
    for (const n of names) {
      const href = base + n + '/';
      const a = h('a', { href, className: 'd' }, decPath(n));
      if (href === S.path) a.setAttribute('aria-current', 'page');
      const li = h('li', {}, a);
      if (n === next && node['k' + n]) li.append(build(node['k' + n], depth + 1, href));
      ul.append(li);
    }
    return ul;
  };
  treeNav.replaceChildren(h('a', { href: loc + '/', className: 'd' }, '/'), build(t, 0, loc + '/'));
}

// ---- write-only folders: what you uploaded (?ups) ----

let ups = null;
async function loadUps() {
  const r = await req('GET', loc + '/?ups');
  ups = r.ok ? JSON.parse(r.text) : null;
  render();
}

function upsList() {
  const box = h('section', { className: 'ups', 'aria-label': 'your uploads' }, h('h2', {}, 'your recent uploads'));
  const rows = (ups && ups.f) || [];
  if (!rows.length) box.append(h('p', { className: 'dim' }, 'none yet'));
  const ul = h('ul');
  for (const u of rows.slice(0, 500)) ul.append(h('li', {}, decPath(u.vp), ' · ', fmtSize(u.sz), u.pd !== undefined ? ` · ${u.pd}% done` : ''));
  box.append(ul);
  if (rows.length > 500) box.append(h('p', { className: 'dim' }, `… and ${rows.length - 500} more`));
  return box;
}

// ---- file management ----

async function mkdir() {
  const v = await modal('new folder', [{ label: 'name' }], 'create');
  if (!v || !v[0]) return;
  const r = await req('POST', S.path, 'act=mkdir&name=' + encodeURIComponent(v[0]), 'application/x-www-form-urlencoded');
  r.ok ? toast('folder made') : toast(errText(r), true);
  load(S.path);
}

const selected = () => S.rows.filter((e) => S.sel.has(e.href));
const bare = (e) => e.href.replace(/\?.*$/, '').replace(/\/$/, '');

async function moveTo(e, dst) {
  const src = S.path + bare(e);
  return req('POST', src + '?move=' + encodeURIComponent(dst), '', 'application/x-www-form-urlencoded');
}

async function rename() {
  const [e] = selected();
  if (!e) return;
  const v = await modal('rename', [{ label: 'new name for ' + e.name, value: e.name }], 'rename');
  if (!v || !v[0] || v[0] === e.name) return;
  const r = await moveTo(e, decPath(S.path) + v[0]);
  r.ok ? toast('renamed') : toast(errText(r), true);
  load(S.path);
}

async function move() {
  const sel = selected();
  const v = await modal(`move ${sel.length} item(s)`, [{ label: 'to folder', value: decPath(S.path) }], 'move');
  if (!v || !v[0]) return;
  let dst = v[0].startsWith('/') ? v[0] : decPath(S.path) + v[0];
  if (!dst.endsWith('/')) dst += '/';
  let bad = 0;
  for (const e of sel) {
    const r = await moveTo(e, dst + e.name);
    if (!r.ok) { bad++; toast(e.name + ': ' + errText(r), true); }
  }
  if (!bad) toast('moved');
  load(S.path);
}

async function del() {
  const sel = selected();
  if (!sel.length || !(await confirmBox(`delete ${sel.length} item(s)?`, sel.map((e) => e.name + (e.dir ? '/' : ''))))) return;
  const paths = sel.map((e) => decPath(S.path.slice(loc.length) + bare(e)));
  const r = await req('POST', loc + '/?delete', JSON.stringify(paths), 'application/json');
  // the server's answer is copyparty's ("deleted 1 files (and 0/0 folders)"); the page says it plainly
  r.ok ? toast(sel.length === 1 ? `deleted ${sel[0].name}` : `deleted ${sel.length} items`) : toast(errText(r), true);
  load(S.path);
}

async function share() {
  const sel = selected();
  const what = sel.length ? sel.map((e) => decPath(S.path.slice(loc.length) + bare(e))) : [decPath(S.path.slice(loc.length)).replace(/\/$/, '') || '/'];
  const v = await modal('share ' + (sel.length ? `${sel.length} item(s)` : 'this folder'), [
    { label: 'expires after (minutes, 0 = never)', value: '1440' },
    { label: 'password for the link (optional)', value: '' },
  ], 'create link');
  if (!v) return;
  const perms = can('read') ? ['read'] : ['write'];
  const r = await req('POST', loc + '/?share', JSON.stringify({ vp: what, exp: v[0], pw: v[1], perms }), 'application/json');
  if (!r.ok) return toast(errText(r), true);
  const url = r.text.replace(/^created share:\s*/, '').trim();
  const link = url.startsWith('/') ? location.origin + url : url;
  const dlg = h('dialog', { 'aria-label': 'share link' }, h('form', { method: 'dialog', className: 'modal' },
    h('h2', {}, 'share link'),
    h('p', {}, h('input', { type: 'text', value: link, readOnly: true, 'aria-label': 'share link', onfocus: (e) => e.target.select() })),
    h('p', { className: 'btns' }, h('button', { value: 'ok', className: 'primary' }, 'close'))));
  dlg.addEventListener('close', () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
}

function archive(fmt) {
  const names = selected().map((e) => bare(e)).join('\n');
  const f = h('form', { method: 'post', action: S.path + '?' + fmt, enctype: 'multipart/form-data', hidden: true },
    h('input', { type: 'hidden', name: 'act', value: fmt }),
    h('input', { type: 'hidden', name: 'files', value: names }));
  document.body.append(f);
  f.submit();
  f.remove();
}

// ---- uploads ----

const up = new Uploader({
  fallback: localStorage.getItem('hoard.nosubtle') === '1',
  // tuning for measurements (bench/ui.sh variants): numbers, else defaults
  workers: Number(localStorage.getItem('hoard.workers')),
  conns: Number(localStorage.getItem('hoard.conns')),
  onchange: () => schedule(),
  // the listing follows finished uploads: at once after the last one (it
  // said "this folder is empty" for 0.8 s after a drop into an empty
  // folder), at most every 0.8 s while others are still going
  ondone: () => { clearTimeout(reloadT); reloadT = setTimeout(() => { if (S.ls && !S.search) load(S.path); }, up.busy() ? 800 : 0); },
});
let reloadT = 0;
window.hoardUp = up; // for tests and the curious
let panelT = 0;
// schedule refreshes the upload's state (not the drop zone, so an open
// menu there stays open) in the next frame at most every PANEL ms,
// keeping the keyboard focus on the same control (data-k) when it was in
// there, and tells a screen reader what changed (announce). A redraw in
// every frame (60 a second) took browser CPU that a big file's hashing
// and sending need on a small machine.
const PANEL = 100;
let panelLast = 0;
function schedule() {
  if (panelT) return;
  const wait = Math.max(0, panelLast + PANEL - performance.now());
  panelT = setTimeout(() => requestAnimationFrame(redraw), wait);
}

function redraw() {
  panelT = 0;
  panelLast = performance.now();
  const p = document.getElementById('upstate');
  if (p) {
    const k = p.contains(document.activeElement) ? document.activeElement.dataset.k : undefined;
    const n = upState();
    p.replaceWith(n);
    if (k !== undefined) refocus(n, k);
  }
  announce();
}

// refocus moves the focus to the control of box whose data-k is k.
function refocus(box, k) {
  const el = [...box.querySelectorAll('[data-k]')].find((x) => x.dataset.k === k);
  if (el) el.focus();
}

// announce says in the live region how an upload goes: its start, each
// further tenth (at most every 5 s), each failed file, and its end.
const told = { jobs: 0, tenth: 0, t: 0, failed: new Set(), started: false };
function announce() {
  const t = up.totals();
  const busy = up.busy();
  for (const j of up.jobs) {
    if (j.state === 'error' && !told.failed.has(j)) { told.failed.add(j); say(`upload of ${j.rel} failed: ${j.err}`); return; }
  }
  if (busy && !told.started) { told.started = true; told.tenth = 0; told.t = Date.now(); say(`uploading ${t.n} files, ${fmtSize(t.size)}`); return; }
  if (!busy && up.jobs.length !== told.jobs) {
    // everything queued so far has ended (however quickly)
    told.started = false;
    told.jobs = up.jobs.length;
    say(!t.n ? 'upload cancelled' : t.failed ? `upload finished: ${t.done} of ${t.n} files done, ${t.failed} failed` : `upload finished: all ${t.n} files done`);
    return;
  }
  const tenth = t.size ? Math.floor((10 * t.conf) / t.size) : 0;
  if (busy && tenth > told.tenth && Date.now() - told.t > 5000) {
    told.tenth = tenth;
    told.t = Date.now();
    say(`upload ${tenth * 10}%, ${t.done} of ${t.n} files done, about ${fmtTime(t.eta)} left`);
  }
}

const pickFiles = h('input', { type: 'file', multiple: true, hidden: true, id: 'pickf', onchange: (e) => { picked(e.target); } });
const pickDir = h('input', { type: 'file', multiple: true, hidden: true, id: 'pickd', webkitdirectory: true, onchange: (e) => { picked(e.target); } });
document.body.append(pickFiles, pickDir);

function picked(input) {
  const items = [...input.files].map((f) => ({ file: f, rel: f.webkitRelativePath || f.name }));
  input.value = '';
  if (items.length) up.add(items, S.path);
}

function upPanel() {
  const panel = h('section', { id: 'up', className: 'up', 'aria-label': 'upload' });
  panel.append(h('div', { className: 'drop' },
    h('p', {}, 'drop files or folders anywhere on the page, or '),
    h('button', { type: 'button', onclick: () => pickFiles.click() }, 'pick files'), ' ',
    h('button', { type: 'button', onclick: () => pickDir.click() }, 'pick a folder'), ' ',
    h('label', { for: 'coll' }, 'if the name is taken: '),
    h('select', { id: 'coll', onchange: (e) => { up.replace = e.target.value; } },
      h('option', { value: '', selected: up.replace === '' }, 'keep both'),
      can('delete') ? h('option', { value: 'replace', selected: up.replace === 'replace' }, 'overwrite') : null,
      h('option', { value: 'skip', selected: up.replace === 'skip' }, 'skip'))),
    upState());
  return panel;
}

// upState is the changing part of the upload panel: leftovers of an
// earlier page, the total, and the files in progress.
function upState() {
  const t = up.totals();
  const panel = h('div', { id: 'upstate' });
  const left = up.leftovers();
  if (left.length && !up.jobs.length) {
    panel.append(h('p', { className: 'warn' }, `${left.length} upload(s) were not finished before the page was closed (`,
      left.slice(0, 3).map((l) => l.rel).join(', '), left.length > 3 ? ', …' : '', '). Drop or pick the same files again to resume: only the missing parts are sent. ',
      h('button', { type: 'button', 'data-k': 'forget', onclick: () => up.forgetLeftovers() }, 'forget them')));
  }
  if (!up.jobs.length) return panel;
  // the bar and the percentage count what the server confirmed; what is
  // sent and not yet confirmed is said apart
  const pct = t.size ? Math.floor((100 * t.conf) / t.size) : 100;
  const hashing = up.jobs.filter((j) => j.state === 'hashing').length;
  panel.append(h('div', { className: 'total' },
    h('progress', { max: 100, value: pct, 'aria-label': 'total progress' }),
    h('span', { className: 'stat', id: 'upstat' }, `${t.done}/${t.n} files · ${fmtSize(t.conf)} of ${fmtSize(t.size)} stored · ${pct}%` + (t.inflight ? ` · ${fmtSize(t.inflight)} sent, not confirmed yet` : '') +
      (up.busy() ? ` · ${fmtSize(up.rate)}/s · ETA ${fmtTime(t.eta)}` : '') + (hashing ? ` · hashing ${hashing}` : '') + (t.failed ? ` · ${t.failed} failed` : '')),
    ' ', up.busy() ? h('button', { type: 'button', 'data-k': 'pause', onclick: () => up.setPaused(!up.paused) }, up.paused ? 'resume' : 'pause') : null,
    ' ', up.busy() ? h('button', { type: 'button', 'data-k': 'cancelall', onclick: () => up.jobs.forEach((j) => up.cancel(j)) }, 'cancel all') : null));
  const failed = up.jobs.filter((j) => j.state === 'error');
  const show = failed.slice(0, 50)
    .concat(up.jobs.filter((j) => !['error', 'done', 'cancelled', 'queued'].includes(j.state)).slice(0, 30))
    .concat(up.jobs.filter((j) => j.state === 'done').slice(-10));
  const ul = h('ul', { className: 'jobs' });
  for (const j of show) {
    const moved = j.state === 'hashing' ? j.hashed : Math.min(j.size, j.conf);
    const p = j.size ? Math.floor((100 * moved) / j.size) : 100;
    ul.append(h('li', { className: 'job ' + j.state },
      h('span', { className: 'nm' }, j.rel), ' ',
      h('progress', { max: 100, value: j.state === 'done' ? 100 : p, 'aria-label': 'progress of ' + j.rel }), ' ',
      h('span', { className: 'st' }, j.state === 'done' ? 'done' : j.state === 'hashing' ? `hashing ${p}%` : j.state === 'uploading' ? `${p}%` + (j.inflight ? ` · ${fmtSize(j.inflight)} sent` : '') : j.state),
      j.err ? h('span', { className: 'err' }, ' ', j.err) : null,
      j.state === 'error' ? h('button', { type: 'button', 'data-k': 'retry\n' + j.key, onclick: () => up.retryJob(j), 'aria-label': 'retry ' + j.rel }, 'retry') : null,
      !['done', 'error', 'cancelled'].includes(j.state) ? h('button', { type: 'button', 'data-k': 'cancel\n' + j.key, onclick: () => up.cancel(j), 'aria-label': 'cancel ' + j.rel }, '✕') : null));
  }
  panel.append(ul);
  if (failed.length > 50) panel.append(h('p', { className: 'err' }, `… and ${failed.length - 50} more failed `, h('button', { type: 'button', 'data-k': 'retryall', onclick: () => failed.forEach((j) => up.retryJob(j)) }, 'retry all')));
  return panel;
}

// Drag and drop of files and whole folders (DataTransferItem entries).
async function entries(dt) {
  const out = [];
  const walk = async (entry, pre) => {
    if (entry.isFile) {
      const file = await new Promise((res, rej) => entry.file(res, rej));
      out.push({ file, rel: pre + file.name });
    } else if (entry.isDirectory) {
      const rd = entry.createReader();
      for (;;) {
        const batch = await new Promise((res, rej) => rd.readEntries(res, rej));
        if (!batch.length) break;
        for (const e of batch) await walk(e, pre + entry.name + '/');
      }
    }
  };
  const roots = [...dt.items].map((it) => (it.webkitGetAsEntry ? it.webkitGetAsEntry() : null));
  if (roots.some((r) => r)) {
    for (const r of roots) if (r) await walk(r, '');
  } else for (const f of dt.files) out.push({ file: f, rel: f.name });
  return out;
}

let dragN = 0;
document.addEventListener('dragenter', (e) => { if (can('write') && [...e.dataTransfer.types].includes('Files')) { dragN++; document.body.classList.add('dragging'); } });
document.addEventListener('dragleave', () => { if (--dragN <= 0) { dragN = 0; document.body.classList.remove('dragging'); } });
document.addEventListener('dragover', (e) => { if (can('write')) e.preventDefault(); });
document.addEventListener('drop', async (e) => {
  if (!can('write')) return;
  e.preventDefault();
  dragN = 0;
  document.body.classList.remove('dragging');
  const items = await entries(e.dataTransfer);
  if (items.length) { up.add(items, S.path); say(`${items.length} files queued`); }
});
window.addEventListener('beforeunload', (e) => { if (up.busy()) e.preventDefault(); });

// ---- preview: gallery, player, markdown, text ----

let viewer = null;

function kindOf(name) {
  if (IMG.test(name)) return 'img';
  if (VID.test(name) || AUD.test(name)) return 'av';
  if (MD.test(name)) return 'md';
  if (TXT.test(name)) return 'txt';
  return '';
}

function openView(i) {
  const e = S.rows[i];
  const kind = kindOf(e.name);
  const group = S.rows.map((x, j) => [x, j]).filter(([x]) => !x.dir && (kind === 'img' || kind === 'av' ? kindOf(x.name) === kind : x === e)).map(([, j]) => j);
  closeView();
  const url = S.path + e.href;
  let body;
  if (kind === 'img') body = h('img', { src: url, alt: e.name });
  else if (kind === 'av') {
    body = h(VID.test(e.name) ? 'video' : 'audio', { src: url, controls: true, autoplay: true });
    body.onended = () => step(1);
  } else if (kind === 'md') body = h('iframe', { src: url + (url.includes('?') ? '&' : '?') + 'v', title: e.name, sandbox: 'allow-popups allow-popups-to-escape-sandbox' });
  else {
    body = h('pre', { className: 'txt' }, 'loading…');
    req('GET', url + (url.includes('?') ? '&' : '?') + 'txt').then((r) => { body.textContent = r.ok ? r.text : errText(r); });
  }
  const pos = group.indexOf(i);
  const step = (d) => { const k = group[(pos + d + group.length) % group.length]; if (k !== undefined && group.length > 1) { S.cursor = k; openView(k); } };
  const box = h('div', { className: 'viewer ' + kind, role: 'dialog', 'aria-modal': 'true', 'aria-label': 'preview of ' + e.name, tabIndex: -1 },
    h('div', { className: 'vbar' },
      group.length > 1 ? h('button', { type: 'button', onclick: () => step(-1), 'aria-label': 'previous' }, '‹') : null,
      h('span', { className: 'nm' }, e.name, group.length > 1 ? ` (${pos + 1}/${group.length})` : ''),
      group.length > 1 ? h('button', { type: 'button', onclick: () => step(1), 'aria-label': 'next' }, '›') : null,
      h('a', { href: url, download: e.name, className: 'btn' }, 'download'),
      h('button', { type: 'button', onclick: closeView, 'aria-label': 'close' }, '✕')),
    h('div', { className: 'vbody' }, body));
  // swipe: one finger, mostly sideways (not a scroll, not a pinch)
  let x0 = null, y0 = 0;
  box.addEventListener('touchstart', (ev) => { x0 = ev.touches.length === 1 ? ev.touches[0].clientX : null; y0 = ev.touches[0].clientY; }, { passive: true });
  box.addEventListener('touchmove', (ev) => { if (ev.touches.length > 1) x0 = null; }, { passive: true });
  box.addEventListener('touchend', (ev) => {
    if (x0 !== null && ev.touches.length === 0) {
      const dx = ev.changedTouches[0].clientX - x0, dy = ev.changedTouches[0].clientY - y0;
      if (Math.abs(dx) > 50 && Math.abs(dx) > 2 * Math.abs(dy)) step(dx < 0 ? 1 : -1);
    }
    x0 = null;
  });
  viewer = { box, step };
  document.body.append(box);
  box.focus();
}

function closeView() {
  if (!viewer) return;
  viewer.box.remove();
  viewer = null;
  if (S.cursor >= shown) fill(S.cursor + 1);
  const el = app.querySelector(`a[data-i="${S.cursor}"]`);
  if (el) el.focus();
}

// ---- clicks and keys ----

document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest('a');
  if (!a || !a.href || a.download || a.origin !== location.origin) return;
  if (a.closest('.crumbs') || a.classList.contains('d') || a.classList.contains('up') || (a.closest('.results') && a.pathname.endsWith('/'))) {
    e.preventDefault();
    S.search = null;
    load(a.pathname, true);
  } else if (a.classList.contains('f') && a.closest('#app')) {
    const i = Number(a.dataset.i);
    if (kindOf(S.rows[i].name)) { e.preventDefault(); S.cursor = i; openView(i); }
  }
});

window.addEventListener('popstate', () => {
  closeView();
  if (location.pathname !== S.path) load(location.pathname); // not for a #fragment
});

function moveCursor(d) {
  if (!S.rows.length) return;
  S.cursor = Math.max(0, Math.min(S.rows.length - 1, S.cursor + d));
  if (S.cursor >= shown) fill(S.cursor + STEP);
  const el = app.querySelector(`a[data-i="${S.cursor}"]`);
  app.querySelectorAll('.cur').forEach((x) => x.classList.remove('cur'));
  if (el) { el.focus(); el.closest('tr, li').classList.add('cur'); }
}

document.addEventListener('keydown', (e) => {
  if (viewer) {
    if (e.key === 'Escape') closeView();
    else if (e.key === 'ArrowRight') viewer.step(1);
    else if (e.key === 'ArrowLeft') viewer.step(-1);
    else return;
    e.preventDefault();
    return;
  }
  // The browser's own find (Ctrl+F) searches the page: put every row of
  // a big folder in it first (the find bar opens after this handler).
  if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'f' && S.ls && shown < S.rows.length) fill(S.rows.length);
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || document.querySelector('dialog[open]'))) return;
  if (e.ctrlKey || e.metaKey || e.altKey) {
    if ((e.ctrlKey || e.metaKey) && e.key === 'a' && S.rows.length) { e.preventDefault(); S.sel = new Set(S.rows.map((x) => x.href)); selChanged(); }
    return;
  }
  const cols = S.view === 'grid' ? Math.max(1, Math.floor(app.clientWidth / 170)) : 1;
  switch (e.key) {
    case 'ArrowDown': case 'j': moveCursor(cols); break;
    case 'ArrowUp': case 'k': moveCursor(-cols); break;
    case 'Home': moveCursor(-S.rows.length); break;
    case 'End': moveCursor(S.rows.length); break;
    case 'PageDown': moveCursor(cols * 20); break;
    case 'PageUp': moveCursor(-cols * 20); break;
    case 'ArrowRight': if (S.view === 'grid') moveCursor(1); else return; break;
    case 'ArrowLeft': if (S.view === 'grid') moveCursor(-1); else return; break;
    case ' ': {
      const r = S.rows[S.cursor];
      if (!r) return;
      S.sel.has(r.href) ? S.sel.delete(r.href) : S.sel.add(r.href);
      selChanged();
      break;
    }
    case 'Backspace': if (S.path !== loc + '/') load(S.path.replace(/[^/]*\/$/, ''), true); break;
    case '/': searchInput.focus(); break;
    case 'Delete': if (can('delete') && S.sel.size) del(); else return; break;
    case 'F2': if (can('move') && S.sel.size === 1) rename(); else return; break;
    case 'g': if (can('read')) toggleView(); break;
    default: return;
  }
  e.preventDefault();
});

document.body.classList.add('js');
load(S.path);
