// error.js: how failures show up.
// A thrown error answers 500; its text becomes the execution log's error_message.
// A status you set yourself (4xx/5xx) passes through unchanged.
export default async function handler(req, res) {
  if (req.query.mode === 'client') return res.status(400).json({ error: 'bad_request', message: 'mode=client was asked for' });
  if (req.query.mode === 'async') {
    await new Promise((resolve) => setTimeout(resolve, 10));
    throw new Error('failed after awaiting');
  }
  throw new TypeError(`cannot handle ${JSON.stringify(req.query)}`);
}
