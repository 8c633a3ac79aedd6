"""The management API's web layer: the app, its middleware, and the cross-cutting concerns."""
