// ioredis and node-redis (latest from npm) at their default options against
// simhash-coordinator: connect (their handshakes and ready checks), SIMHASH.ADD,
// SIMHASH.QUERY, a pipeline, INFO. Usage: node node_clients.js PORT. Exit 0 when
// every check passed; prints one line per check and a summary line.
'use strict';
const path = require('path');
const IORedis = require(path.join(__dirname, 'node_modules', 'ioredis'));
const { createClient } = require(path.join(__dirname, 'node_modules', 'redis'));

const port = Number(process.argv[2]);
let checks = 0, failures = 0;
function check(name, cond, detail) {
  checks++;
  if (cond) { console.log('ok   ' + name); return; }
  failures++;
  console.log('FAIL ' + name + '  ' + JSON.stringify(detail));
}

async function withIORedis() {
  const r = new IORedis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  await new Promise((resolve, reject) => { r.once('ready', resolve); r.once('error', reject); });
  check('ioredis: ready (its INFO ready check passed)', r.status === 'ready', r.status);
  const fp = '1311768467294899695';
  check('ioredis: SIMHASH.ADD', await r.call('SIMHASH.ADD', fp, 'io-doc') === 1);
  const q = await r.call('SIMHASH.QUERY', fp);
  check('ioredis: SIMHASH.QUERY', q.length === 1 && q[0][0] === fp && q[0][2][0] === 'io-doc', q);
  const p = r.pipeline();
  for (let i = 0; i < 20; i++) p.call('SIMHASH.ADD', String(1000 + i), 'io-pipe-' + i);
  p.call('SIMHASH.QUERY', '1000', 'DISTANCE', '0');
  const out = await p.exec();
  check('ioredis: pipeline of 20 ADDs and a QUERY',
        out.slice(0, 20).every(([e, v]) => e === null && v === 1) &&
        out[20][1].length === 1 && out[20][1][0][2][0] === 'io-pipe-0', out.slice(18));
  const info = await r.info('server');
  check('ioredis: info()', /redis_version:/.test(info), info.slice(0, 80));
  let err = null;
  try { await r.multi().call('SIMHASH.QUERY', fp).exec(); } catch (e) { err = e; }
  check('ioredis: multi() refused with the alternative named',
        err && /pipeline\(\)/.test(String(err.message || err)), String(err));
  r.disconnect();
}

async function withNodeRedis() {
  const c = createClient({ url: 'redis://127.0.0.1:' + port });
  c.on('error', () => {});
  await c.connect();
  check('node-redis: connected (HELLO, CLIENT SETINFO)', c.isReady, c.isReady);
  const fp = '8070450532247928832';
  check('node-redis: SIMHASH.ADD', await c.sendCommand(['SIMHASH.ADD', fp, 'nr-doc']) === 1);
  const q = await c.sendCommand(['SIMHASH.QUERY', fp]);
  check('node-redis: SIMHASH.QUERY', q.length === 1 && q[0][0] === fp && q[0][2][0] === 'nr-doc', q);
  const m = c.multi();
  for (let i = 0; i < 20; i++) m.addCommand(['SIMHASH.ADD', String(5000 + i), 'nr-pipe-' + i]);
  m.addCommand(['SIMHASH.QUERY', '5000', 'DISTANCE', '0']);
  const out = await m.execAsPipeline();
  check('node-redis: pipeline (execAsPipeline) of 20 ADDs and a QUERY',
        out.slice(0, 20).every((v) => v === 1) && out[20].length === 1 &&
        out[20][0][2][0] === 'nr-pipe-0', out.slice(18));
  const info = await c.info();
  check('node-redis: info()', /loading:0/.test(info), info.slice(0, 80));
  check('node-redis: ping', await c.ping() === 'PONG');
  await c.quit();
}

(async () => {
  try { await withIORedis(); } catch (e) { check('ioredis ran', false, String(e && e.stack || e)); }
  try { await withNodeRedis(); } catch (e) { check('node-redis ran', false, String(e && e.stack || e)); }
  console.log(`node clients: ${checks} checks, ${failures} failed`);
  process.exit(failures ? 1 : 0);
})();
