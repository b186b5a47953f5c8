'use strict';
// npm redlock (5.x, over ioredis) across three servers on 127.0.0.1:PORT1..3.
// Midway it asks the harness to stop servers: with one down the quorum (2 of
// 3) still locks, with two down it cannot.
// Usage: node redlock.js PORT1 PORT2 PORT3

const Redis = require('ioredis');
const Redlock = require('redlock').default;
const { ExecutionError } = require('redlock');
const { Checks, stopServer, run } = require('./checks');

const ports = process.argv.slice(2, 5).map(Number);
const c = new Checks('redlock');
const RESOURCE = '{rl}:res';

function connect(port) {
  // A node that is down must fail fast: no offline queue, no retried
  // requests, no reconnect loop once the server is gone.
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  return redis;
}

const holders = (clients) => Promise.all(clients.map((r) => r.get(RESOURCE)));

// Redlock settles an operation as soon as a quorum has voted; each entry of
// `attempts` is a promise of the attempt's votes, settled once all are in.
const allVotes = (lock) => lock.attempts[lock.attempts.length - 1];

run(c, async () => {
  const clients = ports.map(connect);
  await Promise.all(clients.map((r) => r.connect()));
  const settings = { retryCount: 2, retryDelay: 50, retryJitter: 10 };
  const redlock = new Redlock(clients, settings);
  const rival = new Redlock(clients.map((r) => r), settings);

  const lock = await redlock.acquire([RESOURCE], 2000);
  c.equal((await allVotes(lock)).votesFor.size, 3, 'votes for with all nodes up');
  c.equal(await holders(clients), [lock.value, lock.value, lock.value], 'lock value on all three nodes');
  for (const r of clients) c.within(1500, 2000, await r.pttl(RESOURCE), `lease PTTL on :${r.options.port}`);

  await c.rejects(rival.acquire([RESOURCE], 2000), 'rival acquire of a held lock', (e) => e instanceof ExecutionError && e.attempts.length === 3);

  const extended = await lock.extend(4000);
  await allVotes(extended);
  for (const r of clients) c.within(3000, 4000, await r.pttl(RESOURCE), `PTTL after extend on :${r.options.port}`);
  await allVotes(await extended.release());
  c.equal(await holders(clients), [null, null, null], 'released on all three nodes');

  // A foreign holder on one node is outvoted, and release leaves its key alone.
  await clients[0].set(RESOURCE, 'foreign', 'PX', 5000);
  const outvoting = await redlock.acquire([RESOURCE], 2000);
  c.equal((await allVotes(outvoting)).votesAgainst.size, 1, 'one vote against from the foreign holder');
  await allVotes(await outvoting.release());
  c.equal(await holders(clients), ['foreign', null, null], 'release kept the foreign holder\'s key');
  await clients[0].del(RESOURCE);

  // using(): redlock extends the lease by itself while the routine runs.
  const USING = `${RESOURCE}:using`;
  const inside = await redlock.using([USING], 800, { automaticExtensionThreshold: 400 }, async (signal) => {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const values = await Promise.all(clients.map((r) => r.get(USING)));
    return { aborted: signal.aborted, values };
  });
  c.ok(!inside.aborted, 'using(): no extension failed during a 2s routine on an 800ms lease', inside);
  c.ok(inside.values.every((v) => v && v === inside.values[0]), 'using(): still held on all three nodes after 2s', inside.values);
  c.equal(await Promise.all(clients.map((r) => r.exists(USING))), [0, 0, 0], 'using(): released after the routine');

  await stopServer(0);
  const quorum = await redlock.acquire([RESOURCE], 2000);
  c.ok(quorum.value, 'acquire with one of three nodes down');
  c.equal((await allVotes(quorum)).votesFor.size, 2, 'votes for with one node down');
  c.equal(await holders(clients.slice(1)), [quorum.value, quorum.value], 'lock value on the two live nodes');
  await c.rejects(rival.acquire([RESOURCE], 2000), 'rival acquire with one node down', (e) => e instanceof ExecutionError);
  await allVotes(await quorum.release());
  c.equal(await holders(clients.slice(1)), [null, null], 'released on the two live nodes');

  await stopServer(1);
  await c.rejects(redlock.acquire([RESOURCE], 2000), 'acquire with two of three nodes down', (e) => e instanceof ExecutionError && e.attempts.length === 3);
  c.equal(await clients[2].exists(RESOURCE), 0, 'failed acquire left no partial lock on the live node');

  clients[2].disconnect();
});
