// The scenarios' view of the Firebase JS SDK through its modular API: the npm packages
// @firebase/app and @firebase/database as a Node app gets them (their Node build, which opens
// its sockets with faye-websocket). `sdk` is the folder holding node_modules/.
'use strict';
const path = require('path');

function makeApi(sdk) {
  const modules = path.join(sdk, 'node_modules');
  const appModule = require(path.join(modules, '@firebase/app'));
  const d = require(path.join(modules, '@firebase/database'));
  const { Component } = require(path.join(modules, '@firebase/component'));
  let apps = 0;
  return {
    kind: 'modular',
    sdkVersion: appModule.SDK_VERSION,
    // `auth`, when given, stands in for Firebase Auth (the "auth-internal" component).
    connect(ctx, mode, auth) {
      const name = 'app' + ++apps;
      // With ctx.tls the URL says https:// (or wss://) and emulator mode, which is always plain, is off.
      const scheme = mode === 'url' ? (ctx.tls ? 'wss' : 'ws') : (ctx.tls ? 'https' : 'http');
      const url = scheme + '://' + ctx.host + ':' + ctx.port + '?ns=' + ctx.ns;
      const app = appModule.initializeApp(
        { apiKey: 'hearth-test', projectId: ctx.ns, appId: '1:1:node:' + name, databaseURL: url }, name);
      if (auth) appModule._addComponent(app, new Component('auth-internal', () => auth, 'PRIVATE'));
      const db = d.getDatabase(app);
      if (mode !== 'url' && !ctx.tls) d.connectDatabaseEmulator(db, ctx.host, ctx.port);
      return { app, db, name };
    },
    ref: (c, p) => d.ref(c.db, p),
    set: (ref, value) => d.set(ref, value),
    setWithPriority: (ref, value, priority) => d.setWithPriority(ref, value, priority),
    setPriority: (ref, priority) => d.setPriority(ref, priority),
    update: (ref, value) => d.update(ref, value),
    remove: ref => d.remove(ref),
    push: (ref, value) => d.push(ref, value),
    get: ref => d.get(ref),
    once: ref => new Promise((resolve, reject) => d.onValue(ref, resolve, reject, { onlyOnce: true })),
    on(query, type, callback, cancel) {
      const register = {
        value: d.onValue, child_added: d.onChildAdded, child_changed: d.onChildChanged,
        child_removed: d.onChildRemoved, child_moved: d.onChildMoved,
      }[type];
      const wrapped = (snapshot, previous) => callback(snapshot, previous === undefined ? null : previous);
      return cancel ? register(query, wrapped, cancel) : register(query, wrapped);
    },
    query(ref, spec) {
      const constraints = [];
      if (spec.orderBy === 'key') constraints.push(d.orderByKey());
      else if (spec.orderBy === 'value') constraints.push(d.orderByValue());
      else if (spec.orderBy === 'priority') constraints.push(d.orderByPriority());
      else if (spec.orderBy === 'child') constraints.push(d.orderByChild(spec.child));
      for (const bound of ['startAt', 'startAfter', 'endAt', 'endBefore', 'equalTo']) {
        if (!(bound in spec)) continue;
        const key = spec[bound + 'Key'];
        constraints.push(key === undefined ? d[bound](spec[bound]) : d[bound](spec[bound], key));
      }
      if ('limitToFirst' in spec) constraints.push(d.limitToFirst(spec.limitToFirst));
      if ('limitToLast' in spec) constraints.push(d.limitToLast(spec.limitToLast));
      return d.query(ref, ...constraints);
    },
    transaction: (ref, update) => d.runTransaction(ref, update),
    onDisconnect: ref => d.onDisconnect(ref),
    serverTimestamp: () => d.serverTimestamp(),
    increment: n => d.increment(n),
    goOffline: c => d.goOffline(c.db),
    goOnline: c => d.goOnline(c.db),
    close: c => appModule.deleteApp(c.app),
    enableLogging: logger => d.enableLogging(logger),
  };
}

module.exports = { makeApi };
