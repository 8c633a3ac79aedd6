"""The permission catalog: getPermissionCatalog."""
from api.envelope import ok
from models.identity.permissions import CATALOG, ROLES, ordered

# The catalog changes only with a release: shaped once.
_CATALOG = {
    "permissions": list(CATALOG),
    "roles": [{"name": name, "permissions": ordered(permissions)} for name, permissions in ROLES.items()],
}


def get_permission_catalog():
    return ok(_CATALOG)
