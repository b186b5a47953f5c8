'use strict';
// node-redisson (a Redisson-style lock: a hash of owner -> hold count, a
// pub/sub unlock channel, a watchdog) against the server on 127.0.0.1:PORT.
// Usage: node node_redisson.js PORT

const { Redisson } = require('node-redisson');
const { Checks, sleep, run } = require('./checks');

const port = Number(process.argv[2]);
const c = new Checks('node-redisson');

const client = (lockWatchdogTimeout) =>
  new Redisson({ redis: { options: { host: '127.0.0.1', port } }, lockWatchdogTimeout });

run(c, async () => {
  // A long watchdog lease, so that a waiter woken early can only have been
  // woken by the unlock message, not by the lease running out.
  const one = client(10000n);
  const two = client(10000n);
  const inspect = one.redis;

  const lock = one.getLock('{js}:redisson');
  await lock.lock();
  const fields = await inspect.hgetall('{js}:redisson');
  c.equal(Object.values(fields), ['1'], 'lock hash has one owner with count 1');
  c.within(9000, 10000, await inspect.pttl('{js}:redisson'), 'watchdog lease PTTL');

  await lock.lock();
  c.equal(Object.values(await inspect.hgetall('{js}:redisson')), ['2'], 'reentrant lock: count 2');
  await lock.unlock();
  c.equal(Object.values(await inspect.hgetall('{js}:redisson')), ['1'], 'one unlock of two: count 1');
  c.ok(await lock.isLocked(), 'still locked after one of two unlocks');

  const rival = two.getLock('{js}:redisson');
  c.equal(await rival.tryLock(0, 5000), false, 'rival tryLock(0) on a held lock');
  await c.rejects(rival.unlock(), 'unlock by a non-owner', (e) => e.name === 'RedissonLockError' || /not locked by current/.test(e.message));
  c.ok(await lock.isLocked(), 'still locked after the rival\'s unlock');

  // Wait + wake-up: the rival waits up to 5s while the lease has ~10s left;
  // the owner unlocks after 300ms and the unlock message must wake it.
  const waiting = (async () => {
    const t0 = Date.now();
    const got = await rival.tryLock(5000, 5000);
    return { got, at: Date.now(), waited: Date.now() - t0 };
  })();
  await sleep(300);
  const subscribers = await inspect.pubsub('NUMSUB', 'redisson_lock__channel:{js}:redisson');
  c.equal(subscribers, ['redisson_lock__channel:{js}:redisson', 1], 'waiter subscribed to the unlock channel');
  const releasedAt = Date.now();
  await lock.unlock();
  const woke = await waiting;
  c.ok(woke.got, 'waiter acquired after the unlock', woke);
  c.within(0, 500, woke.at - releasedAt, 'ms from unlock to the waiter holding the lock');
  c.within(2500, 5000, await inspect.pttl('{js}:redisson'), 'waiter\'s explicit 5s lease PTTL');
  await rival.unlock();
  c.equal(await inspect.exists('{js}:redisson'), 0, 'lock hash deleted by the last unlock');

  // Watchdog: a 600ms lease renewed every 200ms outlives its lease while held.
  const dog = client(600n);
  const watched = dog.getLock('{js}:watchdog');
  await watched.lock();
  await sleep(1500);
  c.ok(await watched.isLocked(), 'watchdog kept a 600ms lease alive for 1.5s');
  c.within(1, 600, await inspect.pttl('{js}:watchdog'), 'renewed lease PTTL');
  c.equal(await two.getLock('{js}:watchdog').tryLock(0, 1000), false, 'watched lock not takeable');
  await watched.unlock();
  c.equal(await inspect.exists('{js}:watchdog'), 0, 'watched lock released');

  // A fixed lease (no watchdog) lapses by itself.
  const leased = one.getLock('{js}:lease');
  c.ok(await leased.tryLock(0, 200), 'tryLock with a 200ms lease');
  await sleep(400);
  c.ok(!(await leased.isLocked()), 'fixed lease lapsed after 400ms');

  // forceUnlock deletes a lock whoever holds it and wakes its waiters.
  const forced = one.getLock('{js}:forced');
  await forced.lock();
  const forcedWaiter = two.getLock('{js}:forced').tryLock(5000, 1000);
  await sleep(100);
  const forcedAt = Date.now();
  c.ok(await two.getLock('{js}:forced').forceUnlock(), 'forceUnlock by another client');
  c.ok(await forcedWaiter, 'waiter took the force-unlocked lock');
  c.within(0, 500, Date.now() - forcedAt, 'ms from forceUnlock to the waiter holding the lock');
  await forced.forceUnlock();

  // Contention: four clients, each doing locked non-atomic increments;
  // waiters sleep on the unlock channel between attempts.
  const CLIENTS = 4;
  const ROUNDS = 25;
  const racers = Array.from({ length: CLIENTS }, () => client(2000n));
  await inspect.set('{js}:counter', 0);
  const t0 = Date.now();
  await Promise.all(
    racers.map(async (r) => {
      const mutex = r.getLock('{js}:mutex');
      for (let i = 0; i < ROUNDS; i++) {
        await mutex.lock();
        const v = Number(await r.redis.get('{js}:counter'));
        await sleep(1);
        await r.redis.set('{js}:counter', v + 1);
        await mutex.unlock();
      }
    }),
  );
  c.equal(Number(await inspect.get('{js}:counter')), CLIENTS * ROUNDS, `counter after ${CLIENTS}x${ROUNDS} locked increments`);
  c.within(0, 15000, Date.now() - t0, 'ms for the contended increments');

  await Promise.all([one, two, dog, ...racers].map((r) => r.quit()));
});
