// Hearth's web console (docs/console.md). A client of the HTTP API only: REST for reads and
// writes, Server-Sent Events for live data, /.well-known/hearth/stats for the server panel.
// Plain JavaScript, no build step.
'use strict';

const PAGE = 50;              // children shown per page of an expanded node
const LARGE_DELETE = 100;     // deleting an object with more children than this asks first
const PART_CHILDREN = 500;    // an import is sent in parts of at most this many children…
const PART_BYTES = 1 << 20;   // …and about this many bytes (a request's body is limited)
const LIVE_BYTES = 4 << 20;   // a viewed location larger than this is not followed live unasked
const STREAM_TRIES = 3;       // a stream that ends this many times in a row before its first event stops
const $ = (selector, root = document) => root.querySelector(selector);

// ---------------------------------------------------------------------------------------------
// Credentials and the HTTP API

const auth = {
  get token() { return sessionStorage.getItem('hearth.auth') || ''; },
  set token(value) {
    if (value) sessionStorage.setItem('hearth.auth', value); else sessionStorage.removeItem('hearth.auth');
  },
};

/**
 * The database every request of the page addresses (the header's picker; docs/console.md,
 * "Databases"). It is kept in the page's URL as `?ns=<name>`, so a reload stays on it.
 */
const database = {
  // The chosen database's name; '' is the default database (requests without `ns`).
  name: new URLSearchParams(location.search).get('ns') || '',
  // The default database's name, once the list has said it.
  defaultName: null,
  // The names the server listed, or null while the list is unknown or refused.
  listed: null,
};

/** "/a/b" from anything ("a/b/", "", "/"). */
function normalize(path) {
  const parts = String(path || '').split('/').filter((s) => s.length > 0);
  return '/' + parts.join('/');
}
function segments(path) { return normalize(path).split('/').filter((s) => s.length > 0); }
function join(base, relative) { return normalize(normalize(base) + '/' + String(relative || '')); }
function parentOf(path) { const s = segments(path); s.pop(); return '/' + s.join('/'); }
function lastKey(path) { const s = segments(path); return s.length ? s[s.length - 1] : ''; }
function isWithin(path, ancestor) {
  return ancestor === '/' || path === ancestor || path.startsWith(ancestor + '/');
}

/**
 * The REST URL of a location with query parameters: `ns` added for a database other than the
 * default one (the picker's, or `ns` when given), `auth` when signed in.
 */
function restURL(path, params = {}, withAuth = true, ns = database.name) {
  const encoded = segments(path).map(encodeURIComponent).join('/');
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null) query.set(name, value);
  if (ns) query.set('ns', ns);
  if (withAuth && auth.token) query.set('auth', auth.token);
  const text = query.toString();
  return '/' + encoded + '.json' + (text ? '?' + text : '');
}

/** A REST call; `body` is a value sent as JSON, `text` a body sent as it is (the rules). */
async function api(method, path, { params = {}, body, text: raw } = {}) {
  const init = { method, headers: {} };
  if (body !== undefined || raw !== undefined) {
    init.body = raw !== undefined ? raw : JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  return answerOf(await fetch(restURL(path, params), init));
}

/** A response's JSON body; an error with the server's message (and `status`) when it is not a 2xx. */
async function answerOf(response) {
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = text; }
  if (!response.ok) {
    const error = new Error((json && json.error) || response.statusText || 'HTTP ' + response.status);
    error.status = response.status;
    throw error;
  }
  return json;
}

function status(message) { $('#status').textContent = message || ''; }
function failed(what) { return (error) => status(what + ': ' + error.message); }

// ---------------------------------------------------------------------------------------------
// Firebase ordering: keys (32-bit integers first, numerically, then strings) and values.

const INT_KEY = /^-?(0|[1-9][0-9]{0,9})$/;
function intKey(key) {
  if (!INT_KEY.test(key)) return null;
  const n = Number(key);
  return n >= -2147483648 && n <= 2147483647 ? n : null;
}
function compareKeys(a, b) {
  const ia = intKey(a), ib = intKey(b);
  if (ia !== null && ib !== null) return ia - ib;
  if (ia !== null) return -1;
  if (ib !== null) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
/** Sorts many keys fast: integers and strings apart, each with a plain comparison. */
function sortKeys(keys) {
  const ints = [], strings = [];
  for (const key of keys) { if (intKey(key) !== null) ints.push(key); else strings.push(key); }
  ints.sort((a, b) => Number(a) - Number(b));
  strings.sort();
  return ints.concat(strings);
}
/** Insertion point of `key` in sorted `keys`. */
function keyIndex(keys, key) {
  let low = 0, high = keys.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (compareKeys(keys[mid], key) < 0) low = mid + 1; else high = mid;
  }
  return low;
}
function rank(value) {
  if (value === null || value === undefined) return 0;
  if (value === false) return 1;
  if (value === true) return 2;
  if (typeof value === 'number') return 3;
  if (typeof value === 'string') return 4;
  return 5;
}
function compareValues(a, b) {
  const ra = rank(a), rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) return a - b;
  if (ra === 4) return a < b ? -1 : a > b ? 1 : 0;
  return 0;
}
function isObject(value) { return value !== null && typeof value === 'object'; }
/** A value in export format (`.value`, `.priority`) as plain JSON. */
function plain(value) {
  if (!isObject(value)) return value;
  if ('.value' in value) return value['.value'];
  const out = {};
  for (const [key, child] of Object.entries(value)) if (key !== '.priority') out[key] = plain(child);
  return out;
}
function priorityOf(value) { return isObject(value) && '.priority' in value ? value['.priority'] : null; }
function childAt(value, path) {
  let current = value;
  for (const key of segments(path)) { if (!isObject(current)) return null; current = current[key]; }
  return current === undefined ? null : current;
}

// ---------------------------------------------------------------------------------------------
// Tabs

function showTab(name) {
  for (const tab of document.querySelectorAll('[role=tab]')) {
    const selected = tab.dataset.tab === name;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
  }
  for (const panel of document.querySelectorAll('[role=tabpanel]')) panel.hidden = panel.dataset.panel !== name;
  if (name === 'rules') rules.load();
  if (name === 'triggers') loadTriggers();
}
function setupTabs() {
  const tabs = [...document.querySelectorAll('[role=tab]')];
  tabs.forEach((tab, index) => {
    tab.addEventListener('click', () => showTab(tab.dataset.tab));
    tab.addEventListener('keydown', (event) => {
      let next = null;
      if (event.key === 'ArrowRight') next = tabs[(index + 1) % tabs.length];
      if (event.key === 'ArrowLeft') next = tabs[(index + tabs.length - 1) % tabs.length];
      if (event.key === 'Home') next = tabs[0];
      if (event.key === 'End') next = tabs[tabs.length - 1];
      if (next) { event.preventDefault(); next.focus(); showTab(next.dataset.tab); }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Data: a lazily expanded tree of the viewed location, kept live by one event stream.
//
// `els` maps each rendered path to its <li>; `open` maps each expanded path to its children:
// `keys` (all of them, sorted), `kinds` (key -> {t:'leaf', v} | {t:'obj', n} | {t:'?'}, a Kinds) and
// `shown` (how many of `keys` are rendered). Children come from shallow reads; a shallow `true`
// may be an object or the leaf true, so each one rendered is resolved with its own shallow read.

const tree = {
  root: '/',
  els: new Map(),
  open: new Map(),
  selected: null,
  source: null,
  firstPut: true,
  // Counts the trees rendered: a read that returns after the tree was rendered anew (another
  // location, or another database) is dropped.
  epoch: 0,
  // Whether a stream follows the viewed location; without one, the page's own writes are
  // applied to the tree when the server accepts them.
  live: false,
  // The stream's state: how many tries in a row ended before the first event, how many streams
  // in a row ended soon (the backoff), since when the current one is live, the pending retry.
  failures: 0,
  drops: 0,
  liveSince: 0,
  retry: null,
};

/**
 * The kinds of an expanded node's children, worked out from the value read (a shallow read, or a
 * stream's event) when first asked for: a location with 100,000 children costs one object, not
 * 100,000 kinds made up front.
 */
class Kinds {
  constructor(values, convert) { this.values = values; this.convert = convert; this.known = new Map(); }
  get(key) {
    let kind = this.known.get(key);
    if (kind === undefined) { kind = this.convert(this.values[key]); this.known.set(key, kind); }
    return kind;
  }
  set(key, kind) { this.known.set(key, kind); }
  delete(key) { this.known.set(key, { t: 'leaf', v: null }); }
}
function shallowKind(value) { return value === true ? { t: '?' } : { t: 'leaf', v: value }; }

/** The keys of an object's children (an array's holes, which JSON shows as null, left out). */
function childKeys(value) { return Object.keys(value).filter((key) => value[key] !== null); }

function kindOf(value) {
  if (isObject(value)) return { t: 'obj', n: childKeys(value).length };
  return { t: 'leaf', v: value };
}
function describe(kind) {
  if (kind.t === 'leaf') return kind.v === null ? 'null' : typeof kind.v === 'string' ? kind.v : JSON.stringify(kind.v);
  if (kind.t === 'obj') return kind.n === undefined || kind.n === null ? '{…}' : '{' + kind.n + (kind.n === 1 ? ' child}' : ' children}');
  return '…';
}

function button(label, title, handler) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  if (title) { b.title = title; b.setAttribute('aria-label', title); }
  b.addEventListener('click', (event) => { event.stopPropagation(); handler(); });
  return b;
}

function makeNode(path, kind) {
  const li = document.createElement('li');
  li.className = 'node';
  li.setAttribute('role', 'treeitem');
  li.dataset.path = path;
  const row = document.createElement('div');
  row.className = 'row';
  const toggle = button('▸', 'Expand ' + path, () => toggleNode(path));
  toggle.className = 'toggle';
  const key = document.createElement('span');
  key.className = 'key';
  key.tabIndex = 0;
  key.textContent = path === '/' ? '/' : (path === tree.root ? path : lastKey(path));
  key.addEventListener('click', () => select(path));
  key.addEventListener('keydown', (event) => nodeKey(event, path));
  const value = document.createElement('span');
  value.className = 'value';
  const actions = document.createElement('span');
  actions.className = 'actions';
  actions.append(
    button('Edit', 'Edit ' + path, () => startEdit(path)),
    button('Add', 'Add a child to ' + path, () => startAdd(path)),
    button('Rename', 'Rename ' + path, () => startRename(path)),
    button('Delete', 'Delete ' + path, () => remove(path)),
    button('Open', 'Open ' + path + ' as the location', () => openLocation(path)));
  row.append(toggle, key, document.createTextNode(' '), value, actions);
  li.append(row);
  setKind(li, kind);
  tree.els.set(path, li);
  return li;
}

function setKind(li, kind) {
  li.kind = kind;
  const value = $('.value', li);
  const toggle = $('.toggle', li);
  value.textContent = describe(kind);
  value.className = 'value ' + (kind.t === 'leaf' ? (kind.v === null ? 'null' : typeof kind.v) : 'object');
  if (kind.t === 'leaf') {
    li.dataset.value = JSON.stringify(kind.v);
    toggle.disabled = true;
    li.removeAttribute('aria-expanded');
  } else {
    delete li.dataset.value;
    toggle.disabled = false;
    li.setAttribute('aria-expanded', String(tree.open.has(li.dataset.path)));
  }
}

function flash(li) {
  if (!li) return;
  // Many changes at once (a patch of 500 members under one node) flash it once.
  const now = performance.now();
  if (li.classList.contains('flash') && now - li.flashedAt < 100) return;
  li.flashedAt = now;
  li.classList.remove('flash');
  void li.offsetWidth; // restarts the animation
  li.classList.add('flash');
  clearTimeout(li.flashTimer);
  li.flashTimer = setTimeout(() => li.classList.remove('flash'), 1100);
}

function forget(path) {
  for (const p of [...tree.els.keys()]) if (isWithin(p, path)) tree.els.delete(p);
  for (const p of [...tree.open.keys()]) if (isWithin(p, path)) tree.open.delete(p);
}

function select(path) {
  if (tree.selected) tree.els.get(tree.selected)?.classList.remove('selected');
  tree.selected = path;
  tree.els.get(path)?.classList.add('selected');
  $('#selected-path').textContent = path;
}

/** The key of a rendered node, which is what the keyboard moves between. */
function keyOf(path) { const li = tree.els.get(path); return li ? $(':scope > .row > .key', li) : null; }

/**
 * The tree's keys (the WAI-ARIA tree pattern): ↑ ↓ the previous and next node, Home End the first
 * and last; → expands, or moves to the first child of an expanded node; ← collapses, or moves to
 * the parent; Enter expands or collapses an object and edits a leaf; Delete deletes.
 */
function nodeKey(event, path) {
  if (event.target !== event.currentTarget || event.altKey || event.ctrlKey || event.metaKey) return;
  const li = tree.els.get(path);
  const items = [...document.querySelectorAll('#tree .key')];
  const index = items.indexOf(event.target);
  const open = tree.open.has(path);
  const move = (key) => { if (key) { key.focus(); select(key.parentElement.parentElement.dataset.path); } };
  switch (event.key) {
    case 'Enter': select(path); if (li.kind.t !== 'leaf') toggleNode(path); else startEdit(path); break;
    case 'ArrowRight':
      if (open) move(keyOf(tree.open.get(path).keys.length ? join(path, tree.open.get(path).keys[0]) : path));
      else if (li.kind.t !== 'leaf') toggleNode(path);
      break;
    case 'ArrowLeft':
      if (open) toggleNode(path);
      else if (path !== tree.root) move(keyOf(parentOf(path)));
      break;
    case 'ArrowDown': move(items[index + 1]); break;
    case 'ArrowUp': move(items[index - 1]); break;
    case 'Home': move(items[0]); break;
    case 'End': move(items[items.length - 1]); break;
    case 'Delete': select(path); remove(path); break;
    default: return;
  }
  event.preventDefault();
}

async function toggleNode(path) {
  const li = tree.els.get(path);
  if (!li) return;
  if (tree.open.has(path)) {
    for (const p of [...tree.els.keys()]) if (p !== path && isWithin(p, path)) tree.els.delete(p);
    for (const p of [...tree.open.keys()]) if (isWithin(p, path)) tree.open.delete(p);
    $(':scope > ul', li)?.remove();
    $('.toggle', li).textContent = '▸';
    li.setAttribute('aria-expanded', 'false');
    return;
  }
  await expand(path);
}

async function expand(path) {
  const li = tree.els.get(path);
  if (!li) return;
  li.setAttribute('aria-busy', 'true');
  const epoch = tree.epoch;
  let shallow;
  try {
    shallow = await api('GET', path, { params: { shallow: 'true' } });
  } catch (error) {
    li.removeAttribute('aria-busy');
    failed('Reading ' + path)(error);
    return;
  } finally {
    li.removeAttribute('aria-busy');
  }
  if (tree.epoch !== epoch || !tree.els.has(path)) return;
  if (!isObject(shallow)) { setKind(li, { t: 'leaf', v: shallow }); return; }
  // A shallow read shows every object child as true: each one rendered is resolved with its own read.
  const keys = sortKeys(childKeys(shallow));
  tree.open.set(path, { keys, kinds: new Kinds(shallow, shallowKind), shown: 0 });
  setKind(li, { t: 'obj', n: keys.length });
  li.setAttribute('aria-expanded', 'true');
  $('.toggle', li).textContent = '▾';
  const open = tree.open.get(path);
  open.shown = Math.min(PAGE, open.keys.length);
  renderChildren(path, false);
}

/** Makes the <ul> of an expanded node show keys[0..<shown] in order, and the "more" item. */
function renderChildren(path, flashNew) {
  const li = tree.els.get(path);
  const open = tree.open.get(path);
  if (!li || !open) return;
  let ul = $(':scope > ul', li);
  if (!ul) { ul = document.createElement('ul'); ul.setAttribute('role', 'group'); li.append(ul); }
  const wanted = open.keys.slice(0, open.shown);
  const wantedSet = new Set(wanted);
  for (const child of [...ul.children]) {
    if (child.classList.contains('more') || !wantedSet.has(lastKey(child.dataset.path))) {
      if (child.dataset.path) forget(child.dataset.path);
      child.remove();
    }
  }
  let previous = null;
  const unresolved = [];
  for (const key of wanted) {
    const childPath = join(path, key);
    let childLi = tree.els.get(childPath);
    if (!childLi) {
      childLi = makeNode(childPath, open.kinds.get(key));
      if (open.kinds.get(key).t === '?') unresolved.push(childPath);
      if (flashNew) flash(childLi);
    }
    const expected = previous ? previous.nextSibling : ul.firstChild;
    if (expected !== childLi) ul.insertBefore(childLi, expected);
    previous = childLi;
  }
  if (open.shown < open.keys.length) {
    const more = document.createElement('li');
    more.className = 'more';
    more.dataset.role = 'more';
    more.append(button('Show ' + Math.min(PAGE, open.keys.length - open.shown) + ' more',
      null, () => { open.shown = Math.min(open.keys.length, open.shown + PAGE); renderChildren(path, false); }));
    more.append(document.createTextNode(' ' + open.shown + ' of ' + open.keys.length + ' shown'));
    ul.append(more);
  }
  resolve(unresolved);
}

/** Shallow-reads children shown as `true` to tell an object (and its size) from the leaf true. */
async function resolve(paths) {
  const queue = paths.slice();
  const epoch = tree.epoch;
  const worker = async () => {
    while (queue.length && tree.epoch === epoch) {
      const path = queue.shift();
      try {
        const value = await api('GET', path, { params: { shallow: 'true' } });
        if (tree.epoch !== epoch) return;
        const li = tree.els.get(path);
        const open = tree.open.get(parentOf(path));
        if (!li || li.kind.t !== '?') continue;
        const kind = kindOf(value);
        if (open) open.kinds.set(lastKey(path), kind);
        setKind(li, kind);
      } catch (error) { /* the stream or a later read shows it */ }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

/** The value at `path` is now `value` (null: gone): updates whatever of it is rendered. */
function applyValue(path, value, doFlash) {
  if (isObject(value) && childKeys(value).length === 0) value = null;
  const li = tree.els.get(path);
  if (li) { updateNode(path, li, value, doFlash); return; }
  // Not rendered: the nearest rendered ancestor.
  let ancestor = parentOf(path);
  while (!tree.els.has(ancestor) && ancestor !== '/' && isWithin(ancestor, tree.root)) ancestor = parentOf(ancestor);
  const holder = tree.els.get(ancestor);
  if (!holder) return;
  const open = tree.open.get(ancestor);
  const key = segments(path)[segments(ancestor).length];
  const direct = parentOf(path) === ancestor;
  if (!open) {
    // A collapsed object: its size may have changed, which one (later) shallow read tells.
    if (value !== null && holder.kind.t === 'leaf') setKind(holder, { t: 'obj' });
    recount(ancestor);
    if (doFlash) flash(holder);
    return;
  }
  if (value === null) {
    if (direct) dropKey(ancestor, key, doFlash);
    return;  // a deeper removal under an unrendered child: its size is unknown here
  }
  const kind = direct ? kindOf(value) : { t: 'obj' };
  const index = keyIndex(open.keys, key);
  if (open.keys[index] === key) { open.kinds.set(key, kind); return; }
  const allShown = open.shown >= open.keys.length;
  open.keys.splice(index, 0, key);
  open.kinds.set(key, kind);
  if (index < open.shown || allShown) open.shown += 1;
  setKind(holder, { t: 'obj', n: open.keys.length });
  renderChildren(ancestor, doFlash);
}

/**
 * Re-reads the size of a rendered, collapsed object after changes under it (one shallow read, a
 * quarter of a second after the first change, however many follow).
 */
const recounts = new Set();
function recount(path) {
  if (recounts.has(path)) return;
  recounts.add(path);
  const epoch = tree.epoch;
  setTimeout(async () => {
    recounts.delete(path);
    if (tree.epoch !== epoch) return;
    let shallow;
    try { shallow = await api('GET', path, { params: { shallow: 'true' } }); } catch { return; }
    if (tree.epoch !== epoch) return;
    const li = tree.els.get(path);
    if (!li || tree.open.has(path) || li.kind.t !== 'obj') return;
    if (!isObject(shallow)) { if (shallow === null) applyValue(path, null, false); return; }
    const kind = { t: 'obj', n: childKeys(shallow).length };
    tree.open.get(parentOf(path))?.kinds.set(lastKey(path), kind);
    setKind(li, kind);
  }, 250);
}

function dropKey(parent, key, doFlash) {
  const open = tree.open.get(parent);
  if (!open) return;
  const index = keyIndex(open.keys, key);
  if (open.keys[index] !== key) return;
  open.keys.splice(index, 1);
  open.kinds.delete(key);
  if (index < open.shown) open.shown -= 1;
  if (open.keys.length === 0 && parent !== tree.root) { applyValue(parent, null, doFlash); return; }
  const holder = tree.els.get(parent);
  if (holder) { setKind(holder, { t: 'obj', n: open.keys.length }); if (doFlash) flash(holder); }
  renderChildren(parent, doFlash);
}

function updateNode(path, li, value, doFlash) {
  if (value === null) {
    if (path === tree.root) { forget(path); renderRoot({ t: 'leaf', v: null }); return; }
    dropKey(parentOf(path), lastKey(path), doFlash);
    return;
  }
  const open = tree.open.get(path);
  if (!isObject(value)) {
    if (open) { toggleNode(path); }
    const before = li.dataset.value;
    setKind(li, { t: 'leaf', v: value });
    const parentOpen = tree.open.get(parentOf(path));
    parentOpen?.kinds.set(lastKey(path), li.kind);
    if (doFlash && before !== li.dataset.value) flash(li);
    return;
  }
  const parentOpen = tree.open.get(parentOf(path));
  parentOpen?.kinds.set(lastKey(path), kindOf(value));
  if (!open) {
    setKind(li, kindOf(value));
    if (doFlash) flash(li);
    if (path === tree.root) expand(path);
    return;
  }
  open.keys = sortKeys(childKeys(value));
  open.kinds = new Kinds(value, kindOf);
  open.shown = Math.max(Math.min(open.shown, open.keys.length), Math.min(PAGE, open.keys.length));
  setKind(li, { t: 'obj', n: open.keys.length });
  renderChildren(path, doFlash);
  for (const key of open.keys.slice(0, open.shown)) {
    const childPath = join(path, key);
    const childLi = tree.els.get(childPath);
    if (childLi) updateNode(childPath, childLi, value[key], doFlash);
  }
}

function renderRoot(kind) {
  const ul = $('#tree');
  ul.textContent = '';
  tree.epoch += 1;
  tree.els.clear();
  tree.open.clear();
  ul.append(makeNode(tree.root, kind));
}

/**
 * Shows `path` as the tree's root, expanded, and follows it with one event stream when it is
 * small enough (LIVE_BYTES): the stream's first event is the whole location.
 */
async function openLocation(path) {
  tree.root = normalize(path);
  $('#path-input').value = tree.root;
  if (location.hash !== '#' + tree.root) history.replaceState(null, '', '#' + tree.root);
  stopStream();
  renderRoot({ t: 'obj' });
  select(tree.root);
  // The shallow read first, then the stream, whose first event (the whole location) reconciles
  // anything written in between: on a large location the two would only slow each other.
  const root = tree.root;
  const ns = database.name;
  // Another location or another database opened meanwhile.
  const stale = () => tree.root !== root || database.name !== ns;
  try { await expand(root); } catch { }
  if (stale()) return;
  const live = $('#live-state');
  liveState('checking the size of ' + root + '…');
  // A HEAD is answered like the GET, without its body: its length is the size of the location.
  let size = null;
  try {
    const response = await fetch(restURL(root), { method: 'HEAD' });
    if (stale()) return;
    if (!response.ok) { liveState('○ not live: ' + (await reason(root, response.status))); return; }
    size = Number(response.headers.get('Content-Length'));
  } catch (error) {
    if (!stale()) liveState('○ not live: ' + error.message);
    return;
  }
  if (Number.isFinite(size) && size > LIVE_BYTES) {
    liveState('○ not live: ' + root + ' holds ' + bytes(size) + ', more than the console follows at once (' +
      bytes(LIVE_BYTES) + '). Open a narrower location to see changes as they happen; your own edits show here. ');
    live.dataset.size = String(size);
    live.append(button('Follow anyway', 'Follow ' + root + ' live anyway (its whole value is sent first)', () => startStream()));
    return;
  }
  startStream();
}

/** Shows what the data panel's stream is doing (`[data-role=live]`); `state` is its data-state. */
function liveState(text, state) {
  const live = $('#live-state');
  live.textContent = text;
  live.dataset.state = state || (text.startsWith('●') ? 'live' : text.startsWith('○') ? 'stopped' : 'busy');
  delete live.dataset.size;
}

/** Why a read of `path` fails: the server's message for it (EventSource hides the reason). */
async function reason(path, status) {
  try { await api('GET', path, { params: { shallow: 'true' } }); } catch (error) {
    return error.message + (error.status === 401 ? ' (sign in?)' : '');
  }
  return 'HTTP ' + status;
}

/** Closes the data panel's stream and forgets its retries. */
function stopStream() {
  tree.source?.close();
  tree.source = null;
  clearTimeout(tree.retry);
  tree.retry = null;
  tree.failures = 0;
  tree.drops = 0;
  tree.live = false;
  delete $('#live-state').dataset.tries;
}

/** The page's own write of `value` at `path` succeeded: without a stream, it is shown now. */
function wrote(path, value) {
  if (!tree.live && isWithin(path, tree.root)) applyValue(path, value, true);
}

/**
 * One stream on the viewed location, without a query: its events are exactly the writes (a put
 * at the written path, a patch with the members sent), so applying them touches only what is
 * rendered. Its first event holds the whole location (see docs/console.md, "Cost").
 */
function startStream() {
  tree.source?.close();
  clearTimeout(tree.retry);
  tree.retry = null;
  const root = tree.root;
  const source = new EventSource(restURL(root));
  tree.source = source;
  tree.firstPut = true;
  tree.live = true;
  let received = false;
  const live = $('#live-state');
  live.dataset.tries = String(Number(live.dataset.tries || 0) + 1);
  liveState(tree.failures ? 'connecting (try ' + (tree.failures + 1) + ' of ' + STREAM_TRIES + ')…' : 'connecting…');
  source.addEventListener('open', () => { tree.firstPut = true; liveState('receiving ' + root + '…'); });
  source.addEventListener('put', (event) => {
    const { path, data } = JSON.parse(event.data);
    const first = tree.firstPut;
    tree.firstPut = false;
    if (!received) { received = true; tree.failures = 0; tree.liveSince = Date.now(); liveState('● live'); }
    const target = join(tree.root, path);
    if (first && target === tree.root) {
      if (!tree.open.has(tree.root)) return;  // the shallow read renders it
    }
    applyValue(target, data, !first);
  });
  source.addEventListener('patch', (event) => {
    const { path, data } = JSON.parse(event.data);
    const base = join(tree.root, path);
    for (const [member, value] of Object.entries(data)) applyValue(join(base, member), value, true);
  });
  const ended = (why) => () => { source.close(); tree.live = false; liveState('○ ' + why); };
  source.addEventListener('cancel', ended('permission denied'));
  source.addEventListener('auth_revoked', ended('credential revoked'));
  // The browser would reconnect by itself, every few seconds for ever, each time fetching the whole
  // location again: the console reconnects itself, later and later, and stops when the stream keeps
  // ending before its first event (the server closes a stream whose unsent output passes its
  // maxOutboundBytes, and would again).
  source.addEventListener('error', async () => {
    const refused = source.readyState === EventSource.CLOSED;
    source.close();
    if (tree.source !== source) return;
    tree.source = null;
    tree.live = false;
    if (refused) { liveState('○ not live: ' + (await reason(root, 0))); return; }
    if (!received) tree.failures += 1;
    // A stream that was live for a minute ended for a reason of its own: the backoff starts over.
    if (received && Date.now() - tree.liveSince > 60000) tree.drops = 0;
    tree.drops += 1;
    if (tree.failures >= STREAM_TRIES) {
      liveState('○ not live: the server closed the stream of ' + root + ' ' + tree.failures +
        ' times before its first event was in. It may be more than the server sends at once (maxOutboundBytes): ' +
        'open a narrower location. ');
      live.append(button('Retry', 'Open the stream of ' + root + ' again', () => { tree.failures = 0; startStream(); }));
      return;
    }
    const delay = Math.min(60, 2 ** tree.drops);
    liveState('reconnecting in ' + delay + ' s…');
    tree.retry = setTimeout(() => { if (tree.root === root) startStream(); }, delay * 1000);
  });
}

// Editing ---------------------------------------------------------------------------------------

const TYPES = ['string', 'number', 'boolean', 'null', 'JSON'];
function typeOf(value) {
  if (value === null) return 'null';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return 'JSON';
}
function parseTyped(type, text) {
  switch (type) {
    case 'string': return text;
    case 'number': {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n)) throw new Error('not a number: ' + text);
      return n;
    }
    case 'boolean':
      if (text !== 'true' && text !== 'false') throw new Error('a boolean is true or false');
      return text === 'true';
    case 'null': return null;
    default: return JSON.parse(text);
  }
}

/** An inline editor under the node's row: optional key, type, value; Enter saves, Escape cancels. */
function editor(li, { key, value, withKey, withValue = true, label }, save) {
  $(':scope > .editor-row', li)?.remove();
  const form = document.createElement('form');
  form.className = 'editor-row';
  form.dataset.role = 'editor';
  let keyInput = null;
  if (withKey) {
    keyInput = document.createElement('input');
    keyInput.name = 'key';
    keyInput.placeholder = 'key';
    keyInput.value = key || '';
    keyInput.setAttribute('aria-label', 'Key');
    form.append(keyInput);
  }
  let typeSelect = null, valueInput = null;
  if (withValue) {
    typeSelect = document.createElement('select');
    typeSelect.name = 'type';
    typeSelect.setAttribute('aria-label', 'Type');
    for (const type of TYPES) typeSelect.append(new Option(type, type));
    typeSelect.value = typeOf(value);
    valueInput = document.createElement('input');
    valueInput.name = 'value';
    valueInput.className = 'value-input';
    valueInput.setAttribute('aria-label', 'Value');
    valueInput.value = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    form.append(typeSelect, valueInput);
  }
  const saveButton = document.createElement('button');
  saveButton.type = 'submit';
  saveButton.textContent = label || 'Save';
  // Closing the editor gives the focus back to the node's key (if the node is still there).
  const close = () => {
    const hadFocus = form.contains(document.activeElement);
    form.remove();
    if (hadFocus && li.isConnected) $(':scope > .row > .key', li)?.focus();
  };
  const cancel = button('Cancel', null, close);
  const error = document.createElement('span');
  error.className = 'error';
  error.setAttribute('role', 'alert');
  form.append(saveButton, cancel, error);
  form.addEventListener('keydown', (event) => { if (event.key === 'Escape') { event.preventDefault(); close(); } });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const parsed = withValue ? parseTyped(typeSelect.value, valueInput.value) : undefined;
      await save({ key: keyInput ? keyInput.value.trim() : undefined, value: parsed });
      close();
    } catch (failure) {
      error.textContent = failure.message;
    }
  });
  $('.row', li).after(form);
  (keyInput || valueInput).focus();
}

async function startEdit(path) {
  const li = tree.els.get(path);
  if (!li) return;
  let value = li.kind.t === 'leaf' ? li.kind.v : await api('GET', path).catch(failed('Reading ' + path));
  editor(li, { value }, async ({ value: v }) => { await api('PUT', path, { body: v }); wrote(path, v); });
}

function startAdd(path) {
  const li = tree.els.get(path);
  if (!li) return;
  editor(li, { withKey: true, value: '', label: 'Add' }, async ({ key, value }) => {
    if (!key) throw new Error('a key is needed');
    await api('PUT', join(path, key), { body: value });
    wrote(join(path, key), value);
    if (!tree.open.has(path)) await expand(path);
  });
}

function startRename(path) {
  const li = tree.els.get(path);
  if (!li || path === '/') return;
  editor(li, { withKey: true, key: lastKey(path), withValue: false, label: 'Rename' }, async ({ key }) => {
    if (!key || key === lastKey(path)) throw new Error('a new key is needed');
    // Copy (priorities included) and delete in one atomic multi-path update.
    const value = await api('GET', path, { params: { format: 'export' } });
    await api('PATCH', parentOf(path), { body: { [key]: value, [lastKey(path)]: null } });
    wrote(join(parentOf(path), key), plain(value));
    wrote(path, null);
  });
}

function confirmDialog(text, okLabel) {
  const dialog = $('#confirm-dialog');
  $('#confirm-text').textContent = text;
  $('#confirm-ok').textContent = okLabel || 'Delete';
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }));
}

async function remove(path) {
  const li = tree.els.get(path);
  if (!li) return;
  try {
    if (li.kind.t !== 'leaf') {
      const shallow = await api('GET', path, { params: { shallow: 'true' } });
      const count = isObject(shallow) ? childKeys(shallow).length : 0;
      if (count > LARGE_DELETE && !(await confirmDialog('Delete ' + path + ' and its ' + count + ' children?'))) return;
    }
    await api('DELETE', path);
    wrote(path, null);
  } catch (error) { failed('Deleting ' + path)(error); }
}

// Import and export -----------------------------------------------------------------------------
//
// Both show their progress in #transfer-progress and #transfer-state. An export is one GET with
// `format=export` (priorities included), its progress the bytes received. An import of an object
// with more than PART_CHILDREN children (or PART_BYTES of JSON) is sent in parts: a PUT of the
// first part replaces the location, then a PATCH adds each further part, so any size imports
// (a request's body is limited to maxMessageBytes) and its progress is the children written.

const transferState = {
  busy: false,
  begin(text) {
    transferState.busy = true;
    $('#export-button').disabled = true;
    $('#import-file').disabled = true;
    const progress = $('#transfer-progress');
    progress.hidden = false;
    progress.removeAttribute('value');
    $('#transfer-state').textContent = text;
  },
  step(done, total, text) {
    const progress = $('#transfer-progress');
    progress.max = Math.max(1, total);
    progress.value = done;
    $('#transfer-state').textContent = text;
  },
  end(text) {
    transferState.busy = false;
    $('#export-button').disabled = false;
    $('#import-file').disabled = false;
    $('#transfer-progress').hidden = true;
    $('#transfer-state').textContent = text;
  },
};

function kib(n) { return (n / 1024).toFixed(n < 10240 ? 1 : 0) + ' KiB'; }

function exportLocation() {
  if (transferState.busy) return;
  const path = tree.selected || tree.root;
  transferState.begin('exporting ' + path + '…');
  const xhr = new XMLHttpRequest();
  xhr.open('GET', restURL(path, { format: 'export' }));
  xhr.onprogress = (event) => {
    if (event.lengthComputable) transferState.step(event.loaded, event.total, 'exporting ' + path + ': ' + kib(event.loaded) + ' of ' + kib(event.total));
    else $('#transfer-state').textContent = 'exporting ' + path + ': ' + kib(event.loaded);
  };
  xhr.onload = () => {
    if (xhr.status < 200 || xhr.status >= 300) {
      let message = xhr.statusText;
      try { message = JSON.parse(xhr.responseText).error; } catch { }
      transferState.end('export failed: ' + message);
      return;
    }
    const text = xhr.responseText;
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    link.download = 'hearth' + (path === '/' ? '' : path.replaceAll('/', '-')) + '.json';
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
    transferState.end('exported ' + path + ' (' + kib(text.length) + ') as ' + link.download);
  };
  xhr.onerror = () => transferState.end('export failed: network error');
  xhr.send();
}

/** The parts an import is sent in, or null when it is sent whole (a leaf, or small enough). */
function importParts(value) {
  if (!isObject(value) || Array.isArray(value) || '.value' in value) return null;
  const entries = Object.entries(value).filter(([key, child]) => key !== '.priority' && child !== null);
  // A key with a slash is not a key: the server refuses it in a PUT, so send it whole.
  if (entries.some(([key]) => key.includes('/'))) return null;
  const parts = [];
  let part = {}, count = 0, size = 0;
  for (const [key, child] of entries) {
    const bytes = key.length + JSON.stringify(child).length + 4;
    if (count > 0 && (count >= PART_CHILDREN || size + bytes > PART_BYTES)) { parts.push(part); part = {}; count = 0; size = 0; }
    part[key] = child;
    count += 1;
    size += bytes;
  }
  if (count > 0) parts.push(part);
  if (parts.length < 2) return null;
  if ('.priority' in value) parts[0]['.priority'] = value['.priority'];
  return parts;
}

async function importFile(file) {
  if (transferState.busy) return;
  const path = tree.selected || tree.root;
  const text = await file.text();
  let value;
  try { value = JSON.parse(text); } catch { $('#transfer-state').textContent = file.name + ' is not JSON'; return; }
  if (!(await confirmDialog('Replace ' + path + ' with the contents of ' + file.name + ' (' + kib(text.length) + ')?', 'Import'))) return;
  const parts = importParts(value);
  transferState.begin('importing ' + file.name + '…');
  if (!parts) {
    // One request: its progress is the bytes sent.
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', restURL(path, { print: 'silent' }));
    xhr.setRequestHeader('Content-Type', 'application/json');
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) transferState.step(event.loaded, event.total, 'importing ' + file.name + ': ' + kib(event.loaded) + ' of ' + kib(event.total));
    };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        wrote(path, plain(value));
        transferState.end('imported ' + file.name + ' at ' + path);
        return;
      }
      let message = xhr.statusText;
      try { message = JSON.parse(xhr.responseText).error; } catch { }
      transferState.end('import failed: ' + message);
    };
    xhr.onerror = () => transferState.end('import failed: network error');
    xhr.send(text);
    return;
  }
  const total = parts.reduce((sum, part) => sum + Object.keys(part).filter((key) => key !== '.priority').length, 0);
  let done = 0;
  transferState.step(0, total, 'importing ' + file.name + ': 0 of ' + total + ' children');
  for (const [index, part] of parts.entries()) {
    try {
      await api(index === 0 ? 'PUT' : 'PATCH', path, { params: { print: 'silent' }, body: part });
    } catch (error) {
      transferState.end('import failed after ' + done + ' of ' + total + ' children (' + path + ' holds those): ' + error.message);
      return;
    }
    done += Object.keys(part).filter((key) => key !== '.priority').length;
    transferState.step(done, total, 'importing ' + file.name + ': ' + done + ' of ' + total + ' children');
  }
  wrote(path, plain(value));
  transferState.end('imported ' + file.name + ' at ' + path + ' (' + total + ' children, in ' + parts.length + ' parts)');
}

async function copyText(text) {
  try { await navigator.clipboard.writeText(text); status('Copied ' + text); } catch {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
    status('Copied ' + text);
  }
}

function setupData() {
  $('#pathbar').addEventListener('submit', (event) => { event.preventDefault(); openLocation($('#path-input').value); });
  $('#path-up').addEventListener('click', () => openLocation(parentOf(tree.root)));
  $('#path-copy').addEventListener('click', () => copyText(tree.selected || tree.root));
  $('#export-button').addEventListener('click', exportLocation);
  $('#import-file').addEventListener('change', (event) => {
    const file = event.target.files[0];
    if (file) importFile(file);
    event.target.value = '';
  });
}

// ---------------------------------------------------------------------------------------------
// Query: built from the form, run live over one stream, shown in order, with its equivalents.

const query = { source: null, data: null, spec: null };

function readQuery() {
  const form = $('#query-form');
  const field = (name) => form.elements[name].value.trim();
  const spec = { path: normalize(field('path')), orderBy: field('orderBy'), child: field('child'), bounds: {}, limits: {} };
  if (spec.orderBy === 'child' && !spec.child) throw new Error('ordering by child needs a child path');
  for (const name of ['startAt', 'startAfter', 'endAt', 'endBefore', 'equalTo']) {
    const text = field(name);
    if (!text) continue;
    try { spec.bounds[name] = JSON.parse(text); } catch { throw new Error(name + ' must be JSON (a string is "quoted")'); }
  }
  for (const name of ['limitToFirst', 'limitToLast']) {
    const text = field(name);
    if (text) spec.limits[name] = parseInt(text, 10);
  }
  return spec;
}

function queryParams(spec) {
  const order = { key: '$key', value: '$value', priority: '$priority', child: spec.child }[spec.orderBy];
  const params = { orderBy: JSON.stringify(order) };
  for (const [name, value] of Object.entries(spec.bounds)) params[name] = JSON.stringify(value);
  for (const [name, value] of Object.entries(spec.limits)) params[name] = String(value);
  if (spec.orderBy === 'priority') params.format = 'export';
  return params;
}

function shellQuote(text) { return "'" + String(text).replaceAll("'", "'\\''") + "'"; }
function swiftLiteral(value) {
  if (value === null) return 'NSNull()';
  return JSON.stringify(value);
}

function equivalents(spec) {
  const params = queryParams(spec);
  delete params.format;
  const cli = ['hearth get', shellQuote(spec.path)];
  const swift = ['db.reference(withPath: ' + JSON.stringify(spec.path) + ')'];
  switch (spec.orderBy) {
    case 'key': cli.push('--order-by-key'); swift.push('.queryOrderedByKey()'); break;
    case 'value': cli.push('--order-by-value'); swift.push('.queryOrderedByValue()'); break;
    case 'priority': cli.push('--order-by-priority'); swift.push('.queryOrderedByPriority()'); break;
    default: cli.push('--order-by-child', shellQuote(spec.child)); swift.push('.queryOrdered(byChild: ' + JSON.stringify(spec.child) + ')');
  }
  const swiftBound = { startAt: 'queryStarting(atValue: ', startAfter: 'queryStarting(afterValue: ', endAt: 'queryEnding(atValue: ', endBefore: 'queryEnding(beforeValue: ', equalTo: 'queryEqual(toValue: ' };
  for (const [name, value] of Object.entries(spec.bounds)) {
    cli.push('--' + name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()), shellQuote(JSON.stringify(value)));
    swift.push('.' + swiftBound[name] + swiftLiteral(value) + ')');
  }
  for (const [name, value] of Object.entries(spec.limits)) {
    cli.push('--' + name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()), String(value));
    swift.push('.queryLimited(' + (name === 'limitToFirst' ? 'toFirst' : 'toLast') + ': ' + value + ')');
  }
  if (database.name) cli.push('--db', /^[a-z0-9-]+$/.test(database.name) ? database.name : shellQuote(database.name));
  if (auth.token) cli.push('--token "$HEARTH_TOKEN"');
  $('#eq-cli').textContent = cli.join(' ');
  let rest = location.origin + restURL(spec.path, params, false);
  if (auth.token) rest += '&auth=$TOKEN';
  $('#eq-rest').textContent = rest;
  $('#eq-swift').textContent = 'let db = Database(url: "' + lineURL() + '")\n' +
    'let handle = ' + swift.join('\n    ') + '\n    .observe(.value) { snapshot in\n' +
    '        for case let child as DataSnapshot in snapshot.children { print(child.key, child.value ?? "null") }\n    }';
}

// The line protocol's address for the Swift snippet: this host, the port the health answer
// names (`linePort`), TLS when the page came over HTTPS (both listeners share it), and the
// database as the URL's `ns`.
const lineServer = { port: null };
function lineURL() {
  return (location.protocol === 'https:' ? 'hearths://' : 'hearth://') + location.hostname + ':' + (lineServer.port ?? 9000) +
    (database.name ? '/?ns=' + encodeURIComponent(database.name) : '');
}
async function learnLinePort() {
  try {
    const health = await (await fetch('/.well-known/hearth/health', { cache: 'no-store' })).json();
    if (Number.isInteger(health.linePort)) lineServer.port = health.linePort;
  } catch { /* the snippet keeps the default port */ }
}

function sortedEntries(spec, data) {
  if (!isObject(data)) return [];
  const entries = Object.entries(data).filter(([, value]) => value !== null);
  let sortValue;
  switch (spec.orderBy) {
    case 'key': return entries.sort((a, b) => compareKeys(a[0], b[0]));
    case 'value': sortValue = (v) => plain(v); break;
    case 'priority': sortValue = (v) => priorityOf(v); break;
    default: sortValue = (v) => childAt(plain(v), spec.child);
  }
  return entries.sort((a, b) => compareValues(sortValue(a[1]), sortValue(b[1])) || compareKeys(a[0], b[0]));
}

function renderQuery(changed) {
  const list = $('#query-result');
  list.textContent = '';
  const spec = query.spec;
  for (const [key, value] of sortedEntries(spec, query.data)) {
    const li = document.createElement('li');
    const shown = plain(value);
    li.dataset.path = join(spec.path, key);
    li.dataset.key = key;
    li.dataset.value = JSON.stringify(shown);
    li.textContent = key + ': ' + JSON.stringify(shown);
    if (spec.orderBy === 'priority') li.textContent += '  (priority ' + JSON.stringify(priorityOf(value)) + ')';
    if (changed && changed.has(key)) li.classList.add('flash');
    list.append(li);
  }
  $('#query-state').textContent = list.children.length + ' children, live';
}

function setAt(root, path, value) {
  const keys = segments(path);
  if (keys.length === 0) return value;
  const top = isObject(root) ? root : {};
  let node = top;
  for (const key of keys.slice(0, -1)) { if (!isObject(node[key])) node[key] = {}; node = node[key]; }
  const last = keys[keys.length - 1];
  if (value === null) delete node[last]; else node[last] = value;
  return top;
}

function runQuery() {
  $('#query-error').textContent = '';
  let spec;
  try { spec = readQuery(); } catch (error) { $('#query-error').textContent = error.message; return; }
  query.spec = spec;
  equivalents(spec);
  query.source?.close();
  query.data = null;
  $('#query-result').textContent = '';
  $('#query-state').textContent = 'running…';
  const source = new EventSource(restURL(spec.path, queryParams(spec)));
  query.source = source;
  // Reconnects (the browser's own) that ended before a first event, in a row.
  let failures = 0;
  source.addEventListener('put', (event) => {
    failures = 0;
    const { path, data } = JSON.parse(event.data);
    query.data = setAt(query.data, path, data);
    renderQuery(new Set(segments(path).slice(0, 1)));
  });
  source.addEventListener('patch', (event) => {
    const { path, data } = JSON.parse(event.data);
    const changed = new Set();
    for (const [member, value] of Object.entries(data)) {
      const full = join(path, member);
      query.data = setAt(query.data, full, value);
      changed.add(segments(full)[0]);
    }
    renderQuery(changed);
  });
  source.addEventListener('cancel', () => { source.close(); $('#query-error').textContent = 'Permission denied'; });
  source.addEventListener('error', async () => {
    if (query.source !== source) return;  // replaced (another query, another database)
    // A stream that was live reconnects by itself, unless it keeps ending before its first
    // event (the server closes a stream whose result passes its maxOutboundBytes, and would again).
    if (query.data !== null && source.readyState !== EventSource.CLOSED && ++failures < STREAM_TRIES) {
      $('#query-state').textContent = 'reconnecting…';
      return;
    }
    source.close();
    if (query.data !== null && failures >= STREAM_TRIES) {
      $('#query-error').textContent = 'the server closed the stream ' + failures +
        ' times in a row before its first event: the result may be more than it sends at once; narrow the query (a limit)';
      $('#query-state').textContent = 'stopped';
      return;
    }
    // EventSource hides the reason: the same query as a HEAD tells whether it is refused (then a
    // GET, whose answer is the short error, shows why) or large.
    try {
      const head = await fetch(restURL(spec.path, queryParams(spec)), { method: 'HEAD' });
      if (head.ok) {
        $('#query-error').textContent = 'the server closed the stream before its first event; the result is ' +
          bytes(Number(head.headers.get('Content-Length')) || 0) + ', which may be more than it sends at once: narrow the query (a limit)';
      } else {
        await api('GET', spec.path, { params: queryParams(spec) });
      }
    } catch (error) { $('#query-error').textContent = error.message; }
    $('#query-state').textContent = 'stopped';
  });
}

/** Another database is chosen: a running query runs again on it, a stopped one is cleared. */
function restartQuery() {
  const running = query.source !== null && query.source.readyState !== EventSource.CLOSED;
  query.source?.close();
  query.source = null;
  query.data = null;
  $('#query-result').textContent = '';
  $('#query-error').textContent = '';
  $('#query-state').textContent = '';
  if (running) runQuery(); else if (query.spec) equivalents(query.spec);
}

function setupQuery() {
  $('#query-form').addEventListener('submit', (event) => { event.preventDefault(); runQuery(); });
  $('#query-stop').addEventListener('click', () => { query.source?.close(); $('#query-state').textContent = 'stopped'; });
  $('#query-form').addEventListener('input', () => { try { equivalents(readQuery()); } catch { } });
}

// ---------------------------------------------------------------------------------------------
// Rules: edited as text, validated by the server (errors marked at their line), and simulated.

const rules = {
  async load() {
    const state = $('#rules-state');
    try {
      const document = await api('GET', '/.settings/rules');
      $('#rules-text').value = JSON.stringify(document, null, 2);
      $('#rules-error').textContent = '';
      state.textContent = 'loaded';
      rules.gutter(null);
    } catch (error) {
      state.textContent = 'cannot read the rules: ' + error.message + (error.status === 401 ? ' (sign in as an admin)' : '');
    }
  },
  async save() {
    const text = $('#rules-text').value;
    const state = $('#rules-state');
    const errorBox = $('#rules-error');
    try {
      await api('PUT', '/.settings/rules', { text });
      errorBox.textContent = '';
      delete errorBox.dataset.line;
      rules.gutter(null);
      state.textContent = 'saved at ' + new Date().toLocaleTimeString();
    } catch (error) {
      errorBox.textContent = error.message;
      const line = /line (\d+)/.exec(error.message);
      const column = /column (\d+)/.exec(error.message);
      const lineNumber = line ? Number(line[1]) : null;
      if (lineNumber) errorBox.dataset.line = String(lineNumber); else delete errorBox.dataset.line;
      rules.gutter(lineNumber);
      if (lineNumber) rules.reveal(lineNumber, column ? Number(column[1]) : 1);
      state.textContent = 'not saved: the rules in force are unchanged';
    }
  },
  gutter(badLine) {
    const count = $('#rules-text').value.split('\n').length;
    const gutter = $('#rules-gutter');
    gutter.textContent = '';
    for (let n = 1; n <= count; n++) {
      const span = document.createElement('span');
      span.textContent = String(n);
      span.dataset.line = String(n);
      if (n === badLine) { span.className = 'bad'; span.title = $('#rules-error').textContent; }
      gutter.append(span, '\n');
    }
    rules.badLine = badLine;
    gutter.scrollTop = $('#rules-text').scrollTop;
  },
  reveal(line, column) {
    const area = $('#rules-text');
    const lines = area.value.split('\n');
    let offset = 0;
    for (let n = 1; n < line && n <= lines.length; n++) offset += lines[n - 1].length + 1;
    offset += Math.max(0, column - 1);
    area.focus();
    area.setSelectionRange(offset, offset);
    area.scrollTop = Math.max(0, (line - 5) * 18);
  },
};

async function simulate(event) {
  event.preventDefault();
  const form = $('#simulator');
  const out = $('#sim-result');
  const field = (name) => form.elements[name].value.trim();
  try {
    const request = { op: field('op'), path: normalize(field('path')) };
    if (request.op === 'set' || request.op === 'update') {
      const text = field('value');
      request[request.op === 'set' ? 'value' : 'values'] = text ? JSON.parse(text) : null;
    }
    let as = null;
    if (field('as') === 'admin') as = 'admin';
    if (field('as') === 'uid') {
      as = { uid: field('uid') };
      if (field('claims')) as.token = JSON.parse(field('claims'));
    }
    const verdict = await api('POST', '/.settings/simulate', { body: { as, request } });
    out.className = 'verdict ' + (verdict.allowed ? 'allowed' : 'denied');
    out.dataset.allowed = String(verdict.allowed);
    out.textContent = (verdict.allowed ? 'Allowed' : 'Denied') + ': ' + verdict.explanation +
      (verdict.rule ? ' — ' + verdict.rule.path + ': ' + verdict.rule.expression : '');
  } catch (error) {
    out.className = 'verdict denied';
    delete out.dataset.allowed;
    out.textContent = error.message;
  }
}

function setupRules() {
  const area = $('#rules-text');
  area.addEventListener('input', () => rules.gutter(rules.badLine));
  area.addEventListener('scroll', () => { $('#rules-gutter').scrollTop = area.scrollTop; });
  area.addEventListener('keydown', (event) => {
    if (event.key === 's' && (event.ctrlKey || event.metaKey)) { event.preventDefault(); rules.save(); }
  });
  $('#rules-save').addEventListener('click', () => rules.save());
  $('#rules-reload').addEventListener('click', () => rules.load());
  $('#simulator').addEventListener('submit', simulate);
}

// ---------------------------------------------------------------------------------------------
// Server: /.well-known/hearth/stats every second, as numbers and sparklines.

const server = { history: [], last: null };
const CARDS = [
  ['connections', 'Connections', (s) => s.connections.tcp + s.connections.http, (s) => 'tcp ' + s.connections.tcp + ', http ' + s.connections.http],
  ['subscriptions', 'Subscriptions', (s) => s.subscriptions + s.sseStreams, (s) => s.subscriptions + ' subscriptions, ' + s.sseStreams + ' streams'],
  ['writes', 'Writes / s', null, null],
  ['events', 'Events / s', null, null],
  ['rev', 'Revision', (s) => s.rev, null],
  ['size', 'Data size', (s) => s.storage.walBytes + s.storage.snapshotBytes, (s) => 'log ' + bytes(s.storage.walBytes) + ', snapshot ' + bytes(s.storage.snapshotBytes)],
];
function bytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
  if (n < 1024 * 1024 * 1024) return (n / 1024 / 1024).toFixed(1) + ' MiB';
  return (n / 1024 / 1024 / 1024).toFixed(1) + ' GiB';
}

function sparkline(values) {
  const width = 200, height = 36;
  const max = Math.max(1, ...values), min = Math.min(0, ...values);
  const points = values.map((v, i) => {
    const x = values.length < 2 ? width : (i / (values.length - 1)) * width;
    const y = height - 2 - ((v - min) / (max - min || 1)) * (height - 4);
    return x.toFixed(1) + ',' + y.toFixed(1);
  });
  return '<svg viewBox="0 0 ' + width + ' ' + height + '" preserveAspectRatio="none" role="img" aria-label="last minute">' +
    '<polyline points="' + points.join(' ') + '"/></svg>';
}

function text(value) { const span = document.createElement('span'); span.textContent = value; return span.innerHTML; }

async function pollStats() {
  let stats;
  try {
    // With rules, stats are for admins (they name the paths of slow queries).
    const query = auth.token ? '?auth=' + encodeURIComponent(auth.token) : '';
    const response = await fetch('/.well-known/hearth/stats' + query, { cache: 'no-store' });
    stats = await response.json();
    // Stats answer everyone in open mode only: a refusal means the server has rules.
    if (response.ok || response.status === 401 || response.status === 403) {
      $('#auth-input').placeholder = response.ok && !stats.rules.enabled ? 'none (open mode)' : 'required: the server has rules';
    }
    if (!response.ok) {
      $('#server-cards').textContent = 'Stats: ' + (stats.error || response.status) + ' (with rules, sign in as an admin)';
      return;
    }
  } catch { return; }
  const now = Date.now();
  const point = { at: now };
  for (const [name, , value] of CARDS) if (value) point[name] = value(stats);
  if (server.last) {
    const seconds = Math.max(0.001, (now - server.last.at) / 1000);
    point.writes = Math.max(0, (stats.totals.writes - server.last.stats.totals.writes) / seconds);
    point.events = Math.max(0, (stats.totals.events - server.last.stats.totals.events) / seconds);
  } else { point.writes = 0; point.events = 0; }
  server.last = { at: now, stats };
  server.history.push(point);
  if (server.history.length > 60) server.history.shift();
  const cards = $('#server-cards');
  cards.innerHTML = CARDS.map(([name, title, , detail]) => {
    const series = server.history.map((p) => p[name]);
    const current = series[series.length - 1];
    const shown = name === 'size' ? bytes(current) : (Number.isInteger(current) ? current : current.toFixed(1));
    return '<div class="card" data-metric="' + name + '"><h4>' + title + '</h4><div class="number">' + text(String(shown)) +
      '</div>' + sparkline(series) + '<div class="muted">' + (detail ? text(detail(stats)) : '&nbsp;') + '</div></div>';
  }).join('') +
    '<div class="card" data-metric="server"><h4>Server</h4><div class="number">' + text(stats.server.name) +
    '</div><div class="muted">up ' + stats.server.uptimeSeconds + ' s · rules ' + (stats.rules.enabled ? 'on' : 'off (open mode)') +
    ' · ' + stats.totals.requests + ' requests, ' + stats.totals.errors + ' errors</div></div>';
  const rows = (list, last) => list.map((q) => '<tr><td>' + text(q.path) + '</td><td>' + text(q.query) + '</td><td>' +
    text(String(last(q))) + '</td><td>' + q.count + '</td></tr>').join('') || '<tr><td colspan="4" class="muted">none in the last ' +
    Math.round(stats.queries.windowSeconds / 60) + ' minutes</td></tr>';
  $('#slow-queries tbody').innerHTML = rows(stats.queries.slowest, (q) => q.maxMicros ?? '');
  $('#unindexed-queries tbody').innerHTML = rows(stats.queries.unindexed, (q) => q.indexOn ?? '');
}

// ---------------------------------------------------------------------------------------------
// Databases: the picker in the header lists the server's databases (for admins), shows the one
// every request addresses, switches to another (listed or typed), creates one (admins), shows
// the chosen one's information, and deletes it (admins).

/**
 * A call to `/.well-known/hearth/databases[/<name>][?<query>]`, with the credential as a bearer
 * token.
 */
async function databasesCall(method, name, query = {}) {
  const headers = {};
  if (auth.token) headers.Authorization = 'Bearer ' + auth.token;
  const search = new URLSearchParams(query).toString();
  const url = '/.well-known/hearth/databases' + (name === undefined ? '' : '/' + encodeURIComponent(name)) +
    (search ? '?' + search : '');
  return answerOf(await fetch(url, { method, headers, cache: 'no-store' }));
}

/** The picker's message: `kind` is its data-state (`error`, `ok`, or `info`). */
function databaseState(text, kind = 'info') {
  const state = $('#db-state');
  state.textContent = text || '';
  state.dataset.state = kind;
  delete state.dataset.movedTo;
  state.className = kind === 'error' ? 'error' : 'muted';
}

/** Reads the list (an admin's; refused, the picker still opens a typed name). */
async function listDatabases() {
  try {
    const { databases } = await databasesCall('GET');
    database.listed = databases.map((info) => info.name);
    database.defaultName = databases.find((info) => info.default)?.name ?? database.defaultName;
    if ($('#db-state').dataset.state === 'info') databaseState('');
  } catch (error) {
    database.listed = null;
    databaseState(error.status === 401 || error.status === 403
      ? 'listing databases needs an admin secret: type a name to open one'
      : 'cannot list the databases: ' + error.message);
  }
  showDatabases();
  inspectDatabase();
}

/** The picker as `database` says: the default, the listed databases and the current one. */
function showDatabases() {
  const select = $('#db-select');
  select.textContent = '';
  const defaultLabel = database.defaultName === null ? 'default database'
    : database.defaultName === 'default' ? 'default' : database.defaultName + ' (default)';
  select.append(new Option(defaultLabel, ''));
  const names = new Set(database.listed || []);
  if (database.name) names.add(database.name);
  names.delete(database.defaultName);
  for (const name of [...names].sort()) select.append(new Option(name, name));
  select.value = database.name === database.defaultName ? '' : database.name;
  $('#db-create').hidden = database.listed === null;
  // Delete: for admins (the list could be read), on a database other than the default.
  $('#db-delete').hidden = database.listed === null || !database.name;
  const picker = $('#database');
  picker.dataset.ns = database.name;
  picker.dataset.current = database.name || database.defaultName || '';
}

/**
 * Makes `name` ('' or the default's name: the default database) the database of every request:
 * the page's URL keeps it, the tree opens its root, a running query runs again on it, and the
 * rules panel reads its rules. Not while a transfer runs (its parts would go to two databases).
 */
function useDatabase(name) {
  if (name === database.defaultName) name = '';
  if (name === database.name) { showDatabases(); return; }
  if (transferState.busy) {
    databaseState('wait for the transfer to finish before switching databases', 'error');
    showDatabases();
    return;
  }
  database.name = name;
  const params = new URLSearchParams(location.search);
  if (name) params.set('ns', name); else params.delete('ns');
  const search = params.toString();
  history.replaceState(null, '', location.pathname + (search ? '?' + search : '') + location.hash);
  showDatabases();
  status('');
  openLocation('/');
  restartQuery();
  $('#rules-error').textContent = '';
  if (!$('#panel-rules').hidden) rules.load();
  closeDeadLetters();
  if (!$('#panel-triggers').hidden) loadTriggers();
  inspectDatabase();
}

/**
 * Opens the database typed in the field. One shallow read of its root comes first: a bad name
 * (400) or a database the server does not have and does not create on first use (404) shows the
 * server's message, and the console stays where it is. Any other answer (a read the rules
 * refuse, say) opens it.
 */
async function openTypedDatabase() {
  const name = $('#db-name').value.trim();
  if (!name) { databaseState('type the name of a database', 'error'); return; }
  try {
    const response = await fetch(restURL('/', { shallow: 'true' }, true, name), { cache: 'no-store' });
    if (response.status === 400 || response.status === 404) await answerOf(response);
  } catch (error) {
    databaseState(error.message, 'error');
    return;
  }
  $('#db-name').value = '';
  databaseState('');
  useDatabase(name);
}

/** Creates the database named in the field (`PUT`, admins) and opens it. */
async function createDatabase() {
  const name = $('#db-name').value.trim();
  if (!name) { databaseState('type a name for the new database', 'error'); return; }
  try {
    await databasesCall('PUT', name);
  } catch (error) {
    databaseState('cannot create ' + name + ': ' + error.message, 'error');
    return;
  }
  $('#db-name').value = '';
  await listDatabases();
  useDatabase(name);
  databaseState('created ' + name, 'ok');
}

// The information panel: `GET /.well-known/hearth/databases/<name>` for the chosen database, read
// when the panel opens, when the database changes, after the list is read again (signing in or
// out) and on Refresh. Only the latest read is shown.
let inspection = 0;

/** Reads and shows the chosen database's information, when the panel is open. */
async function inspectDatabase() {
  const panel = $('#db-panel');
  if (panel.hidden) return;
  const reading = ++inspection;
  const name = database.name || database.defaultName;
  const infoState = $('#db-info-state');
  infoState.className = 'muted';
  if (name === null) {
    // The default database's name comes from the list; without it, nothing can be asked.
    showDatabaseInfo(null);
    infoState.className = 'error';
    infoState.textContent = 'reading a database\'s information needs an admin secret';
    return;
  }
  infoState.textContent = 'reading…';
  try {
    const info = await databasesCall('GET', name);
    if (reading !== inspection) return;
    showDatabaseInfo(info);
    infoState.textContent = 'as of ' + new Date().toLocaleTimeString();
  } catch (error) {
    if (reading !== inspection) return;
    showDatabaseInfo(null);
    infoState.className = 'error';
    infoState.textContent = 'cannot read ' + name + '\'s information: ' + error.message;
  }
}

/** Fills the panel with `info` (an INFO object of the databases API), or empties it. */
function showDatabaseInfo(info) {
  const panel = $('#db-panel');
  const quotas = [];
  if (info && info.maxBytes !== null && info.maxBytes !== undefined) quotas.push('at most ' + bytes(info.maxBytes) + ' on disk');
  if (info && info.maxConnections !== null && info.maxConnections !== undefined) {
    quotas.push('at most ' + info.maxConnections + ' connections');
  }
  const fields = info === null ? {} : {
    name: info.name + (info.default ? ' (the default database)' : ''),
    open: info.open ? 'open' : 'closed',
    rev: info.rev === undefined || info.rev === null ? '— (read while open)' : String(info.rev),
    bytes: bytes(info.bytes) + (info.bytes >= 1024 ? ' (' + info.bytes.toLocaleString('en') + ' bytes)' : ''),
    connections: String(info.connections),
    directory: info.directory,
    quotas: quotas.length ? quotas.join(', ') : 'none',
  };
  for (const element of panel.querySelectorAll('[data-field]')) {
    element.textContent = fields[element.dataset.field] ?? '';
  }
  panel.dataset.name = info ? info.name : '';
  panel.dataset.open = info ? String(info.open) : '';
  panel.dataset.rev = info && info.rev !== undefined && info.rev !== null ? String(info.rev) : '';
  panel.dataset.directory = info ? info.directory : '';
}

function toggleDatabaseInfo() {
  const panel = $('#db-panel');
  panel.hidden = !panel.hidden;
  $('#db-info-button').setAttribute('aria-expanded', String(!panel.hidden));
  inspectDatabase();
}

/** Asks before deleting the chosen database: the user types its name, and may choose to purge. */
function askDeleteDatabase() {
  const name = database.name;
  if (!name) return;
  const dialog = $('#db-delete-dialog');
  dialog.dataset.name = name;
  $('#db-delete-name').textContent = name;
  $('#db-delete-confirm').value = '';
  $('#db-delete-purge').checked = false;
  $('#db-delete-error').textContent = '';
  dialog.showModal();
}

/** The dialog's Delete: only with the name typed exactly; anything else deletes nothing. */
function confirmDeleteDatabase(event) {
  event.preventDefault();
  const dialog = $('#db-delete-dialog');
  const name = dialog.dataset.name;
  if ($('#db-delete-confirm').value.trim() !== name) {
    $('#db-delete-error').textContent = 'type ' + name + ' to delete it: nothing was deleted';
    return;
  }
  dialog.close();
  deleteDatabase(name, $('#db-delete-purge').checked);
}

/**
 * Deletes database `name` (`DELETE /.well-known/hearth/databases/<name>[?purge=true]`, admins).
 * The console moves to the default database first: its own stream, query and reads would
 * otherwise keep the database open, and a server that creates databases on first use would
 * create it again. When the server refuses, the console goes back to it (unless it does not
 * exist) and shows the server's message.
 */
async function deleteDatabase(name, purge) {
  if (transferState.busy) {
    databaseState('wait for the transfer to finish before deleting a database', 'error');
    return;
  }
  useDatabase('');
  databaseState('deleting ' + name + '…');
  let answer;
  try {
    answer = await databasesCall('DELETE', name, purge ? { purge: 'true' } : {});
  } catch (error) {
    if (error.status !== 404) useDatabase(name);
    databaseState('cannot delete ' + name + ': ' + error.message, 'error');
    return;
  }
  await listDatabases();
  if (answer.purged) {
    databaseState('deleted ' + name + ': its files were removed (purged)', 'ok');
  } else {
    databaseState('deleted ' + name + ': its data moved to ' + answer.movedTo, 'ok');
    $('#db-state').dataset.movedTo = answer.movedTo || '';
  }
}

function setupDatabases() {
  $('#db-select').addEventListener('change', (event) => { databaseState(''); useDatabase(event.target.value); });
  $('#database').addEventListener('submit', (event) => { event.preventDefault(); openTypedDatabase(); });
  $('#db-create').addEventListener('click', createDatabase);
  $('#db-info-button').addEventListener('click', toggleDatabaseInfo);
  $('#db-refresh').addEventListener('click', inspectDatabase);
  $('#db-delete').addEventListener('click', askDeleteDatabase);
  $('#db-delete-form').addEventListener('submit', confirmDeleteDatabase);
  $('#db-delete-cancel').addEventListener('click', () => $('#db-delete-dialog').close());
  showDatabases();
}

// ---------------------------------------------------------------------------------------------
// Triggers: the chosen database's triggers with their status (read again every two seconds
// while the panel shows), a trigger's dead letters, and replaying them; admins only
// (docs/REST.md, "Triggers").

const triggers = {
  // The trigger whose dead letters show, or null.
  deadLetters: null,
  // Counts the reads: an answer that returns after a newer read was asked for is dropped.
  reading: 0,
};

/**
 * A call to `/.well-known/hearth/triggers[<suffix>]` on the chosen database, with the credential
 * as a bearer token and `body` sent as JSON.
 */
async function triggersCall(method, suffix = '', { query = {}, body } = {}) {
  const headers = {};
  if (auth.token) headers.Authorization = 'Bearer ' + auth.token;
  const params = new URLSearchParams(query);
  if (database.name) params.set('ns', database.name);
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  const search = params.toString();
  return answerOf(await fetch('/.well-known/hearth/triggers' + suffix + (search ? '?' + search : ''), init));
}

/** A message beside the panel's Refresh button (or the dead letters' when `where` says so). */
function triggersState(message, isError = false, where = '#triggers-state') {
  const state = $(where);
  state.textContent = message || '';
  state.className = isError ? 'error' : 'muted';
}

/** A table cell holding `value` as text. */
function cell(value, className) {
  const td = document.createElement('td');
  td.textContent = value === null || value === undefined ? '—' : String(value);
  if (className) td.className = className;
  return td;
}

/** Reads the triggers' status, and the shown dead letters, once. */
async function loadTriggers() {
  const reading = ++triggers.reading;
  const ns = database.name;
  let list;
  try {
    ({ triggers: list } = await triggersCall('GET'));
  } catch (error) {
    if (reading !== triggers.reading || ns !== database.name) return;
    $('#triggers-table tbody').replaceChildren();
    triggersState(error.status === 401 ? 'the triggers are for admins: sign in with an admin secret'
      : 'cannot read the triggers: ' + error.message, true);
    return;
  }
  if (reading !== triggers.reading || ns !== database.name) return;
  showTriggers(list);
  if (triggers.deadLetters !== null) loadDeadLetters(triggers.deadLetters);
}

/** One row per trigger, with a button that shows its dead letters. */
function showTriggers(list) {
  const rows = list.map((trigger) => {
    const tr = document.createElement('tr');
    tr.dataset.trigger = trigger.name;
    tr.dataset.state = trigger.state;
    const state = cell(trigger.state);
    state.dataset.state = trigger.state;
    const lag = Number(trigger.lagSeconds) || 0;
    tr.append(
      cell(trigger.name), cell(trigger.path), cell((trigger.on || []).join(', ')), cell(trigger.url), state,
      cell(trigger.deliveredRev), cell(trigger.lagRevisions), cell(lag < 10 ? lag.toFixed(1) : Math.round(lag)),
      cell(trigger.delivered), cell(trigger.failed), cell(trigger.retried), cell(trigger.deadLetters),
      cell(trigger.lostRevisions), cell(trigger.lastError, trigger.lastError ? 'error-text' : undefined));
    const actions = document.createElement('td');
    actions.append(button('Dead letters', 'Show the events of ' + trigger.name + ' that kept failing',
      () => loadDeadLetters(trigger.name)));
    tr.append(actions);
    return tr;
  });
  if (rows.length === 0) {
    const tr = document.createElement('tr');
    const td = cell('no triggers on this database (hearth triggers add, or the configuration\'s triggers)', 'muted');
    td.colSpan = 15;
    tr.append(td);
    rows.push(tr);
  }
  $('#triggers-table tbody').replaceChildren(...rows);
  triggersState(list.length === 1 ? '1 trigger' : list.length + ' triggers');
}

/** Shows the dead letters of the trigger `name`, oldest first. */
async function loadDeadLetters(name) {
  const section = $('#dead-letters');
  const ns = database.name;
  if (triggers.deadLetters !== name) {
    triggers.deadLetters = name;
    $('#dead-letters-name').textContent = name;
    $('#dead-letters-table tbody').replaceChildren();
    triggersState('', false, '#dead-letters-state');
  }
  section.hidden = false;
  section.dataset.trigger = name;
  let letters;
  try {
    ({ deadLetters: letters } = await triggersCall('GET', '/' + encodeURIComponent(name) + '/dead-letters',
      { query: { limit: '100' } }));
  } catch (error) {
    if (triggers.deadLetters !== name || ns !== database.name) return;
    triggersState('cannot read the dead letters: ' + error.message, true, '#dead-letters-state');
    return;
  }
  if (triggers.deadLetters !== name || ns !== database.name) return;
  const rows = letters.map((letter) => {
    const tr = document.createElement('tr');
    tr.dataset.event = letter.id;
    const actions = document.createElement('td');
    actions.append(button('Replay', 'Send this event again', () => replay(name, [letter.id])));
    tr.append(cell(letter.id), cell(letter.rev), cell(letter.path), cell(letter.kind),
      cell(new Date(letter.deadAt).toLocaleString()), cell(letter.attempts), cell(letter.lastError, 'error-text'), actions);
    return tr;
  });
  if (rows.length === 0) {
    const tr = document.createElement('tr');
    const td = cell('no dead letters', 'muted');
    td.colSpan = 8;
    tr.append(td);
    rows.push(tr);
  }
  $('#dead-letters-table tbody').replaceChildren(...rows);
  $('#dead-letters-replay').disabled = letters.length === 0;
}

/** Sends the dead letters of `name` again: those of `ids`, or all of them. */
async function replay(name, ids) {
  try {
    const { replayed } = await triggersCall('POST', '/' + encodeURIComponent(name) + '/replay',
      ids ? { body: { ids } } : {});
    triggersState('queued ' + replayed + ' for delivery', false, '#dead-letters-state');
  } catch (error) {
    triggersState('cannot replay: ' + error.message, true, '#dead-letters-state');
  }
  loadTriggers();
}

function closeDeadLetters() {
  triggers.deadLetters = null;
  $('#dead-letters').hidden = true;
}

function setupTriggers() {
  $('#triggers-refresh').addEventListener('click', loadTriggers);
  $('#dead-letters-replay').addEventListener('click', () => {
    if (triggers.deadLetters !== null) replay(triggers.deadLetters, null);
  });
  $('#dead-letters-close').addEventListener('click', closeDeadLetters);
  setInterval(() => { if (!$('#panel-triggers').hidden) loadTriggers(); }, 2000);
}

// ---------------------------------------------------------------------------------------------
// Sign-in and start

function showAuth() {
  $('#auth-state').textContent = auth.token ? 'signed in' : 'not signed in';
  $('#auth-input').value = auth.token;
}

function setupAuth() {
  $('#signin').addEventListener('submit', (event) => {
    event.preventDefault();
    auth.token = $('#auth-input').value.trim();
    showAuth();
    status('');
    openLocation(tree.root);
    if (!$('#panel-rules').hidden) rules.load();
    if (!$('#panel-triggers').hidden) loadTriggers();
    listDatabases();
  });
  $('#signout').addEventListener('click', () => {
    auth.token = '';
    showAuth();
    openLocation(tree.root);
    if (!$('#panel-triggers').hidden) loadTriggers();
    listDatabases();
  });
}

document.addEventListener('DOMContentLoaded', () => {
  setupTabs();
  setupAuth();
  setupData();
  setupQuery();
  setupRules();
  setupDatabases();
  setupTriggers();
  showAuth();
  openLocation(decodeURIComponent(location.hash.slice(1)) || '/');
  learnLinePort();
  listDatabases();
  pollStats();
  setInterval(pollStats, 1000);
  window.hearthConsole = {
    tree, query, rules, database, triggers, openLocation, runQuery, useDatabase, inspectDatabase, deleteDatabase, loadTriggers,
  };
});
