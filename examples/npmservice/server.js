// A small payments API built on express-idempotency (1.0.6, from the npm
// registry), for idembench's black-box mode: POST /payments with
// {"amount": 100, "currency": "EUR"} and an Idempotency-Key header charges
// the payment provider (--downstream) and answers 201 with the payment.
//
//   npm ci --prefix examples/npmservice
//   node examples/npmservice/server.js --addr 127.0.0.1:8090 --downstream http://127.0.0.1:9000
//   idembench http examples/npmservice/target.yaml
//
// Flags: --addr HOST:PORT (default 127.0.0.1:8090), --downstream URL (the
// provider; POST URL/charges carries the key), --store memory|redis
// (default memory: the library's in-memory adapter; redis:
// express-idempotency-redis-adapter 1.0.8), --redis-url URL, --ttl SECONDS
// (how long the Redis adapter keeps a key; default 600), --intent
// strict|library (default strict: a request is the same when its URL,
// method, query and parsed body are deep-equal with strict equality;
// library: the library's default validator, whose loose equality takes
// "100" for 100), and --mount before-body-parser (a misconfiguration: the
// idempotency middleware runs before express.json(), so it sees no body).
//
// What the application adds around the library, as its README leaves to
// the application: a request without the key is refused with 400 (the
// library would run it without idempotency); the library's errors, which
// it hands to next(err) with the status set, are rendered as JSON, its 417
// for a key reused with another request as 422 and its 409 with
// Retry-After; a replayed answer carries "Idempotency-Replayed: true";
// the route handler returns at once on a replay (isHit), as the README
// says; the intent validator compares with strict equality; a client's
// own X-Hit header is dropped.
'use strict';

const express = require('express');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
const deepEqual = require('deep-equal');

// strictIntent is the library's default intent validator with strict
// equality: {"amount": "100"} is not {"amount": 100}.
const strictIntent = {
  isValidIntent(req, orig) {
    return req.url === orig.url && req.method === orig.method &&
      deepEqual(req.query, orig.query, { strict: true }) && deepEqual(req.body, orig.body, { strict: true });
  },
};

function parseArgs(argv) {
  const opts = { addr: '127.0.0.1:8090', downstream: '', store: 'memory', redisUrl: process.env.IDEM_REDIS_URL || '', ttl: 600, intent: 'strict', mount: 'after-body-parser' };
  const names = { '--addr': 'addr', '--downstream': 'downstream', '--store': 'store', '--redis-url': 'redisUrl', '--ttl': 'ttl', '--intent': 'intent', '--mount': 'mount' };
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split(/=(.*)/s, 2);
    const name = names[flag];
    if (!name) throw new Error(`unknown flag ${flag}`);
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new Error(`${flag} needs a value`);
    }
    opts[name] = value;
  }
  opts.ttl = Number(opts.ttl);
  if (!['memory', 'redis'].includes(opts.store)) throw new Error(`--store ${opts.store}: want memory or redis`);
  if (!['strict', 'library'].includes(opts.intent)) throw new Error(`--intent ${opts.intent}: want strict or library`);
  if (!['after-body-parser', 'before-body-parser'].includes(opts.mount)) throw new Error(`--mount ${opts.mount}: want after-body-parser or before-body-parser`);
  if (opts.store === 'redis' && !opts.redisUrl) throw new Error('--store redis needs --redis-url (or IDEM_REDIS_URL)');
  if (!Number.isInteger(opts.ttl) || opts.ttl < 1) throw new Error(`--ttl ${opts.ttl}: want whole seconds, at least 1`);
  return opts;
}

async function dataAdapter(opts) {
  if (opts.store === 'memory') return undefined; // the library's default
  const RedisAdapter = require('express-idempotency-redis-adapter').default;
  const adapter = new RedisAdapter({ connectionConfig: { url: opts.redisUrl }, ttl: opts.ttl });
  await adapter.connect();
  return adapter;
}

// charge calls the payment provider once; the key goes with it, so the
// provider (idembench's downstream oracle) counts charges per key.
async function charge(downstream, key, amount, currency) {
  if (!downstream) return;
  const resp = await fetch(downstream.replace(/\/$/, '') + '/charges', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify({ amount, currency }),
  });
  await resp.arrayBuffer();
  if (resp.status !== 200) throw new Error(`provider answered ${resp.status}`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const app = express();
  const payments = new Map();
  let next = 0;

  // A replay is marked; the library sets the x-hit request header when it
  // found the key, before it sends the stored answer. A client's own x-hit
  // header is dropped: the library would take it for its own, and the
  // route handler would skip a new request, leaving it unanswered and its
  // key in progress.
  app.use((req, res, nxt) => {
    delete req.headers['x-hit'];
    const send = res.send;
    res.send = function (body) {
      if (req.headers['x-hit'] === 'true' && res.statusCode < 300 && !res.headersSent) {
        res.setHeader('Idempotency-Replayed', 'true');
      }
      return send.call(this, body);
    };
    nxt();
  });
  const requireKey = (req, res, nxt) => {
    if (!req.get('Idempotency-Key')) {
      res.status(400).json({ error: 'Idempotency-Key header required' });
      return;
    }
    nxt();
  };
  const guard = idempotency({
    dataAdapter: await dataAdapter(opts),
    intentValidator: opts.intent === 'strict' ? strictIntent : undefined,
  });
  const chain = opts.mount === 'before-body-parser'
    ? [requireKey, guard, express.json()]
    : [express.json(), requireKey, guard];

  const create = async (req, res) => {
    if (getSharedIdempotencyService().isHit(req)) return; // replayed by the library
    const { amount, currency } = req.body || {};
    if (!Number.isInteger(amount) || typeof currency !== 'string') {
      res.status(400).json({ error: 'want {"amount": integer, "currency": string}' });
      return;
    }
    try {
      await charge(opts.downstream, req.get('Idempotency-Key'), amount, currency);
    } catch (err) {
      res.status(502).json({ error: 'payment provider: ' + err.message });
      return;
    }
    const id = 'pay_' + (++next);
    const p = { id, amount, currency, status: 'succeeded' };
    payments.set(id, p);
    res.status(201).json(p);
  };
  app.post('/payments', ...chain, create);
  app.post('/transfers', ...chain, create);
  app.get('/payments/:id', (req, res) => {
    const p = payments.get(req.params.id);
    if (!p) {
      res.status(404).json({ error: 'no such payment' });
      return;
    }
    res.json(p);
  });

  // The library's errors: it sets the status and calls next(err).
  app.use((err, req, res, nxt) => {
    let status = res.statusCode >= 400 ? res.statusCode : (err.status || 500);
    if (status === 417) status = 422; // the key reused with another request
    if (status === 409) res.setHeader('Retry-After', '1');
    res.status(status).json({ error: err.message });
  });

  const [host, port] = opts.addr.split(/:(?=[^:]*$)/);
  const server = app.listen(Number(port), host, () => {
    console.log(`payments API on http://${opts.addr} (express-idempotency, store ${opts.store})`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  console.error('npmservice:', err.message);
  process.exit(1);
});
