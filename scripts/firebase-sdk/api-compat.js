// The scenarios' view of the Firebase JS SDK through its namespaced ("compat") API, the one the
// CDN bundles firebase-app-compat.js and firebase-database-compat.js define as `firebase`. Used in
// Node (compat-node.js) and in the browser (page.html).
(function (root) {
  'use strict';

  // A component as @firebase/component makes them (the compat bundle does not export the class).
  function authComponent(auth) {
    return {
      name: 'auth-internal', instanceFactory: () => auth, type: 'PRIVATE', multipleInstances: false,
      serviceProps: {}, instantiationMode: 'LAZY', onInstanceCreated: null,
    };
  }

  function makeApi(firebase) {
    let apps = 0;
    const api = {
      kind: 'compat',
      sdkVersion: firebase.SDK_VERSION,
      // A new app (so a new connection) on the server. mode "emulator": useEmulator(host, port)
      // with an http databaseURL; mode "url": a ws:// databaseURL and no emulator mode.
      // `auth`, when given, is what Firebase Auth would give the database SDK (the
      // "auth-internal" component: getToken, addAuthTokenListener, ...), so the app sends its tokens.
      connect(ctx, mode, auth) {
        const name = 'app' + ++apps;
        // With ctx.tls the URL says https:// (or wss://) and emulator mode, which is always plain, is off.
        const scheme = mode === 'url' ? (ctx.tls ? 'wss' : 'ws') : (ctx.tls ? 'https' : 'http');
        const url = scheme + '://' + ctx.host + ':' + ctx.port + '?ns=' + ctx.ns;
        const app = firebase.initializeApp(
          { apiKey: 'hearth-test', projectId: ctx.ns, appId: '1:1:web:' + name, databaseURL: url }, name);
        if (auth) app._addComponent(authComponent(auth));
        const db = app.database();
        if (mode !== 'url' && !ctx.tls) db.useEmulator(ctx.host, ctx.port);
        return { app, db, name };
      },
      ref: (c, path) => c.db.ref(path),
      set: (ref, value) => ref.set(value),
      setWithPriority: (ref, value, priority) => ref.setWithPriority(value, priority),
      setPriority: (ref, priority) => ref.setPriority(priority),
      update: (ref, value) => ref.update(value),
      remove: ref => ref.remove(),
      push: (ref, value) => ref.push(value),
      get: ref => ref.get(),
      once: ref => ref.once('value'),
      // Listens for `type` and returns the function that stops listening.
      on(query, type, callback, cancel) {
        const wrapped = (snapshot, previous) => callback(snapshot, previous === undefined ? null : previous);
        query.on(type, wrapped, cancel || undefined);
        return () => query.off(type, wrapped);
      },
      // A query from the vectors' description: orderBy key|value|priority|child (+ child),
      // startAt, startAfter, endAt, endBefore, equalTo with their *Key, limitToFirst, limitToLast.
      query(ref, spec) {
        let q = ref;
        if (spec.orderBy === 'key') q = q.orderByKey();
        else if (spec.orderBy === 'value') q = q.orderByValue();
        else if (spec.orderBy === 'priority') q = q.orderByPriority();
        else if (spec.orderBy === 'child') q = q.orderByChild(spec.child);
        for (const bound of ['startAt', 'startAfter', 'endAt', 'endBefore', 'equalTo']) {
          if (!(bound in spec)) continue;
          const key = spec[bound + 'Key'];
          q = key === undefined ? q[bound](spec[bound]) : q[bound](spec[bound], key);
        }
        if ('limitToFirst' in spec) q = q.limitToFirst(spec.limitToFirst);
        if ('limitToLast' in spec) q = q.limitToLast(spec.limitToLast);
        return q;
      },
      transaction: (ref, update) => ref.transaction(update),
      onDisconnect: ref => ref.onDisconnect(),
      serverTimestamp: () => firebase.database.ServerValue.TIMESTAMP,
      increment: n => firebase.database.ServerValue.increment(n),
      goOffline: c => c.db.goOffline(),
      goOnline: c => c.db.goOnline(),
      close: c => c.app.delete(),
      enableLogging: logger => firebase.database.enableLogging(logger),
    };
    return api;
  }

  if (typeof module !== 'undefined' && module.exports) module.exports = { makeApi };
  else root.HearthCompatApi = { makeApi };
})(typeof globalThis !== 'undefined' ? globalThis : this);
