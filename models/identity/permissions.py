"""The permission catalog and the built-in roles: the only place that spells a permission string."""
from __future__ import annotations

_GROUPS: dict[str, tuple[str, ...]] = {
    "agents": ("read", "write", "delete", "sync", "test", "resolve"),
    "workflows": ("read", "write", "delete", "sync", "test"),
    "calls": (
        "read", "write", "delete", "import", "export", "recording-download", "metrics-read",
        "web-token", "chat-message", "cdr-read", "pii", "share", "register", "recording-upload",
        "transfer", "resume", "status-read", "webhook-payload",
    ),
    "campaign": ("read", "write", "delete", "execute", "resolve-contact"),
    "bes": ("read", "write"),
    "feedbacks": ("read", "write", "delete", "comment", "assign", "config"),
    "reviews": ("read", "write", "delete", "assign"),
    "insights": ("read", "write", "delete", "assign"),
    "assertions": ("read", "write", "delete", "assign"),
    "personas": ("read", "write", "delete"),
    "simulations": ("read", "write", "delete", "execute", "verdict-callback"),
    "solutions": ("read", "write", "delete", "generate", "accept"),
    "kb": ("read", "write", "delete", "upload", "sync", "articles-write"),
    "phone-numbers": ("read", "write", "delete", "import"),
    "phone-aliases": ("read", "write", "delete"),
    "suppression-list": ("read", "write", "delete"),
    "integrations": ("read", "write", "delete", "webhook"),
    "analytics": ("read", "widgets-write", "widgets-delete"),
    "api-keys": ("read", "write", "delete", "manage-others"),
    "members": ("read", "invite", "remove", "role-change", "mfa-reset"),
    "roles": ("read", "write", "delete"),
    "billing": ("read", "manage"),
    "workspace": ("read", "settings-write", "delete", "logs-read"),
    "versions": ("read", "publish"),
    "models": ("read",),
    "inbound": ("write",),
    "chat": ("read",),
    "custom": ("abbreviations-read", "abbreviations-write"),
    "speech-filter": ("preview",),
    "retention": ("purge",),
    # Added to the catalog the platform has always published, which names none for the speech
    # server: both of its transcription endpoints need it. Members and above hold it; viewers, who
    # only read, do not.
    "speech": ("transcribe",),
}

#: Every permission, in catalog order (the order responses list them in).
CATALOG: tuple[str, ...] = tuple(f"{group}:{action}" for group, actions in _GROUPS.items() for action in actions)
_POSITION = {permission: i for i, permission in enumerate(CATALOG)}

# What only the people who run a workspace may do: its membership, roles, money and data retention.
_ADMIN_ONLY = frozenset({
    "api-keys:manage-others", "members:invite", "members:remove", "members:role-change",
    "members:mfa-reset", "roles:write", "roles:delete", "billing:manage", "workspace:settings-write",
    "workspace:delete", "workspace:logs-read", "retention:purge", "calls:pii",
})
_OWNER_ONLY = frozenset({"workspace:delete", "billing:manage"})

ROLES: dict[str, frozenset[str]] = {
    "owner": frozenset(CATALOG),
    "admin": frozenset(CATALOG) - _OWNER_ONLY,
    "member": frozenset(CATALOG) - _ADMIN_ONLY,
    "viewer": frozenset(p for p in CATALOG if p.endswith("read") and p not in _ADMIN_ONLY),
}


def ordered(permissions) -> list[str]:
    """The given permissions in catalog order, without duplicates."""
    return sorted(set(permissions), key=_POSITION.__getitem__)


def unknown(permissions) -> list[str]:
    return [p for p in permissions if p not in _POSITION]


def role_permissions(role: str) -> frozenset[str]:
    return ROLES.get(role, frozenset())
