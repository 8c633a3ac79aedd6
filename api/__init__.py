"""The management API's web layer: the app, its middleware, and the cross-cutting concerns."""
import warnings

# connexion imports starlette's test client at import time, which with this Starlette warns that
# httpx is deprecated there; a server we start must not greet its operator with that.
warnings.filterwarnings("ignore", message=r"Using `httpx` with `starlette\.testclient`")
