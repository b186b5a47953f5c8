'use strict';
// ioredis against the server on 127.0.0.1:PORT: the classic single-key lock
// (SET NX PX to take it, a compare-and-delete script to release it) with
// the script defined through defineCommand (EVALSHA, EVAL after NOSCRIPT),
// pipelined, and under contention from several connections.
// Usage: node ioredis_lock.js PORT

const Redis = require('ioredis');
const { randomUUID } = require('node:crypto');
const { Checks, sleep, run } = require('./checks');

const port = Number(process.argv[2]);
const c = new Checks('ioredis lock');

const UNLOCK = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`;

function connect() {
  const redis = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, lazyConnect: true });
  redis.defineCommand('unlock', { numberOfKeys: 1, lua: UNLOCK });
  return redis;
}

async function withLock(redis, key, ttlMs, deadlineMs, body) {
  const token = randomUUID();
  const deadline = Date.now() + deadlineMs;
  while ((await redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') {
    if (Date.now() > deadline) throw new Error(`could not take ${key} in ${deadlineMs}ms`);
    await sleep(1);
  }
  try {
    return await body();
  } finally {
    const released = await redis.unlock(key, token);
    if (released !== 1) throw new Error(`unlock of ${key} returned ${released}`);
  }
}

run(c, async () => {
  const a = connect();
  const b = connect();
  await a.connect();
  await b.connect();
  c.equal(a.status, 'ready', 'ioredis connection status (INFO answered)');

  c.equal(await a.set('js:res', 'tok-a', 'PX', 1000, 'NX'), 'OK', 'SET NX PX on a free key');
  c.equal(await b.set('js:res', 'tok-b', 'PX', 1000, 'NX'), null, 'SET NX PX on a held key');
  c.within(900, 1000, await b.pttl('js:res'), 'lease PTTL');
  c.equal(await b.unlock('js:res', 'tok-b'), 0, 'unlock with the wrong token');
  c.equal(await b.get('js:res'), 'tok-a', 'lock still held after the wrong unlock');
  c.equal(await a.unlock('js:res', 'tok-a'), 1, 'unlock by the owner');
  c.equal(await a.exists('js:res'), 0, 'key gone after unlock');

  // SCRIPT FLUSH: the defined command gets NOSCRIPT from EVALSHA and ioredis
  // falls back to EVAL, which caches the script again.
  const sha = require('node:crypto').createHash('sha1').update(UNLOCK).digest('hex');
  await a.set('js:res', 'tok-a', 'PX', 1000);
  c.equal(await a.script('EXISTS', sha), [1], 'unlock script cached after first use');
  c.equal(await a.script('FLUSH'), 'OK', 'SCRIPT FLUSH');
  c.equal(await a.unlock('js:res', 'tok-a'), 1, 'unlock after SCRIPT FLUSH (NOSCRIPT fallback)');
  c.equal(await a.script('EXISTS', sha), [1], 'unlock script cached again');

  // Pipelined lock cycle: take, read, release, and a rival's failed take, in one batch.
  const results = await a
    .pipeline()
    .set('js:pipe', 'tok-p', 'PX', 2000, 'NX')
    .set('js:pipe', 'tok-q', 'PX', 2000, 'NX')
    .get('js:pipe')
    .unlock('js:pipe', 'tok-q')
    .unlock('js:pipe', 'tok-p')
    .exists('js:pipe')
    .exec();
  c.equal(results, [[null, 'OK'], [null, null], [null, 'tok-p'], [null, 0], [null, 1], [null, 0]], 'pipelined lock cycle replies');

  // The lease lapses by itself.
  c.equal(await a.set('js:lease', 'tok-a', 'PX', 150, 'NX'), 'OK', 'take a 150ms lease');
  await sleep(300);
  c.equal(await b.set('js:lease', 'tok-b', 'PX', 1000, 'NX'), 'OK', 'rival takes the lapsed lease');
  c.equal(await a.unlock('js:lease', 'tok-a'), 0, 'old owner cannot release the rival\'s lock');
  c.equal(await b.unlock('js:lease', 'tok-b'), 1, 'rival releases');

  // Mutual exclusion across connections: a non-atomic GET/SET increment.
  const WORKERS = 8;
  const ROUNDS = 50;
  const conns = Array.from({ length: WORKERS }, connect);
  await Promise.all(conns.map((r) => r.connect()));
  await a.set('js:counter', 0);
  await Promise.all(
    conns.map(async (r) => {
      for (let i = 0; i < ROUNDS; i++) {
        await withLock(r, 'js:mutex', 5000, 20000, async () => {
          const v = Number(await r.get('js:counter'));
          await sleep(0);
          await r.set('js:counter', v + 1);
        });
      }
    }),
  );
  c.equal(Number(await a.get('js:counter')), WORKERS * ROUNDS, `counter after ${WORKERS}x${ROUNDS} locked increments`);

  // A thundering herd: many connections race for one free lock at once;
  // exactly one wins.
  const HERD = 64;
  const herd = Array.from({ length: HERD }, connect);
  await Promise.all(herd.map((r) => r.connect()));
  const votes = await Promise.all(herd.map((r, i) => r.set('js:herd', `tok${i}`, 'PX', 5000, 'NX')));
  const winners = votes.filter((v) => v === 'OK').length;
  c.equal(winners, 1, `winners among ${HERD} simultaneous SET NX PX`);
  const winner = votes.indexOf('OK');
  c.equal(await a.get('js:herd'), `tok${winner}`, 'the lock holds the winner\'s token');
  const releases = await Promise.all(herd.map((r, i) => r.unlock('js:herd', `tok${i}`)));
  c.equal(releases.reduce((x, y) => x + y, 0), 1, 'only the winner\'s unlock deletes the lock');
  herd.forEach((r) => r.disconnect());

  // Optimistic locking: WATCH the counter, read it, and write it in
  // MULTI/EXEC, retrying when EXEC aborts because another connection wrote.
  await a.set('js:watched', 0);
  let aborts = 0;
  await Promise.all(
    conns.map(async (r) => {
      for (let i = 0; i < 25; i++) {
        for (let tries = 0; ; tries++) {
          if (tries > 1000) throw new Error('WATCH increment never committed');
          await r.watch('js:watched');
          const v = Number(await r.get('js:watched'));
          const committed = await r.multi().set('js:watched', v + 1).exec();
          if (committed !== null) break;
          aborts += 1;
        }
      }
    }),
  );
  c.equal(Number(await a.get('js:watched')), WORKERS * 25, `WATCH/MULTI increments from ${WORKERS} connections (${aborts} EXEC aborts)`);

  // A connection killed by CLIENT KILL is reconnected by ioredis, and a
  // lock taken through it afterwards works.
  const victimId = await b.client('ID');
  c.equal(await a.client('KILL', 'ID', victimId), 1, 'CLIENT KILL ID of a lock client');
  c.equal(await b.set('js:revived', 'tok-b', 'PX', 1000, 'NX'), 'OK', 'lock taken after ioredis reconnected');
  c.ok((await b.client('ID')) !== victimId, 'the reconnected client has a new id');
  c.equal(await b.unlock('js:revived', 'tok-b'), 1, 'unlock after reconnecting (script run on the new connection)');

  // Auto-pipelining: every worker shares one connection whose commands
  // ioredis batches into pipelines as they are issued.
  const auto = new Redis({ host: '127.0.0.1', port, enableAutoPipelining: true, lazyConnect: true });
  auto.defineCommand('unlock', { numberOfKeys: 1, lua: UNLOCK });
  await auto.connect();
  await auto.set('js:auto:counter', 0);
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (let i = 0; i < 25; i++) {
        await withLock(auto, 'js:auto:mutex', 5000, 20000, async () => {
          const v = Number(await auto.get('js:auto:counter'));
          await auto.set('js:auto:counter', v + 1);
        });
      }
    }),
  );
  c.equal(Number(await auto.get('js:auto:counter')), WORKERS * 25, 'auto-pipelined locked increments');

  // One large pipeline: 1000 locks taken, then released, in two batches.
  const KEYS = 1000;
  const take = a.pipeline();
  const give = a.pipeline();
  for (let i = 0; i < KEYS; i++) {
    take.set(`js:many:${i}`, `tok${i}`, 'PX', 5000, 'NX');
    give.unlock(`js:many:${i}`, `tok${i}`);
  }
  const taken = await take.exec();
  c.ok(taken.every(([err, v]) => !err && v === 'OK'), `${KEYS} pipelined SET NX PX all OK`);
  const given = await give.exec();
  c.ok(given.every(([err, v]) => !err && v === 1), `${KEYS} pipelined unlocks all 1`, given.find(([e, v]) => e || v !== 1));
  c.equal((await a.keys('js:*')).sort(), ['js:auto:counter', 'js:counter', 'js:watched'], 'keys left: only the counters');

  for (const r of [a, b, auto, ...conns]) r.disconnect();
});
