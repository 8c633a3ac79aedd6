"""A solution's change to an agent's configuration: one JSON pointer (RFC 6901) and the value it
takes, ``{path, oldValue, newValue, diff}``.

A change replaces the value at ``path`` (or adds a property missing from an object); the
configuration it makes must pass the agent's schema (models.configs.schemas.complete). ``oldValue``
is what the path held in the configuration the change was proposed against: accepting it later
checks that the agent's head still holds it. ``diff`` is for people: a unified diff of the text
for a string, of the JSON (indented, keys sorted) for anything else.
"""
from __future__ import annotations

import copy
import difflib
import json

from models.configs import schemas
from models.kernel.errors import InvalidInput

PATH_MAX_CHARS = 500
_ABSENT = object()


def tokens(path) -> list[str]:
    """The reference tokens of a JSON pointer; InvalidInput unless it is one ("/prompt")."""
    if not isinstance(path, str) or not path.startswith("/") or len(path) > PATH_MAX_CHARS:
        raise InvalidInput(f"path must be a JSON pointer such as /prompt, at most {PATH_MAX_CHARS} characters.")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _parent_and_key(config: dict, path: str):
    parts = tokens(path)
    node = config
    for depth, token in enumerate(parts[:-1]):
        node = _child(node, token, "/" + "/".join(parts[:depth + 1]))
        if node is _ABSENT:
            raise InvalidInput(f"path {path}: {'/' + '/'.join(parts[:depth + 1])} is not in the configuration.")
    return node, parts[-1]


def _child(node, token: str, where: str):
    if isinstance(node, dict):
        return node.get(token, _ABSENT)
    if isinstance(node, list):
        if not token.isdigit() or (token != "0" and token.startswith("0")) or int(token) >= len(node):
            return _ABSENT
        return node[int(token)]
    return _ABSENT


def value_at(config: dict, path: str):
    """The value at ``path`` (None where an object lacks the property); InvalidInput if the path
    leads nowhere."""
    parent, key = _parent_and_key(config, path)
    if isinstance(parent, dict):
        return copy.deepcopy(parent.get(key))
    found = _child(parent, key, path)
    if found is _ABSENT:
        raise InvalidInput(f"path {path} is not in the configuration.")
    return copy.deepcopy(found)


def applied(config: dict, path: str, new_value) -> dict:
    """A copy of ``config`` with ``new_value`` at ``path``, complete and checked against the agent's
    schema; InvalidInput naming the problem otherwise."""
    result = copy.deepcopy(config)
    parent, key = _parent_and_key(result, path)
    if isinstance(parent, dict):
        parent[key] = copy.deepcopy(new_value)
    elif _child(parent, key, path) is not _ABSENT:
        parent[int(key)] = copy.deepcopy(new_value)
    else:
        raise InvalidInput(f"path {path} is not in the configuration.")
    return schemas.complete("agent", result)


def diff_text(path: str, old, new) -> str:
    if isinstance(old, str) and isinstance(new, str):
        before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    else:
        before = (json.dumps(old, indent=2, sort_keys=True, ensure_ascii=False) + "\n").splitlines(keepends=True)
        after = (json.dumps(new, indent=2, sort_keys=True, ensure_ascii=False) + "\n").splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, fromfile=f"a{path}", tofile=f"b{path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def propose(config: dict, path: str, new_value) -> dict:
    """The change ``{path, oldValue, newValue, diff}`` setting ``path`` of ``config`` to
    ``new_value``; InvalidInput if the path leads nowhere, the value changes nothing, or the
    configuration it makes is not a valid agent's."""
    old_value = value_at(config, path)
    if old_value == new_value:
        raise InvalidInput(f"newValue is what {path} holds already: the change changes nothing.")
    applied(config, path, new_value)
    return {"path": path, "oldValue": old_value, "newValue": new_value, "diff": diff_text(path, old_value, new_value)}
