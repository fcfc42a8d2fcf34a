// Scenarios that run the Firebase JS SDK, unmodified, against hearthd's Firebase endpoint.
// Written against a small adapter (api-compat.js, api-modular.js) so the same steps run in the
// compat bundles in Node, the npm modular build in Node, and the compat bundles in Chromium.
//
// Each scenario prints the events the SDK raised as JSON lines through ctx.emit
// ({"s":scenario,"c":client,"e":event,...}) and ends with its own verdict
// ({"s":scenario,"verdict":"PASS"|"FAIL"|"SKIP","detail":...}).
//
// ctx: host, port, ns; tls (the server speaks TLS: https:// and wss:// URLs, no emulator mode); prefix (a path of its own for this run); vectors (the parsed
// conformance vectors, or null); rules (true when the server runs with scripts/firebase-sdk/rules.json);
// adminSecret (an admin secret of that server, for "rules-revoked"); line (Node only: opens a
// line-protocol connection, for "cross-protocol"); server (Node only: kill()
// and start() of a hearthd this driver owns, for "restart").
(function (root) {
  'use strict';

  const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

  // JSON with object keys sorted, to compare values whatever their key order.
  function canonical(value) {
    if (value === null || typeof value !== 'object') return JSON.stringify(value);
    if (Array.isArray(value)) return '[' + value.map(canonical).join(',') + ']';
    return '{' + Object.keys(value).sort().map(k => JSON.stringify(k) + ':' + canonical(value[k])).join(',') + '}';
  }
  const same = (a, b) => canonical(a) === canonical(b);
  const httpBase = ctx => (ctx.tls ? 'https://' : 'http://') + ctx.host + ':' + ctx.port;

  async function waitFor(predicate, timeoutMs, what) {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      if (predicate()) return true;
      await sleep(20);
    }
    if (predicate()) return true;
    throw new Error('timed out after ' + timeoutMs + ' ms waiting for ' + what);
  }

  function withTimeout(promise, ms, what) {
    let timer;
    return Promise.race([
      promise.finally(() => clearTimeout(timer)),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timed out after ' + ms + ' ms: ' + what)), ms); }),
    ]);
  }

  const short = v => {
    const text = canonical(v === undefined ? null : v);
    return text.length > 200 ? text.slice(0, 120) + '...(' + text.length + ' chars)' : text;
  };
  const keysOf = snapshot => { const keys = []; snapshot.forEach(child => { keys.push(child.key); }); return keys; };
  const errorText = e => (e && e.code ? e.code + ': ' : '') + (e && e.message || String(e));

  // Listens for the given event types on `query`, recording [type, key, prevKey] and emitting
  // each as a line; returns {events, off}.
  function record(api, ctx, scenario, client, query, types, options) {
    const events = [];
    const offs = types.map(type => api.on(query, type, (snapshot, previous) => {
      const event = type === 'value'
        ? { type, key: null, prev: null, val: snapshot.val(), keys: keysOf(snapshot) }
        : { type, key: snapshot.key, prev: type === 'child_removed' ? null : previous, val: snapshot.val() };
      events.push(event);
      const line = { s: scenario, c: client, e: type };
      if (type !== 'value') { line.k = event.key; line.p = event.prev; }
      if (!(options && options.quiet)) line.v = short(event.val);
      ctx.emit(line);
    }, options && options.cancel));
    return { events, off: () => offs.forEach(off => off()) };
  }

  // ---------------------------------------------------------------------------------------------
  // The guides' examples: reading once, value and child events.

  async function readOnce(api, ctx, s) {
    const a = api.connect(ctx), b = api.connect(ctx);
    const base = ctx.prefix + '/' + s;
    const dinosaurs = {
      stegosaurus: { height: 4, length: 9, order: 'ornithischia' },
      trex: { height: 6, length: 12, order: 'theropoda' },
      bruhathkayosaurus: { height: 25, length: 44, order: 'saurischia' },
    };
    await api.set(api.ref(a, base + '/dinosaurs'), dinosaurs);
    const once = await api.once(api.ref(b, base + '/dinosaurs'));
    ctx.emit({ s, c: 'b', e: 'once', v: short(once.val()) });
    const got = await api.get(api.ref(b, base + '/dinosaurs/trex/height'));
    ctx.emit({ s, c: 'b', e: 'get', v: got.val() });
    const missing = await api.get(api.ref(b, base + '/nothing'));
    ctx.emit({ s, c: 'b', e: 'get', v: missing.val(), exists: missing.exists() });
    const fresh = api.connect(ctx);
    const fetched = await api.get(api.ref(fresh, base + '/dinosaurs'));
    ctx.emit({ s, c: 'c', e: 'get', v: short(fetched.val()) });
    const ok = same(once.val(), dinosaurs) && got.val() === 6 && missing.val() === null && !missing.exists()
      && same(fetched.val(), dinosaurs);
    return { ok, detail: ok ? 'once/get equal to what was written; absent location null' : 'values differ' };
  }

  // The guides' dinosaur example: read one dinosaur's height once, then query the dinosaurs up to
  // that height, the last two in height order (the one just shorter, and itself); a listener
  // removed raises nothing more.
  async function dinosaurFacts(api, ctx, s) {
    const a = api.connect(ctx), b = api.connect(ctx);
    const base = ctx.prefix + '/' + s + '/dinosaurs';
    await api.set(api.ref(a, base), {
      bruhathkayosaurus: { height: 25, length: 44 }, lambeosaurus: { height: 2.1, length: 12.5 },
      linhenykus: { height: 0.6, length: 1 }, pterodactyl: { height: 0.6, length: 0.8 },
      stegosaurus: { height: 4, length: 9 }, triceratops: { height: 3, length: 8 },
    });
    const height = (await api.once(api.ref(b, base + '/stegosaurus/height'))).val();
    const window = await api.once(api.query(api.ref(b, base), { orderBy: 'child', child: 'height', endAt: height, limitToLast: 2 }));
    const keys = keysOf(window);
    ctx.emit({ s, c: 'b', e: 'once', height, keys });
    const added = record(api, ctx, s, 'b', api.query(api.ref(b, base), { orderBy: 'child', child: 'height', limitToFirst: 2 }), ['child_added']);
    await waitFor(() => added.events.length >= 2, 5000, 'two child_added');
    added.off();
    await api.set(api.ref(a, base + '/compsognathus'), { height: 0.3, length: 1 });
    await sleep(300);
    const ok = height === 4 && same(keys, ['triceratops', 'stegosaurus'])
      && same(added.events.map(e => e.key), ['linhenykus', 'pterodactyl']) && added.events.length === 2;
    return { ok, detail: 'stegosaurus height ' + height + '; up to it, last two: ' + JSON.stringify(keys) + '; two shortest: ' + JSON.stringify(added.events.map(e => e.key)) + ', nothing after off()' };
  }

  async function valueAndChildEvents(api, ctx, s) {
    const writer = api.connect(ctx), reader = api.connect(ctx);
    const base = ctx.prefix + '/' + s + '/messages';
    const rec = record(api, ctx, s, 'reader', api.ref(reader, base),
      ['child_removed', 'child_added', 'child_moved', 'child_changed', 'value']);
    await waitFor(() => rec.events.length >= 1, 5000, 'the first value event');
    const ref = api.ref(writer, base);
    await api.set(api.ref(writer, base + '/m1'), { from: 'ada', text: 'hello' });
    await api.set(api.ref(writer, base + '/m2'), { from: 'bob', text: 'hi' });
    await api.update(api.ref(writer, base + '/m1'), { text: 'hello, world' });
    await api.remove(api.ref(writer, base + '/m2'));
    await api.remove(ref);
    await waitFor(() => rec.events.length >= 10, 5000, '10 events');
    await sleep(200);
    rec.off();
    const got = rec.events.map(e => [e.type, e.key, e.prev]);
    const expected = [
      ['value', null, null],
      ['child_added', 'm1', null], ['value', null, null],
      ['child_added', 'm2', 'm1'], ['value', null, null],
      ['child_changed', 'm1', null], ['value', null, null],
      ['child_removed', 'm2', null], ['value', null, null],
      ['child_removed', 'm1', null], ['value', null, null],
    ];
    const values = rec.events.filter(e => e.type === 'value').map(e => e.val);
    const expectedValues = [null, { m1: { from: 'ada', text: 'hello' } },
      { m1: { from: 'ada', text: 'hello' }, m2: { from: 'bob', text: 'hi' } },
      { m1: { from: 'ada', text: 'hello, world' }, m2: { from: 'bob', text: 'hi' } },
      { m1: { from: 'ada', text: 'hello, world' } }, null];
    const ok = same(got, expected) && same(values, expectedValues);
    return { ok, detail: ok ? 'events and values as expected' : 'got ' + JSON.stringify(got) + ' values ' + short(values) };
  }

  // The vectors' queries: data written by one client, the query run by another that never saw it.
  async function vectorQueries(api, ctx, s) {
    if (!ctx.vectors) return { skip: 'no vectors.json given' };
    const writer = api.connect(ctx), reader = api.connect(ctx);
    const failures = [];
    let index = 0;
    for (const vector of ctx.vectors.queries) {
      const base = ctx.prefix + '/' + s + '/' + index++;
      await api.set(api.ref(writer, base), vector.data);
      const path = vector.path === '/' ? base : base + vector.path;
      const query = api.query(api.ref(reader, path), vector.query || {});
      const rec = record(api, ctx, s, 'reader', query, ['child_added', 'value'], { quiet: true });
      let keys = null, prevKeys = null;
      try {
        await waitFor(() => rec.events.some(e => e.type === 'value'), 5000, 'the value event');
        const value = rec.events.find(e => e.type === 'value');
        keys = value.keys;
        prevKeys = rec.events.filter(e => e.type === 'child_added').map(e => e.prev);
      } catch (e) {
        keys = 'error: ' + errorText(e);
      }
      rec.off();
      const ok = same(keys, vector.expectKeys) && same(prevKeys, vector.expectInitialPrevKeys);
      ctx.emit({ s, e: 'vector', name: vector.name, ok, keys, expectKeys: vector.expectKeys });
      if (!ok) failures.push(vector.name + ': got ' + JSON.stringify(keys) + ' / prev ' + JSON.stringify(prevKeys));
    }
    return { ok: failures.length === 0, detail: (ctx.vectors.queries.length - failures.length) + '/' + ctx.vectors.queries.length + ' vectors' + (failures.length ? '; failed: ' + failures.join(' | ') : '') };
  }

  // The vectors' event sequences: a subscriber with every event type on the query, another
  // client doing the writes.
  async function vectorEvents(api, ctx, s) {
    if (!ctx.vectors) return { skip: 'no vectors.json given' };
    const writer = api.connect(ctx), reader = api.connect(ctx);
    const failures = [];
    let index = 0;
    const types = ['child_removed', 'child_added', 'child_moved', 'child_changed', 'value'];
    for (const vector of ctx.vectors.events) {
      const base = ctx.prefix + '/' + s + '/' + index++;
      if (vector.initial !== null && vector.initial !== undefined) await api.set(api.ref(writer, base), vector.initial);
      const path = vector.path === '/' ? base : base + vector.path;
      const rec = record(api, ctx, s, 'reader', api.query(api.ref(reader, path), vector.query || {}), types, { quiet: true });
      let error = null;
      try {
        let expectedCount = 0;
        for (let step = 0; step < vector.expectEventsByStep.length; step++) {
          if (step > 0) {
            const write = vector.writes[step - 1];
            const ref = api.ref(writer, write.path === '/' ? base : base + write.path);
            if (write.op === 'set') await api.set(ref, write.value);
            else if (write.op === 'update') await api.update(ref, write.value);
            else if (write.op === 'remove') await api.remove(ref);
            else if (write.op === 'setPriority') await api.setPriority(ref, write.value);
            else if (write.op === 'setWithPriority') await api.setWithPriority(ref, write.value, write.priority);
          }
          expectedCount += vector.expectEventsByStep[step].length;
          await waitFor(() => rec.events.length >= expectedCount, 3000, expectedCount + ' events').catch(() => {});
          await sleep(60);
        }
      } catch (e) {
        error = errorText(e);
      }
      rec.off();
      const got = rec.events.map(e => [e.type, e.key, e.prev]);
      const ok = !error && same(got, vector.expectEvents);
      ctx.emit({ s, e: 'vector', name: vector.name, ok, events: got, ...(ok ? {} : { expectEvents: vector.expectEvents, error }) });
      if (!ok) failures.push(vector.name);
    }
    return { ok: failures.length === 0, detail: (ctx.vectors.events.length - failures.length) + '/' + ctx.vectors.events.length + ' vectors' + (failures.length ? '; failed: ' + failures.join(' | ') : '') };
  }

  async function pushLists(api, ctx, s) {
    const writer = api.connect(ctx), reader = api.connect(ctx);
    const base = ctx.prefix + '/' + s + '/posts';
    const rec = record(api, ctx, s, 'reader', api.query(api.ref(reader, base), { limitToLast: 3 }),
      ['child_removed', 'child_added', 'value']);
    await waitFor(() => rec.events.length >= 1, 5000, 'the first value event');
    const keys = [];
    for (let i = 0; i < 5; i++) {
      const ref = api.push(api.ref(writer, base), { n: i, author: 'ada' });
      keys.push(ref.key);
      await ref;
    }
    await waitFor(() => rec.events.filter(e => e.type === 'value').length >= 6, 5000, '6 value events');
    await sleep(150);
    rec.off();
    const ordered = keys.slice().sort();
    const lastValue = rec.events.filter(e => e.type === 'value').pop();
    const ok = same(ordered, keys) && same(lastValue.keys, keys.slice(2))
      && rec.events.filter(e => e.type === 'child_removed').length === 2;
    return { ok, detail: 'keys in push order: ' + same(ordered, keys) + '; last window ' + JSON.stringify(lastValue.keys) };
  }

  async function updateFanOut(api, ctx, s) {
    const writer = api.connect(ctx), reader = api.connect(ctx);
    const base = ctx.prefix + '/' + s;
    const user = record(api, ctx, s, 'reader:user', api.ref(reader, base + '/users/ada'), ['value']);
    const post = record(api, ctx, s, 'reader:post', api.ref(reader, base + '/posts/p1'), ['value']);
    const feed = record(api, ctx, s, 'reader:feed', api.ref(reader, base + '/feeds/ada'), ['child_added', 'value']);
    await waitFor(() => user.events.length && post.events.length && feed.events.length, 5000, 'first values');
    await api.update(api.ref(writer, base), {
      'users/ada/name': 'Ada', 'users/ada/postCount': 1,
      'posts/p1': { author: 'ada', title: 'Notes' }, 'feeds/ada/p1': true,
    });
    await waitFor(() => user.events.length >= 2 && post.events.length >= 2 && feed.events.length >= 3, 5000, 'the fan-out');
    await sleep(150);
    [user, post, feed].forEach(r => r.off());
    const whole = await api.get(api.ref(api.connect(ctx), base));
    const expected = { users: { ada: { name: 'Ada', postCount: 1 } }, posts: { p1: { author: 'ada', title: 'Notes' } }, feeds: { ada: { p1: true } } };
    const ok = same(whole.val(), expected) && user.events.length === 2 && post.events.length === 2
      && same(user.events[1].val, expected.users.ada) && same(post.events[1].val, expected.posts.p1);
    return { ok, detail: 'one event per listener for one multi-path update; get: ' + short(whole.val()) };
  }

  async function serverValues(api, ctx, s) {
    const a = api.connect(ctx), b = api.connect(ctx);
    const base = ctx.prefix + '/' + s;
    const offsetEvents = record(api, ctx, s, 'a:.info/serverTimeOffset', api.ref(a, '.info/serverTimeOffset'), ['value']);
    const watch = record(api, ctx, s, 'b', api.ref(b, base), ['value']);
    const before = Date.now();
    await api.set(api.ref(a, base + '/created'), api.serverTimestamp());
    const after = Date.now();
    // b listens above the location: its get() answers from that listen's data, so wait for the
    // write to reach it first.
    await waitFor(() => watch.events.some(e => e.val && typeof e.val.created === 'number'), 5000, 'the timestamp at b');
    const stamp = (await api.get(api.ref(b, base + '/created'))).val();
    await Promise.all([
      ...[1, 2, 3].map(() => api.set(api.ref(a, base + '/count'), api.increment(1))),
      ...[1, 2, 3].map(() => api.update(api.ref(b, base), { count: api.increment(10) })),
    ]);
    await sleep(300);
    const count = (await api.get(api.ref(api.connect(ctx), base + '/count'))).val();
    watch.off(); offsetEvents.off();
    const offset = offsetEvents.events.length ? offsetEvents.events[offsetEvents.events.length - 1].val : null;
    ctx.emit({ s, e: 'result', stamp, before, after, count, offset });
    const ok = typeof stamp === 'number' && stamp >= before - 2000 && stamp <= after + 2000 && count === 33
      && typeof offset === 'number' && Math.abs(offset) < 5000;
    return { ok, detail: 'timestamp ' + stamp + ' within [' + before + ', ' + after + '] ±2 s, six increments from two clients = ' + count + ' (33 expected), serverTimeOffset ' + offset };
  }

  // ---------------------------------------------------------------------------------------------

  async function transactions(api, ctx, s) {
    const a = api.connect(ctx), b = api.connect(ctx);
    const path = ctx.prefix + '/' + s + '/counter';
    const perClient = 25;
    let runs = 0;
    const run = client => api.transaction(api.ref(client, path), current => { runs++; return (current || 0) + 1; });
    const results = await withTimeout(Promise.all([
      ...Array.from({ length: perClient }, () => run(a)),
      ...Array.from({ length: perClient }, () => run(b)),
    ]), 60000, 'the transactions');
    const committed = results.filter(r => r.committed).length;
    const final = (await api.get(api.ref(api.connect(ctx), path))).val();
    ctx.emit({ s, e: 'result', committed, final, updateFunctionRuns: runs });
    const ok = committed === 2 * perClient && final === 2 * perClient;
    return { ok, detail: committed + ' committed, final ' + final + ' (expected ' + 2 * perClient + '), update function ran ' + runs + ' times' };
  }

  async function presence(api, ctx, s) {
    const a = api.connect(ctx), b = api.connect(ctx);
    const base = ctx.prefix + '/' + s;
    const bConnected = record(api, ctx, s, 'b:.info/connected', api.ref(b, '.info/connected'), ['value']);
    const status = record(api, ctx, s, 'b:status', api.ref(b, base + '/status/ada'), ['value']);
    const kept = record(api, ctx, s, 'b:kept', api.ref(b, base + '/kept'), ['value']);
    // The usual presence pattern: on every connect, register what the server does on disconnect,
    // then say we are online.
    const aConnected = api.on(api.ref(a, '.info/connected'), 'value', snapshot => {
      ctx.emit({ s, c: 'a', e: '.info/connected', v: snapshot.val() });
      if (snapshot.val() !== true) return;
      const ref = api.ref(a, base + '/status/ada');
      api.onDisconnect(ref).set({ state: 'offline', lastSeen: api.serverTimestamp() })
        .then(() => api.set(ref, { state: 'online' }));
    });
    // The other onDisconnect forms: update (om) and remove (o with null).
    await api.set(api.ref(a, base + '/typing'), true);
    await api.onDisconnect(api.ref(a, base + '/typing')).remove();
    await api.onDisconnect(api.ref(a, base + '/meta')).update({ left: true, 'count/a': api.increment(1) });
    await api.set(api.ref(a, base + '/kept'), 'stays');
    await api.onDisconnect(api.ref(a, base + '/kept')).remove();
    await api.onDisconnect(api.ref(a, base + '/kept')).cancel();
    const state = () => (status.events.length ? (status.events[status.events.length - 1].val || {}).state : undefined);
    await waitFor(() => state() === 'online', 5000, 'online');
    api.goOffline(a);
    await waitFor(() => state() === 'offline', 5000, 'offline after goOffline');
    const offline = status.events[status.events.length - 1].val;
    const afterwards = (await api.get(api.ref(api.connect(ctx), base))).val() || {};
    ctx.emit({ s, c: 'c', e: 'get', v: short(afterwards) });
    api.goOnline(a);
    await waitFor(() => state() === 'online', 8000, 'online again after goOnline');
    await sleep(200);
    aConnected(); status.off(); kept.off(); bConnected.off();
    const states = status.events.map(e => e.val && e.val.state);
    const ok = bConnected.events.some(e => e.val === true) && typeof (offline && offline.lastSeen) === 'number'
      && kept.events.length && kept.events[kept.events.length - 1].val === 'stays'
      && afterwards.typing === undefined && same(afterwards.meta, { left: true, count: { a: 1 } });
    return { ok, detail: 'b saw states ' + JSON.stringify(states) + ', lastSeen ' + (offline && offline.lastSeen) + ', cancelled remove left /kept = ' + JSON.stringify(kept.events.length ? kept.events[kept.events.length - 1].val : undefined) + ', onDisconnect remove and update gave typing ' + JSON.stringify(afterwards.typing) + ', meta ' + JSON.stringify(afterwards.meta) };
  }

  async function rulesDenied(api, ctx, s) {
    if (!ctx.rules) return { skip: 'the server has no rules file (scripts/firebase-sdk/rules.json)' };
    const a = api.connect(ctx);
    const ref = api.ref(a, 'secret/' + ctx.prefix.replace(/\//g, '_'));
    const cancelled = [];
    const listening = new Promise(resolve => {
      api.on(ref, 'value', snapshot => ctx.emit({ s, c: 'a', e: 'value', v: short(snapshot.val()) }), error => {
        cancelled.push(error);
        ctx.emit({ s, c: 'a', e: 'cancel', code: error.code, message: error.message });
        resolve();
      });
    });
    await withTimeout(listening, 5000, 'the listen to be cancelled');
    let writeError = null, getError = null;
    try { await api.set(ref, 'x'); ctx.emit({ s, c: 'a', e: 'set resolved' }); } catch (e) {
      writeError = e; ctx.emit({ s, c: 'a', e: 'set rejected', code: e.code, message: e.message });
    }
    try { await api.get(api.ref(api.connect(ctx), 'secret/x')); ctx.emit({ s, c: 'b', e: 'get resolved' }); } catch (e) {
      getError = e; ctx.emit({ s, c: 'b', e: 'get rejected', code: e.code, message: e.message });
    }
    const open = await api.get(api.ref(a, ctx.prefix + '/' + s + '/open')).then(() => true, () => false);
    const ok = cancelled.length === 1 && /PERMISSION_DENIED/i.test(cancelled[0].code || cancelled[0].message)
      && writeError && /PERMISSION_DENIED/.test(writeError.code || writeError.message)
      && getError && /permission/i.test(getError.message) && open;
    return { ok, detail: 'listen cancel ' + (cancelled[0] && cancelled[0].code) + '; set ' + (writeError && writeError.code) + '; get ' + (getError && getError.message) + '; an allowed read still works: ' + open };
  }

  // A live listen whose read a rules change takes away: the server revokes it and the SDK calls
  // the cancel callback. The rules are replaced through the REST rules endpoint with the admin
  // secret, then put back as scripts/firebase-sdk/rules.json has them.
  async function rulesRevoked(api, ctx, s) {
    if (!ctx.rules || !ctx.adminSecret) return { skip: 'needs the scenarios\' rules and an admin secret (--admin-secret)' };
    const deny = { '.read': false, '.write': false };
    const open = { '.read': true, '.write': true };
    const put = async rules => {
      const response = await fetch(httpBase(ctx) + '/.settings/rules.json?ns=' + ctx.ns
        + '&auth=' + encodeURIComponent(ctx.adminSecret), { method: 'PUT', body: JSON.stringify({ rules }) });
      const text = await response.text();
      ctx.emit({ s, e: 'rules PUT', status: response.status, answer: text.slice(0, 200) });
      if (!response.ok) throw new Error('the rules endpoint answered ' + response.status + ' ' + text);
    };
    const a = api.connect(ctx), b = api.connect(ctx);
    const path = 'revocable/' + ctx.prefix.replace(/\//g, '_');
    await api.set(api.ref(a, path), 'visible');
    let cancelled = null;
    const values = [];
    api.on(api.ref(b, path), 'value', snapshot => { values.push(snapshot.val()); ctx.emit({ s, c: 'b', e: 'value', v: snapshot.val() }); },
      error => { cancelled = error; ctx.emit({ s, c: 'b', e: 'cancel', code: error.code, message: error.message }); });
    // A query listen too (on a client of its own: beside a default listen at the same path the
    // SDK would not send it), so the revocation has to name the query.
    const c = api.connect(ctx);
    let queryCancelled = null;
    const queryValues = [];
    api.on(api.query(api.ref(c, 'revocable'), { orderBy: 'key', limitToLast: 2 }), 'value', snapshot => {
      queryValues.push(snapshot.val()); ctx.emit({ s, c: 'c', e: 'value', v: short(snapshot.val()) });
    }, error => { queryCancelled = error; ctx.emit({ s, c: 'c', e: 'cancel', code: error.code, message: error.message }); });
    await waitFor(() => values.length >= 1 && queryValues.length >= 1, 5000, 'the first values');
    await put({ secret: deny, revocable: deny, $top: open });
    try {
      await waitFor(() => cancelled !== null && queryCancelled !== null, 5000, 'both listens to be revoked').catch(() => {});
    } finally {
      await put({ secret: deny, $top: open });
    }
    const ok = values[0] === 'visible' && cancelled && cancelled.code === 'PERMISSION_DENIED'
      && queryCancelled && queryCancelled.code === 'PERMISSION_DENIED';
    return { ok, detail: 'value ' + JSON.stringify(values) + ', then after the rules change: cancel ' + (cancelled && cancelled.code) + ' (' + (cancelled && cancelled.message) + '); the query listen: cancel ' + (queryCancelled && queryCancelled.code) };
  }

  async function largeValue(api, ctx, s) {
    const a = api.connect(ctx), b = api.connect(ctx);
    const base = ctx.prefix + '/' + s;
    // 40,000 characters, some outside ASCII and outside the BMP, so frames are cut between code points.
    const unit = 'Hearth \u00e9t\u00e9 \u4f60\u597d \ud83d\udd25 ';
    const make = seed => { let t = seed; while (t.length < 40000) t += unit; return t.slice(0, 39998) + 'ok'; };
    const up = make('a>');
    const down = make('b>');
    const seenByB = record(api, ctx, s, 'b', api.ref(b, base + '/fromA'), ['value']);
    const seenByA = record(api, ctx, s, 'a', api.ref(a, base + '/fromB'), ['value']);
    await api.set(api.ref(a, base + '/fromA'), up);
    await api.set(api.ref(b, base + '/fromB'), down);
    await waitFor(() => seenByB.events.some(e => e.val === up) && seenByA.events.some(e => e.val === down), 10000, 'both values');
    const fetched = (await api.get(api.ref(api.connect(ctx), base))).val();
    seenByA.off(); seenByB.off();
    const ok = fetched && fetched.fromA === up && fetched.fromB === down;
    return { ok, detail: 'a 40,000-char value (' + new TextEncoder().encode(up).length + ' UTF-8 bytes) each way, and read back by a third client: ' + (ok ? 'identical' : 'different') };
  }

  // A ws:// databaseURL without emulator mode: the SDK takes the hello's host for later connections.
  async function wsUrl(api, ctx, s) {
    const a = api.connect(ctx, 'url');
    const base = ctx.prefix + '/' + s;
    await withTimeout(api.set(api.ref(a, base + '/x'), 1), 8000, 'the set');
    api.goOffline(a); api.goOnline(a);
    await withTimeout(api.set(api.ref(a, base + '/y'), 2), 8000, 'the set after reconnecting');
    const got = (await api.get(api.ref(api.connect(ctx), base))).val();
    const ok = same(got, { x: 1, y: 2 });
    return { ok, detail: 'databaseURL ' + (ctx.tls ? 'wss://' : 'ws://') + ctx.host + ':' + ctx.port + '?ns=' + ctx.ns + ': ' + short(got) };
  }

  // What Firebase Auth gives the database SDK: the signed-in user's ID token, refreshed on demand
  // (forceRefresh after the server refused or revoked one) and announced to listeners on change.
  function tokenSource(ctx, name, first, refresh) {
    let token = first;
    const listeners = new Set();
    const source = {
      forced: 0,
      getToken(forceRefresh) {
        if (forceRefresh) { source.forced++; token = refresh(); ctx.emit({ s: 'firebase-auth', c: name, e: 'token refreshed (forced)' }); }
        return Promise.resolve(token ? { accessToken: token } : null);
      },
      getUid: () => null,
      addAuthTokenListener(listener) { listeners.add(listener); },
      removeAuthTokenListener(listener) { listeners.delete(listener); },
      set(next) { token = next; listeners.forEach(listener => listener(next)); },
    };
    return source;
  }

  // Firebase Auth ID tokens (RS256, a test key served as JWKS, project id checked) sent by the SDK
  // itself; rules on auth.uid and auth.token; a token refreshed while connected; a token that
  // expires while connected (the server revokes it, the SDK gets a new one and goes on); a token of
  // another project (refused, then the SDK's forced refresh succeeds).
  async function firebaseAuth(api, ctx, s) {
    if (!ctx.firebaseAuthServer) return { skip: 'needs a hearthd of its own (Node drivers with --hearthd)' };
    const fa = await ctx.firebaseAuthServer();
    try {
      const sctx = Object.assign({}, ctx, { port: fa.port, tls: false });
      const results = {};
      const aliceAuth = tokenSource(ctx, 'alice', fa.mint('alice'), () => fa.mint('alice'));
      const alice = api.connect(sctx, undefined, aliceAuth);
      await withTimeout(api.set(api.ref(alice, 'users/alice/profile'), { name: 'Alice' }), 8000, 'alice\'s own write');
      results.ownWrite = 'ok';
      results.otherWrite = await api.set(api.ref(alice, 'users/bob/profile'), { name: 'not Alice' }).then(() => 'ok', e => e.code);
      const anonymous = api.connect(sctx);
      results.anonymousRead = await api.get(api.ref(anonymous, 'users/alice')).then(() => 'ok', e => e.message);
      results.unverifiedRead = await api.get(api.ref(alice, 'verified')).then(() => 'ok', e => e.message);
      // A new token with email_verified, as after the user verified their address.
      aliceAuth.set(fa.mint('alice', { emailVerified: true }));
      await sleep(300);
      results.verifiedRead = await api.get(api.ref(api.connect(sctx, undefined, tokenSource(ctx, 'alice2', fa.mint('alice', { emailVerified: true }), () => fa.mint('alice', { emailVerified: true }))), 'verified')).then(() => 'ok', e => e.message);
      results.verifiedReadAfterRefresh = await api.get(api.ref(alice, 'verified')).then(() => 'ok', e => e.message);
      ctx.emit({ s, e: 'results', results });
      // Expiry while connected.
      const bobAuth = tokenSource(ctx, 'bob', fa.mint('bob', { ttl: 3 }), () => fa.mint('bob'));
      const bob = api.connect(sctx, undefined, bobAuth);
      const bobConnected = [];
      api.on(api.ref(bob, '.info/connected'), 'value', snapshot => { bobConnected.push(snapshot.val()); ctx.emit({ s, c: 'bob', e: '.info/connected', v: snapshot.val() }); });
      const bobSeen = record(api, ctx, s, 'bob', api.ref(bob, 'users/bob/inbox'), ['value'], { cancel: e => ctx.emit({ s, c: 'bob', e: 'cancel', code: e.code }) });
      await withTimeout(api.set(api.ref(bob, 'users/bob/inbox/m1'), 'before expiry'), 8000, 'bob\'s first write');
      await waitFor(() => bobAuth.forced >= 1, 15000, 'the server to revoke the expired token and the SDK to refresh it').catch(() => {});
      await waitFor(() => bobConnected[bobConnected.length - 1] === true, 10000, 'bob connected again').catch(() => {});
      results.afterExpiry = await withTimeout(api.set(api.ref(bob, 'users/bob/inbox/m2'), 'after expiry'), 10000, 'bob\'s write after expiry').then(() => 'ok', e => errorText(e));
      await waitFor(() => bobSeen.events.some(e => e.val && e.val.m2), 5000, 'bob\'s listener to see m2').catch(() => {});
      results.bobForcedRefreshes = bobAuth.forced;
      results.bobListenerLast = bobSeen.events.length ? bobSeen.events[bobSeen.events.length - 1].val : null;
      bobSeen.off();
      // Another project's token: refused; the SDK asks for a new one.
      const carolAuth = tokenSource(ctx, 'carol', fa.mint('carol', { issuer: 'someone-elses-project' }), () => fa.mint('carol'));
      const carol = api.connect(sctx, undefined, carolAuth);
      results.wrongProjectThenRefresh = await withTimeout(api.set(api.ref(carol, 'users/carol/x'), 1), 15000, 'carol\'s write').then(() => 'ok', e => errorText(e));
      results.carolForcedRefreshes = carolAuth.forced;
      ctx.emit({ s, e: 'results', results });
      const ok = results.ownWrite === 'ok' && results.otherWrite === 'PERMISSION_DENIED'
        && /permission/i.test(results.anonymousRead) && /permission/i.test(results.unverifiedRead)
        && results.verifiedRead === 'ok' && results.verifiedReadAfterRefresh === 'ok' && results.afterExpiry === 'ok'
        && results.bobForcedRefreshes >= 1 && same(results.bobListenerLast, { m1: 'before expiry', m2: 'after expiry' })
        && results.wrongProjectThenRefresh === 'ok' && results.carolForcedRefreshes >= 1;
      return { ok, detail: JSON.stringify(results) };
    } finally {
      await fa.stop();
    }
  }

  // The same location watched through the three protocols (an SDK listener, a REST event stream
  // and a line-protocol subscription) while an SDK client, REST and the line protocol add children
  // to it at once: all three see the same children in the same order.
  async function crossProtocol(api, ctx, s) {
    if (!ctx.line) return { skip: 'needs the line protocol\'s port (Node drivers with --tcp-port)' };
    const path = ctx.prefix + '/' + s;
    const http = httpBase(ctx) + '/' + path;
    const viaSDK = [], viaREST = [], viaLine = [];
    const reader = api.connect(ctx);
    const off = api.on(api.ref(reader, path), 'child_added', snapshot => viaSDK.push(snapshot.key));
    const lineEvents = [];
    const line = await ctx.line(event => { if (event.event === 'child_added') viaLine.push(event.key); lineEvents.push(event); });
    const subscribed = await line.request({ op: 'subscribe', path: '/' + path, events: ['child_added'] });
    if (!subscribed.ok) throw new Error('line-protocol subscribe: ' + JSON.stringify(subscribed));
    const abort = new AbortController();
    const stream = await fetch(http + '.json?ns=' + ctx.ns, { headers: { Accept: 'text/event-stream' }, signal: abort.signal });
    const reading = (async () => {
      const decoder = new TextDecoder();
      let text = '';
      for await (const chunk of stream.body) {
        text += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const event = (block.match(/^event: (.*)$/m) || [])[1];
          const data = (block.match(/^data: (.*)$/m) || [])[1];
          if (event === 'put' && data) {
            const body = JSON.parse(data);
            if (body.path !== '/' && body.data !== null) viaREST.push(body.path.slice(1));
          }
        }
      }
    })().catch(() => {});
    await sleep(300);
    const writer = api.connect(ctx);
    const writes = [];
    for (let i = 0; i < 30; i++) {
      const key = 'k' + String(i).padStart(2, '0');
      const value = { n: i, by: ['sdk', 'rest', 'line'][i % 3] };
      if (i % 3 === 0) writes.push(api.set(api.ref(writer, path + '/' + key), value));
      else if (i % 3 === 1) writes.push(fetch(http + '/' + key + '.json?ns=' + ctx.ns, { method: 'PUT', body: JSON.stringify(value) }));
      else writes.push(line.request({ op: 'set', path: '/' + path + '/' + key, value }));
    }
    await withTimeout(Promise.all(writes), 20000, 'the writes');
    await waitFor(() => viaSDK.length >= 30 && viaREST.length >= 30 && viaLine.length >= 30, 10000, '30 children through each protocol').catch(() => {});
    off(); abort.abort(); line.close(); await reading;
    ctx.emit({ s, e: 'orders', sdk: viaSDK.join(' '), rest: viaREST.join(' '), line: viaLine.join(' ') });
    const ok = viaSDK.length === 30 && same(viaSDK, viaREST) && same(viaSDK, viaLine);
    return { ok, detail: 'children seen: SDK ' + viaSDK.length + ', REST stream ' + viaREST.length + ', line protocol ' + viaLine.length + '; same order in all three: ' + (same(viaSDK, viaREST) && same(viaSDK, viaLine)) };
  }

  // hearthd killed with SIGKILL and restarted on the same port and data under a connected client.
  async function restart(api, ctx, s) {
    if (!ctx.server) return { skip: 'needs a hearthd of its own (Node drivers with --hearthd)' };
    const sctx = Object.assign({}, ctx, { port: ctx.server.port, tls: false });
    const a = api.connect(sctx);
    const base = ctx.prefix + '/' + s;
    const connected = [];
    const offConnected = api.on(api.ref(a, '.info/connected'), 'value', snapshot => {
      connected.push(snapshot.val()); ctx.emit({ s, c: 'a', e: '.info/connected', v: snapshot.val() });
    });
    const seen = record(api, ctx, s, 'a', api.ref(a, base + '/items'), ['value'], { quiet: true });
    const acked = new Set();
    const write = i => api.set(api.ref(a, base + '/items/i' + String(i).padStart(2, '0')), i).then(() => { acked.add(i); });
    for (let i = 0; i < 10; i++) await write(i);
    const counter = api.transaction(api.ref(a, base + '/counter'), v => (v || 0) + 1);
    await counter;
    // An onDisconnect registered before the crash: the server keeps it on disk and runs it when
    // it starts again (the SDK does not register it again on reconnecting).
    const p = api.connect(sctx);
    await api.set(api.ref(p, base + '/presence'), 'here');
    await api.onDisconnect(api.ref(p, base + '/presence')).set('gone');
    // A query listen across the restart too (on p: beside a's default listen it would not be sent).
    const windowed = record(api, ctx, s, 'p', api.query(api.ref(p, base + '/items'), { orderBy: 'key', limitToLast: 3 }), ['value'], { quiet: true });
    // Writes in flight when the server dies.
    const inFlight = [];
    for (let i = 10; i < 20; i++) inFlight.push(write(i));
    await sleep(1);
    const ackedAtKill = new Set(acked);
    ctx.server.kill();
    ctx.emit({ s, e: 'server killed', ackedBeforeKill: ackedAtKill.size });
    await waitFor(() => connected[connected.length - 1] === false, 10000, '.info/connected false');
    // Writes made while the server is down.
    for (let i = 20; i < 30; i++) inFlight.push(write(i));
    const offlineTransaction = api.transaction(api.ref(a, base + '/counter'), v => (v || 0) + 1);
    await sleep(1500);
    await ctx.server.start();
    ctx.emit({ s, e: 'server restarted' });
    await waitFor(() => connected[connected.length - 1] === true, 30000, '.info/connected true again');
    await withTimeout(Promise.all(inFlight), 30000, 'the queued writes');
    const tx = await withTimeout(offlineTransaction, 30000, 'the transaction');
    const expected = {};
    for (let i = 0; i < 30; i++) expected['i' + String(i).padStart(2, '0')] = i;
    await waitFor(() => seen.events.length && same(seen.events[seen.events.length - 1].val, expected), 5000, 'the listener to hold all 30 items').catch(() => {});
    const fresh = api.connect(sctx);
    let stored = {};
    for (let i = 0; i < 50; i++) {
      stored = (await api.get(api.ref(fresh, base))).val() || {};
      if (stored.presence === 'gone') break;
      await sleep(100);
    }
    await waitFor(() => windowed.events.length && same(windowed.events[windowed.events.length - 1].keys, ['i27', 'i28', 'i29']), 5000, 'the window').catch(() => {});
    const finalWindow = windowed.events.length ? windowed.events[windowed.events.length - 1].keys : null;
    seen.off(); offConnected(); windowed.off();
    const lost = [...ackedAtKill].filter(i => !stored.items || stored.items['i' + String(i).padStart(2, '0')] !== i);
    const listenerFinal = seen.events.length ? seen.events[seen.events.length - 1].val : null;
    ctx.emit({ s, e: 'result', connected, stored: short(stored), lostAcknowledged: lost, transactionCommitted: tx.committed });
    const ok = lost.length === 0 && same(stored.items, expected) && stored.counter === 2 && tx.committed
      && same(listenerFinal, expected) && stored.presence === 'gone' && same(finalWindow, ['i27', 'i28', 'i29']);
    return { ok, detail: '.info/connected ' + JSON.stringify(connected) + '; ' + ackedAtKill.size + ' writes acknowledged before the kill, lost ' + lost.length + '; after restart all 30 stored: ' + same(stored.items, expected) + ', counter ' + stored.counter + ' (2), listener final value complete: ' + same(listenerFinal, expected) + ', onDisconnect registered before the kill ran: ' + (stored.presence === 'gone') + ', limitToLast(3) window ' + JSON.stringify(finalWindow) };
  }

  const all = [
    ['read-once', readOnce], ['dinosaur-facts', dinosaurFacts], ['value-child-events', valueAndChildEvents], ['queries-vectors', vectorQueries],
    ['events-vectors', vectorEvents], ['push-lists', pushLists], ['update-fan-out', updateFanOut],
    ['server-values', serverValues], ['transactions', transactions], ['presence', presence],
    ['rules-denied', rulesDenied], ['rules-revoked', rulesRevoked], ['large-value', largeValue], ['ws-url', wsUrl], ['firebase-auth', firebaseAuth], ['cross-protocol', crossProtocol], ['restart', restart],
  ];

  async function runAll(api, ctx, only) {
    const verdicts = [];
    for (const [name, scenario] of all) {
      if (only && only.length && !only.includes(name)) continue;
      let verdict;
      try {
        const result = await withTimeout(scenario(api, ctx, name), 120000, name);
        verdict = result.skip ? { s: name, verdict: 'SKIP', detail: result.skip }
          : { s: name, verdict: result.ok ? 'PASS' : 'FAIL', detail: result.detail };
      } catch (e) {
        verdict = { s: name, verdict: 'FAIL', detail: 'error: ' + errorText(e) };
      }
      ctx.emit(verdict);
      verdicts.push(verdict);
    }
    return verdicts;
  }

  const exported = { runAll, names: all.map(([name]) => name), canonical, sleep, waitFor, withTimeout, errorText, record, short };
  if (typeof module !== 'undefined' && module.exports) module.exports = exported;
  else root.HearthScenarios = exported;
})(typeof globalThis !== 'undefined' ? globalThis : this);
