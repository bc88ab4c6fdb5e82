// echo.js: answers with what the handler sees of the request.
// Shows the `req` contract: method, path, query, params, headers, body, cookies, ip, protocol.
export default function handler(req, res) {
  res.json({
    method: req.method,
    path: req.path,
    query: req.query, // ?a=1&a=2 → { a: ['1', '2'] }
    params: req.params, // {} unless a route pattern matched
    headers: req.headers, // every header, Authorization included
    body: req.body, // parsed JSON, text for text/*, Buffer otherwise, undefined when empty
    cookies: req.cookies,
    ip: req.ip,
    protocol: req.protocol,
  });
}
