"""The permission catalog: getPermissionCatalog."""
from api.envelope import ok
from models.permissions import CATALOG, ROLES, ordered


def get_permission_catalog():
    return ok({
        "permissions": list(CATALOG),
        "roles": [{"name": name, "permissions": ordered(permissions)} for name, permissions in ROLES.items()],
    })
