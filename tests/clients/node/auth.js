'use strict';
// ioredis and node-redisson on a server with requirepass, in db 2: ioredis
// sends AUTH and SELECT before its INFO ready check, and node-redisson's
// subscriber connection must be authenticated too to hear unlock messages.
// Usage: REDIS_PASSWORD=... node auth.js PORT

const Redis = require('ioredis');
const { Redisson } = require('node-redisson');
const { Checks, sleep, run } = require('./checks');

const port = Number(process.argv[2]);
const password = process.env.REDIS_PASSWORD;
const c = new Checks('ioredis and node-redisson with AUTH');
const options = { host: '127.0.0.1', port, password, db: 2 };

run(c, async () => {
  const wrong = new Redis({ ...options, password: 'wrong', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  const errors = [];
  wrong.on('error', (e) => errors.push(e.message));
  await c.rejects(wrong.connect(), 'ioredis with a wrong password does not connect');
  c.ok(errors.some((m) => m.startsWith('WRONGPASS invalid username-password pair')), 'ioredis reported WRONGPASS', errors);
  wrong.disconnect();

  const redis = new Redis({ ...options, lazyConnect: true });
  await redis.connect();
  c.equal(redis.status, 'ready', 'ioredis ready after AUTH and SELECT');
  c.equal(await redis.set('auth:res', 'tok', 'PX', 1000, 'NX'), 'OK', 'SET NX PX in db 2');
  const db0 = new Redis({ ...options, db: 0 });
  c.equal(await db0.exists('auth:res'), 0, 'lock key is not in db 0');

  const one = new Redisson({ redis: { options }, lockWatchdogTimeout: 10000n });
  const two = new Redisson({ redis: { options }, lockWatchdogTimeout: 10000n });
  const lock = one.getLock('{auth}:lock');
  await lock.lock();
  const waiting = two.getLock('{auth}:lock').tryLock(5000, 5000).then((got) => ({ got, at: Date.now() }));
  await sleep(300);
  const releasedAt = Date.now();
  await lock.unlock();
  const woke = await waiting;
  c.ok(woke.got, 'node-redisson waiter acquired after the unlock', woke);
  c.within(0, 500, woke.at - releasedAt, 'ms from unlock to the authenticated waiter holding the lock');
  c.equal(await redis.exists('{auth}:lock'), 1, 'the lock hash is in db 2');
  await two.getLock('{auth}:lock').forceUnlock();

  await Promise.all([one.quit(), two.quit()]);
  redis.disconnect();
  db0.disconnect();
});
