// streaming.js: streams a response; each write() reaches the client as it is written.
// Try: curl -N <invocation url>
export default async function handler(req, res) {
  res.type('text/plain');
  for (let i = 1; i <= 5; i++) {
    res.write(`tick ${i}\n`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  res.end('done\n');
}
