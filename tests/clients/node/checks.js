'use strict';
// Assertion helpers shared by the Node client programs. Each program
// prints one line per passed check; the first failed check prints FAIL
// with what it saw and exits 1, for the Rust harness (tests/real_clients.rs).

const readline = require('node:readline');

class Checks {
  constructor(scenario) {
    this.scenario = scenario;
    this.passed = 0;
  }

  ok(cond, what, seen) {
    if (!cond) {
      const detail = seen === undefined ? '' : ` (saw ${show(seen)})`;
      console.log(`FAIL ${this.scenario}: ${what}${detail}`);
      process.exit(1);
    }
    this.passed += 1;
    console.log(`ok ${what}`);
  }

  equal(got, want, what) {
    this.ok(show(got) === show(want), `${what} is ${show(want)}`, got);
  }

  within(low, high, value, what) {
    this.ok(low <= value && value <= high, `${what} = ${value} in [${low}, ${high}]`, value);
  }

  async rejects(promise, what, test = () => true) {
    try {
      const got = await promise;
      this.ok(false, `${what}: expected a rejection`, got);
    } catch (e) {
      this.ok(test(e), `${what} (${e.name}: ${e.message})`, e);
    }
  }

  done() {
    console.log(`PASS ${this.scenario}: ${this.passed} checks`);
  }
}

function show(v) {
  if (v instanceof Error) return `${v.name}: ${v.message}`;
  return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The harness owns the servers: a program asks it to stop server `index`
// by printing `@stop index`, and the harness answers on stdin when it is down.
let stdinLines;
async function stopServer(index) {
  if (!stdinLines) {
    stdinLines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  }
  console.log(`@stop ${index}`);
  const { value, done } = await stdinLines.next();
  if (done || value.trim() !== 'stopped') {
    throw new Error(`harness did not confirm stopping server ${index}: ${value}`);
  }
}

// Runs `main`, failing the program on any uncaught error, and bounding it.
function run(checks, main, limitMs = 60000) {
  const timer = setTimeout(() => {
    console.log(`FAIL ${checks.scenario}: still running after ${limitMs}ms`);
    process.exit(1);
  }, limitMs);
  main().then(
    () => {
      clearTimeout(timer);
      checks.done();
      process.exit(0);
    },
    (e) => {
      console.log(`FAIL ${checks.scenario}: ${e && e.stack ? e.stack : show(e)}`);
      process.exit(1);
    },
  );
}

module.exports = { Checks, sleep, stopServer, run };
