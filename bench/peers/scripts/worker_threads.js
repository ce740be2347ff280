#!/usr/bin/env node
// Node peer for bench/peers: worker_threads.
//
// Speaks the peers worker protocol: one JSON command per line on stdin, one
// JSON reply per line on stdout (see worker.go). Tasks are plain JavaScript
// run in long-lived worker threads, reused from task to task (no sandbox, no
// fresh instance):
//
//   noop   replies null                    (the analogue of noop.wasm)
//   hello  replies its input .toUpperCase() (the analogue of the Go hello guest)
//
// Per-task cost is postMessage to an idle worker until its reply arrives.
// Stop latency: a new Worker that posts "started" and then spins in
// `for (;;) {}`; the time is from worker.terminate() until its promise
// resolves. `recover_ns` is the time to start a new Worker and get a first
// reply from it.
'use strict';
const { Worker, isMainThread, parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const readline = require('node:readline');

const INPUT = 'hello, stint: the quick brown fox jumps over the lazy dog\n';
const WANT = INPUT.toUpperCase();
const PAR = 2;

if (!isMainThread) {
  parentPort.on('message', (m) => {
    switch (m.op) {
      case 'noop':
        parentPort.postMessage(null);
        break;
      case 'hello':
        parentPort.postMessage(m.s.toUpperCase());
        break;
      case 'spin':
        parentPort.postMessage('started');
        for (;;) {}
    }
  });
}

const now = () => process.hrtime.bigint();

// Pooled worker: one request in flight at a time.
class PoolWorker {
  constructor() {
    this.w = new Worker(__filename);
    this.pending = null;
    this.w.on('message', (m) => {
      const p = this.pending;
      this.pending = null;
      p.resolve(m);
    });
    this.w.on('error', (e) => {
      if (this.pending) this.pending.reject(e);
    });
  }
  call(msg) {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.w.postMessage(msg);
    });
  }
}

async function task(pw, guest) {
  if (guest === 'hello') {
    const r = await pw.call({ op: 'hello', s: INPUT });
    if (r !== WANT) throw new Error(`hello: got ${JSON.stringify(r)}`);
  } else {
    const r = await pw.call({ op: 'noop' });
    if (r !== null) throw new Error('noop: unexpected reply');
  }
}

function memStatus() {
  const s = fs.readFileSync('/proc/self/status', 'utf8');
  const get = (k) => Number((s.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm')) || [0, -1])[1]);
  return { rss_kb: get('VmRSS'), hwm_kb: get('VmHWM') };
}

function once(w, ev) {
  return new Promise((resolve, reject) => {
    w.once(ev, resolve);
    w.once('error', reject);
  });
}

async function main() {
  const t0 = now();
  const pool = [];
  for (let i = 0; i < PAR; i++) pool.push(new PoolWorker());
  for (let i = 0; i < 4; i++) for (const pw of pool) await task(pw, 'noop');
  const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  out({
    ready: true,
    setup_ms: Number(now() - t0) / 1e6,
    ...memStatus(),
    info: `node ${process.version}, ${PAR} worker_threads, postMessage round trip per task`,
  });

  const ops = {
    async lat({ guest, n }) {
      const ns = [];
      for (let i = 0; i < n; i++) {
        const a = now();
        await task(pool[0], guest);
        ns.push(Number(now() - a));
      }
      return { ns };
    },
    async tput({ guest, ms, par }) {
      par = par || PAR;
      const end = Date.now() + ms;
      let tasks = 0;
      const a = now();
      await Promise.all(
        pool.slice(0, par).map(async (pw) => {
          while (Date.now() < end) {
            await task(pw, guest);
            tasks++;
          }
        }),
      );
      return { tasks, elapsed_ns: Number(now() - a) };
    },
    async stop({ n }) {
      const ns = [];
      const rec = [];
      for (let i = 0; i < n; i++) {
        const w = new Worker(__filename);
        const started = once(w, 'message');
        w.postMessage({ op: 'spin' });
        await started;
        const a = now();
        await w.terminate();
        ns.push(Number(now() - a));
        const b = now();
        const pw = new PoolWorker();
        await task(pw, 'noop');
        rec.push(Number(now() - b));
        await pw.w.terminate();
      }
      return { ns, recover_ns: rec };
    },
    async mem() {
      return memStatus();
    },
    async reset_hwm() {
      fs.writeFileSync('/proc/self/clear_refs', '5');
      return {};
    },
  };

  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const req = JSON.parse(line);
    if (req.op === 'quit') {
      for (const pw of pool) await pw.w.terminate();
      out({});
      process.exit(0);
    }
    let r;
    try {
      const f = ops[req.op];
      r = f ? await f(req) : { error: `unknown op ${req.op}` };
    } catch (e) {
      r = { error: String(e) };
    }
    out(r);
  }
}

if (isMainThread) main();
