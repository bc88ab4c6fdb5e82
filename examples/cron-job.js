// cron-job.js: a scheduled job (give the function a schedule, e.g. "*/5 * * * *").
// A scheduled run arrives as a request with the header x-fnhost-trigger: schedule.
module.exports = async function handler(req, res) {
  const now = new Date().toISOString();
  const trigger = req.get('x-fnhost-trigger') ?? 'http';
  console.log('cron job ran', { at: now, trigger }); // tagged with the function name and execution id
  await kv.set('last-run', { at: now, trigger });
  res.json({ ok: true, lastRun: now });
};
