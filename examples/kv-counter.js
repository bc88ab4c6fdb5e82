// kv-counter.js: counts calls in the function's key-value store.
// `kv` is a global: get/set/has/delete/list return promises and must be awaited.
export default async function handler(req, res) {
  const name = req.query.name ?? 'default';
  const key = `count:${name}`;
  const count = ((await kv.get(key)) ?? 0) + 1;
  await kv.set(key, count); // kv.set(key, value, ttlSeconds) expires the key after the TTL
  res.json({ name, count, counters: await kv.list('count:') });
}
