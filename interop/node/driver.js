// The node-redisson side of redisync's interop suite: runs node-redisson lock
// operations on command from the Go tests in ../ (same protocol as
// ../java/src/main/java/io/redisync/interop/Driver.java).
//
// Usage: node driver.js PORT. Prints "0 OK <client id>" once connected, then
// reads "<id> <op> <args...>" lines on stdin and answers each with
// "<id> OK [result]" or "<id> ERR <message>" when it completes; operations run
// concurrently. node-redisson has only RLock, so KIND must be "lock". The
// owner id in Redis is "<client id>:<TID>" (node-redisson's clientId is TID).
//
//   lock KIND NAME TID LEASE          blocks until held (LEASE -1: watchdog)
//   trylock KIND NAME TID WAIT LEASE  true | false
//   unlock KIND NAME TID              OK, or ERR when not held
//   force KIND NAME                   true | false
//   locked KIND NAME                  true | false
//   critical KIND NAME TID ROUNDS HOLD
//                                     ROUNDS times: lock (watchdog), INCR
//                                     NAME:inside (and NAME:overlaps when it was
//                                     not 1) and NAME:entries, sleep HOLD ms,
//                                     DECR NAME:inside, unlock; answers ROUNDS
'use strict';

const readline = require('node:readline');
const { Redisson } = require('node-redisson');

const port = Number(process.argv[2]);
const redisson = new Redisson({ redis: { options: { host: '127.0.0.1', port } } });

function lease(ms) {
  return Number(ms) < 0 ? true : Number(ms);
}

function start(f) {
  const [, op, kind, name, tid] = f;
  if (kind !== 'lock') {
    throw new Error(`node-redisson has no lock kind ${kind}`);
  }
  const lock = redisson.getLock(name, tid);
  switch (op) {
    case 'lock':
      return lock.lock(lease(f[5]));
    case 'trylock':
      return lock.tryLock(Number(f[5]), lease(f[6]));
    case 'unlock':
      return lock.unlock();
    case 'force':
      return redisson.getLock(name).forceUnlock();
    case 'locked':
      return redisson.getLock(name).isLocked();
    case 'critical':
      return critical(lock, name, Number(f[5]), Number(f[6]));
    default:
      throw new Error(`unknown operation ${op}`);
  }
}

// The overlap detector: every holder counts itself in and out in Redis.
async function critical(lock, name, rounds, holdMs) {
  const redis = redisson.redis;
  for (let i = 0; i < rounds; i++) {
    await lock.lock();
    try {
      if ((await redis.incr(`${name}:inside`)) !== 1) {
        await redis.incr(`${name}:overlaps`);
      }
      await redis.incr(`${name}:entries`);
      await new Promise((resolve) => setTimeout(resolve, holdMs));
      await redis.decr(`${name}:inside`);
    } finally {
      await lock.unlock();
    }
  }
  return rounds;
}

function reply(id, text) {
  process.stdout.write(`${id} ${text}\n`);
}

async function main() {
  await redisson.redis.ping();
  // The client id every owner id of this process starts with.
  reply('0', `OK ${redisson.getLock('-').id}`);
  const pending = new Set();
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    const f = line.trim().split(' ');
    if (f.length < 2) {
      return;
    }
    const p = Promise.resolve()
      .then(() => start(f))
      .then(
        (v) => reply(f[0], v === undefined ? 'OK' : `OK ${v}`),
        (e) => reply(f[0], `ERR ${String(e && e.message ? e.message : e).replace(/\n/g, ' ')}`),
      );
    pending.add(p);
    p.finally(() => pending.delete(p));
  });
  rl.on('close', async () => {
    await Promise.allSettled([...pending]);
    await redisson.quit();
    process.exit(0);
  });
}

main().catch((e) => {
  process.stderr.write(`driver: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
