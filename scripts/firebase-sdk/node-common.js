// What the two Node drivers share: their options, the SDK folder, the vectors, the JSON-line
// output, and a hearthd of the driver's own for the "restart" scenario.
'use strict';
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const repo = path.resolve(__dirname, '..', '..');

function usage(driver) {
  return 'usage: node ' + driver + ' --port HTTP_PORT [--host 127.0.0.1] [--ns demo] [--rules] [--admin-secret S]\n' +
    '         [--tcp-port LINE_PROTOCOL_PORT] [--tls (the server has TLS: https/wss URLs; trust its\n' +
    '         certificate with NODE_EXTRA_CA_CERTS)]\n' +
    '         [--only a,b] [--vectors FILE] [--hearthd BINARY] [--sdk-log]\n' +
    'The SDK folder is $HEARTH_FIREBASE_SDK, else ' + path.join(repo, '.firebase-sdk') + ' (docs/firebase-sdk.md).';
}

// The compat bundles: at the folder's top (as the extraction in docs/firebase-sdk.md leaves them)
// or inside node_modules/firebase (as `npm install --prefix <folder> firebase` leaves them).
function bundle(sdk, file) {
  const top = path.join(sdk, file);
  return fs.existsSync(top) ? top : path.join(sdk, 'node_modules', 'firebase', file);
}

function options(driver) {
  const args = process.argv.slice(2);
  const value = name => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
  const port = Number(value('--port'));
  if (!port) { console.error(usage(driver)); process.exit(2); }
  const sdk = process.env.HEARTH_FIREBASE_SDK || path.join(repo, '.firebase-sdk');
  if (!fs.existsSync(bundle(sdk, 'firebase-database-compat.js'))
    || !fs.existsSync(path.join(sdk, 'node_modules', '@firebase', 'database'))) {
    console.error('The Firebase JS SDK is not in ' + sdk + ': see docs/firebase-sdk.md');
    process.exit(2);
  }
  const vectorsFile = value('--vectors') || path.join(repo, 'Tests', 'HearthCoreTests', 'Resources', 'vectors.json');
  return {
    host: value('--host') || '127.0.0.1',
    port,
    ns: value('--ns') || 'demo',
    rules: args.includes('--rules'),
    tls: args.includes('--tls'),
    adminSecret: value('--admin-secret') || process.env.HEARTH_SDK_ADMIN_SECRET,
    tcpPort: Number(value('--tcp-port')) || null,
    only: (value('--only') || '').split(',').filter(Boolean),
    vectors: vectorsFile && fs.existsSync(vectorsFile) ? JSON.parse(fs.readFileSync(vectorsFile, 'utf8')) : null,
    hearthd: value('--hearthd') || process.env.HEARTHD,
    sdkLog: args.includes('--sdk-log'),
    sdk,
  };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => { const { port } = server.address(); server.close(() => resolve(port)); });
  });
}

function accepts(port) {
  return new Promise(resolve => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

// A hearthd on a fixed HTTP port and data directory that can be killed and started again.
async function ownServer(binary, ns, log, extra = []) {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-sdk-restart-'));
  let child = null;
  const server = {
    port,
    async start() {
      child = spawn(binary, ['--port', '0', '--http-port', String(port), '--data-dir', dataDir, '--fsync', 'always', ...extra],
        { env: Object.assign({}, process.env, { HEARTH_DEFAULT_DATABASE: ns }), stdio: ['ignore', 'ignore', 'pipe'] });
      let recent = '';
      child.stderr.on('data', chunk => { log(String(chunk)); recent = (recent + String(chunk)).slice(-2000); });
      const end = Date.now() + 20000;
      while (Date.now() < end) {
        if (await accepts(port)) return;
        await new Promise(r => setTimeout(r, 50));
      }
      throw new Error('hearthd did not listen on ' + port + ': ' + recent);
    },
    kill() { if (child) { child.kill('SIGKILL'); child = null; } },
    async stop() {
      if (child) {
        const exited = new Promise(r => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise(r => setTimeout(r, 5000))]);
        child = null;
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    await server.start();
  } catch (error) {
    server.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return server;
}

// Firebase Auth as the server sees it: an RSA key whose public half is served as a JWKS document
// (as Google serves its securetoken keys) and a hearthd configured with firebaseProjectId and
// jwtPublicKeysURL, under rules that use auth.uid and auth.token. mint() signs ID tokens shaped
// like Firebase's.
async function firebaseAuthServer(binary, ns, log) {
  const crypto = require('crypto');
  const http = require('http');
  const project = 'hearth-sdk-test';
  const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwks = JSON.stringify({ keys: [Object.assign(publicKey.export({ format: 'jwk' }), { kid: 'test-key', alg: 'RS256', use: 'sig' })] });
  const keys = http.createServer((request, response) => {
    response.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=3600' });
    response.end(jwks);
  });
  await new Promise(resolve => keys.listen(0, '127.0.0.1', resolve));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-sdk-auth-'));
  fs.writeFileSync(path.join(dir, 'rules.json'), JSON.stringify({ rules: {
    users: { $uid: { '.read': 'auth != null && auth.uid == $uid', '.write': 'auth != null && auth.uid == $uid' } },
    verified: { '.read': 'auth != null && auth.token.email_verified == true', '.write': false },
  } }));
  fs.writeFileSync(path.join(dir, 'hearth.json'), JSON.stringify({
    firebaseProjectId: project, jwtPublicKeysURL: 'http://127.0.0.1:' + keys.address().port + '/jwks',
    rulesFile: 'rules.json', defaultDatabase: ns, jwtClockSkewSeconds: 0,
  }));
  let server;
  try {
    server = await ownServer(binary, ns, log, ['--config', path.join(dir, 'hearth.json')]);
  } catch (error) {
    keys.close();
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const b64 = value => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
  return {
    port: server.port,
    project,
    mint(uid, { ttl = 3600, issuer = project, emailVerified = false } = {}) {
      const now = Math.floor(Date.now() / 1000);
      const head = b64({ alg: 'RS256', kid: 'test-key', typ: 'JWT' });
      const body = b64({
        iss: 'https://securetoken.google.com/' + issuer, aud: issuer, auth_time: now - 10, user_id: uid, sub: uid,
        iat: now - 5, exp: now + ttl, email: uid + '@example.com', email_verified: emailVerified,
        firebase: { identities: { email: [uid + '@example.com'] }, sign_in_provider: 'password' },
      });
      const signature = crypto.sign('sha256', Buffer.from(head + '.' + body), privateKey).toString('base64url');
      return head + '.' + body + '.' + signature;
    },
    async stop() {
      await server.stop();
      keys.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// A line-protocol connection (docs/PROTOCOL.md): request(object) answers with the response of the
// same id; every event line goes to onEvent.
function lineClient(host, port, onEvent) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host);
    const waiting = new Map();
    let buffer = '';
    let id = 0;
    let hello = false;
    socket.setEncoding('utf8');
    socket.once('error', reject);
    socket.on('data', chunk => {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf('\n')) >= 0) {
        const line = JSON.parse(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
        if (!hello && line.event === 'hello') {
          hello = true;
          resolve({
            request(object) {
              const requestId = ++id;
              socket.write(JSON.stringify(Object.assign({ id: requestId }, object)) + '\n');
              return new Promise(done => waiting.set(requestId, done));
            },
            close() { socket.destroy(); },
          });
        } else if (line.id !== undefined && waiting.has(line.id)) {
          waiting.get(line.id)(line);
          waiting.delete(line.id);
        } else {
          onEvent(line);
        }
      }
    });
  });
}

// Runs the scenarios with `api` and exits 0 when none failed.
async function drive(driver, opts, api) {
  const scenarios = require('./scenarios.js');
  const emit = line => console.log(JSON.stringify(Object.assign({ d: driver }, line)));
  if (opts.sdkLog) api.enableLogging(m => emit({ sdk: m }));
  emit({ e: 'start', sdk: api.kind + ' ' + api.sdkVersion, port: opts.port, ns: opts.ns, tls: opts.tls });
  let server = null;
  const wantsRestart = !opts.only.length || opts.only.includes('restart');
  if (opts.hearthd && wantsRestart) {
    const serverLog = [];
    server = await ownServer(opts.hearthd, opts.ns, text => serverLog.push(text));
    process.on('exit', () => server && server.kill());
  }
  const ctx = {
    host: opts.host, port: opts.port, ns: opts.ns, tls: opts.tls, rules: opts.rules, adminSecret: opts.adminSecret,
    vectors: opts.vectors, server,
    firebaseAuthServer: opts.hearthd ? () => firebaseAuthServer(opts.hearthd, opts.ns, () => {}) : null,
    line: opts.tcpPort ? onEvent => lineClient(opts.host, opts.tcpPort, onEvent) : null,
    prefix: 'sdk-' + driver + '-' + Date.now().toString(36), emit,
  };
  const killer = setTimeout(() => { emit({ e: 'driver timeout' }); process.exit(3); }, 600000);
  const verdicts = await scenarios.runAll(api, ctx, opts.only);
  clearTimeout(killer);
  if (server) await server.stop();
  const failed = verdicts.filter(v => v.verdict === 'FAIL').length;
  emit({ e: 'done', pass: verdicts.filter(v => v.verdict === 'PASS').length, fail: failed,
    skip: verdicts.filter(v => v.verdict === 'SKIP').length });
  // The SDK keeps sockets and timers alive: leave explicitly once the output is written.
  process.stdout.write('', () => process.exit(failed ? 1 : 0));
}

module.exports = { options, drive, bundle, repo };
