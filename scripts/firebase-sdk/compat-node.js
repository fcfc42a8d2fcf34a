// The Firebase JS SDK's browser bundles (firebase-app-compat.js, firebase-database-compat.js),
// unmodified, in Node 20: they open their sockets with the global WebSocket, so Node runs with
// --experimental-websocket; `self` is the one browser global they need besides it.
// Usage: node --experimental-websocket compat-node.js --port HTTP_PORT [options of node-common.js]
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');
const { options, drive, bundle } = require('./node-common.js');

const opts = options('compat-node.js');
if (typeof WebSocket === 'undefined') {
  console.error('Node has no global WebSocket: run node --experimental-websocket (Node 20) or Node 22+');
  process.exit(2);
}
globalThis.self = globalThis;
for (const file of ['firebase-app-compat.js', 'firebase-database-compat.js']) {
  vm.runInThisContext(fs.readFileSync(bundle(opts.sdk, file), 'utf8'), { filename: file });
}
const { makeApi } = require('./api-compat.js');
drive('compat-node', opts, makeApi(globalThis.firebase)).catch(e => {
  console.log(JSON.stringify({ d: 'compat-node', e: 'driver error', error: String(e && e.stack || e) }));
  process.exit(1);
});
