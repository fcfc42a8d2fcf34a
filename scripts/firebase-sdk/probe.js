// Sends raw frames to hearthd's Firebase endpoint and prints every frame in both directions, to
// look at the protocol under what the SDK does (docs/firebase-sdk.md).
// Usage: node --experimental-websocket probe.js PORT [--ns demo] [--wait MS] FRAME...
// Each FRAME is sent as one text frame once the server's hello arrived; "@200" waits 200 ms.
'use strict';
const args = process.argv.slice(2);
const port = Number(args.shift());
let ns = 'demo', wait = 1000;
const frames = [];
while (args.length) {
  const a = args.shift();
  if (a === '--ns') ns = args.shift();
  else if (a === '--wait') wait = Number(args.shift());
  else frames.push(a);
}
const started = Date.now();
const stamp = () => String(Date.now() - started).padStart(5) + ' ms';
const show = text => (text.length > 600 ? text.slice(0, 600) + '...(' + text.length + ' chars)' : text);
const socket = new WebSocket('ws://127.0.0.1:' + port + '/.ws?v=5&ns=' + ns);
let helloed = false;
socket.onmessage = async event => {
  console.log(stamp() + ' <- ' + show(String(event.data)));
  if (helloed) return;
  helloed = true;
  for (const frame of frames) {
    if (frame.startsWith('@')) { await new Promise(r => setTimeout(r, Number(frame.slice(1)))); continue; }
    console.log(stamp() + ' -> ' + show(frame));
    socket.send(frame);
  }
  setTimeout(() => socket.close(), wait);
};
socket.onclose = event => { console.log(stamp() + ' closed ' + event.code + ' ' + event.reason); process.exit(0); };
socket.onerror = () => console.log(stamp() + ' socket error');
