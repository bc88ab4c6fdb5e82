// users-route.js: route patterns fill req.params.
// Give the function the routes ["/users/:userId", "/users/:userId/posts/:postId"], then call
// <invocation url>/users/42 or <invocation url>/users/42/posts/7.
export function handler(req, res) {
  const { userId, postId } = req.params;
  if (userId === undefined) return res.status(404).json({ error: 'not_found', message: `no route for ${req.path}` });
  res.json({ userId, postId: postId ?? null, fields: req.query.fields ?? null });
}
