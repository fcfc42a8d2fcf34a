// The Firebase JS SDK's npm packages (@firebase/app, @firebase/database: the modular API and
// its Node build, faye-websocket underneath), unmodified, required from the SDK folder's
// node_modules.
// Usage: node modular-node.js --port HTTP_PORT [options of node-common.js]
'use strict';
const { options, drive } = require('./node-common.js');
const { makeApi } = require('./api-modular.js');

const opts = options('modular-node.js');
drive('modular-node', opts, makeApi(opts.sdk)).catch(e => {
  console.log(JSON.stringify({ d: 'modular-node', e: 'driver error', error: String(e && e.stack || e) }));
  process.exit(1);
});
