'use strict';
// node-redis (@redis/client 6, which speaks RESP3 by default) against the
// server on 127.0.0.1:PORT: SET NX PX locks, a compare-and-delete script via
// defineScript (EVALSHA, EVAL after NOSCRIPT), MULTI, a BLPOP waiter, and a
// RESP3 subscriber woken by an unlock script's PUBLISH.
// Usage: node node_redis.js PORT

const { createClient, defineScript } = require('@redis/client');
const { Checks, sleep, run } = require('./checks');

const port = Number(process.argv[2]);
const c = new Checks('node-redis');

const UNLOCK = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], 'unlocked')
  return 1
end
return 0`;

const unlock = defineScript({
  NUMBER_OF_KEYS: 2,
  SCRIPT: UNLOCK,
  parseCommand(parser, key, channel, token) {
    parser.pushKey(key);
    parser.pushKey(channel);
    parser.push(token);
  },
  transformReply: (reply) => reply,
});

run(c, async () => {
  const client = createClient({ socket: { host: '127.0.0.1', port }, scripts: { unlock } });
  client.on('error', (e) => console.log(`client error: ${e.message}`));
  await client.connect();
  const info = await client.sendCommand(['CLIENT', 'INFO']);
  c.ok(String(info).split(/\s+/).includes('resp=3'), 'connection negotiated RESP3', String(info));

  c.equal(await client.set('nr:res', 'tok', { NX: true, PX: 1000 }), 'OK', 'SET NX PX on a free key');
  c.equal(await client.set('nr:res', 'rival', { NX: true, PX: 1000 }), null, 'SET NX PX on a held key');
  c.equal(await client.unlock('nr:res', 'nr:chan', 'rival'), 0, 'unlock with the wrong token');
  c.equal(await client.scriptFlush(), 'OK', 'SCRIPT FLUSH');
  c.equal(await client.unlock('nr:res', 'nr:chan', 'tok'), 1, 'unlock after SCRIPT FLUSH (NOSCRIPT fallback)');
  c.equal(await client.scriptExists(unlock.SHA1), [1], 'unlock script cached again');

  const replies = await client
    .multi()
    .set('nr:tx', 'tok', { NX: true, PX: 1000 })
    .set('nr:tx', 'rival', { NX: true, PX: 1000 })
    .get('nr:tx')
    .exec();
  c.equal(replies, ['OK', null, 'tok'], 'MULTI lock cycle replies');

  // A waiter blocked in BLPOP on a duplicate connection wakes at the push.
  const waiter = client.duplicate();
  await waiter.connect();
  const t0 = Date.now();
  const popped = waiter.blPop('nr:signal', 5).then((r) => ({ r, at: Date.now() }));
  await sleep(200);
  const pushedAt = Date.now();
  await client.lPush('nr:signal', '1');
  const woke = await popped;
  c.equal(woke.r, { key: 'nr:signal', element: '1' }, 'BLPOP reply');
  c.within(0, 500, woke.at - pushedAt, 'ms from LPUSH to the BLPOP waiter waking');
  c.within(150, 1000, woke.at - t0, 'ms the BLPOP waiter was blocked');

  // A RESP3 subscriber hears the unlock script's PUBLISH.
  const subscriber = client.duplicate();
  await subscriber.connect();
  const heard = new Promise((resolve) => subscriber.subscribe('nr:chan', (message) => resolve({ message, at: Date.now() })));
  await sleep(50);
  await client.set('nr:res', 'tok', { PX: 1000 });
  const unlockedAt = Date.now();
  c.equal(await client.unlock('nr:res', 'nr:chan', 'tok'), 1, 'unlock by the owner publishes');
  const got = await Promise.race([heard, sleep(2000).then(() => null)]);
  c.ok(got && got.message === 'unlocked', 'subscriber got the unlock message', got);
  c.within(0, 500, got.at - unlockedAt, 'ms from unlock to the message');

  // Locked increments from eight connections.
  const racers = await Promise.all(Array.from({ length: 8 }, async () => {
    const r = client.duplicate();
    await r.connect();
    return r;
  }));
  await client.set('nr:counter', '0');
  await Promise.all(
    racers.map(async (r, n) => {
      for (let i = 0; i < 25; i++) {
        const token = `w${n}:${i}`;
        const deadline = Date.now() + 20000;
        while ((await r.set('nr:mutex', token, { NX: true, PX: 5000 })) !== 'OK') {
          if (Date.now() > deadline) throw new Error('lock not taken in time');
          await sleep(1);
        }
        const v = Number(await r.get('nr:counter'));
        await r.set('nr:counter', String(v + 1));
        if ((await r.unlock('nr:mutex', 'nr:mutex:chan', token)) !== 1) throw new Error('lock lost before unlock');
      }
    }),
  );
  c.equal(await client.get('nr:counter'), '200', '8 connections x 25 locked increments');

  await Promise.all([client, waiter, subscriber, ...racers].map((r) => r.close()));
});
