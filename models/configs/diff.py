"""What changed between two configurations, how much, and how a branch's changes join the main line.

A configuration is a JSON document: dicts with string keys, lists, strings, numbers, booleans and
null. Nothing here touches the database; every function is pure and never mutates its inputs.

``diff(old, new)`` lists changes as ``Change`` objects whose paths are RFC 6901 JSON pointers
(``/tools/0/name``; a key's "~" is written "~0" and its "/" "~1"; "" is the whole document).

- Dicts are compared key by key, recursively: the keys of ``old`` in their order, then the keys
  only ``new`` has. A key only one side has is one ``add`` or ``remove`` of its whole value.
- Lists are compared index by index: the common indexes recursively, then an ``add`` for each
  index past the old end (lowest first) or a ``remove`` for each index past the new end (highest
  first). Index-wise, not a longest-common-subsequence alignment, because a path must name the
  same slot in the old document, the new one and the other side of a merge: an alignment would
  renumber every element after an insertion, and a merge could no longer tell "both sides edited
  tool 3" from "one side inserted a tool". The price: inserting at the front of a list reads as
  a replace of every element plus an add at the end. The order also makes the list, read top to
  bottom, a valid RFC 6902 patch from ``old`` to ``new``: removals from the end never move an
  index a later change names.
- Anything else (two scalars, or two values of different kinds) is a leaf: equal, or one
  ``replace``. Kinds are dict, list, string, number, boolean and null; ``True`` and ``1`` are
  different kinds (Python calls them equal, JSON does not), ``1`` and ``1.0`` are the same number.

``summary(changes)`` says how much changed per top-level section, counting leaves: a scalar is
one leaf, a container counts the leaves inside it, and an empty container counts as one leaf
(adding ``{}`` is still a change someone made). A replace counts the larger of its two sides.

``merge(base, main, branch)`` is three-way: the branch's changes since ``base`` are applied onto
``main``. Two changes meet when one's path equals or is a prefix of the other's; where they meet
(at the shorter path), the sides conflict unless ``main`` and ``branch`` hold the same value
there, so both sides making the same change is no conflict. A conflict is decided for its whole
subtree: the chosen side's value at the meeting point, never a mix of the two. Because lists are
index-wise, both sides appending different elements conflict at the first new index; an element
the branch adds past the end of main's (shorter) list is appended.
"""
from __future__ import annotations

import copy
import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ABSENT", "Change", "MergeConflict", "diff", "merge", "parts", "pointer", "summary"]

Op = Literal["add", "remove", "replace"]
Path = tuple[str, ...]


class _Absent(enum.Enum):
    # An enum member, so that it survives copy.deepcopy and pickling as the same object.
    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent.ABSENT
"""The value a side does not have: null is a value a configuration may hold, so None cannot be it."""


@dataclass(frozen=True)
class Change:
    """One change at ``path``: ``old_value`` is ABSENT for an add, ``new_value`` for a remove."""
    op: Op
    path: str
    old_value: Any = ABSENT
    new_value: Any = ABSENT

    def __post_init__(self):
        wanted = {"add": (False, True), "remove": (True, False), "replace": (True, True)}.get(self.op)
        if wanted is None:
            raise ValueError(f"unknown change op {self.op!r}")
        if wanted != (self.old_value is not ABSENT, self.new_value is not ABSENT):
            raise ValueError(f"a {self.op} at {self.path!r} has the wrong values for its op")

    def as_wire(self) -> dict:
        """The API's Change object: camelCase, with the absent value left out (not null)."""
        wire = {"op": self.op, "path": self.path}
        if self.old_value is not ABSENT:
            wire["oldValue"] = self.old_value
        if self.new_value is not ABSENT:
            wire["newValue"] = self.new_value
        return wire


class MergeConflict(Exception):
    """Both sides changed the same place differently and no resolution chose one.

    ``conflicts`` is [{path, baseValue, mainValue, branchValue}], a side without the value
    reporting None, as the 409 response carries it."""

    def __init__(self, conflicts: list[dict]):
        self.conflicts = conflicts
        paths = ", ".join(repr(conflict["path"]) for conflict in conflicts)
        super().__init__(f"{len(conflicts)} conflicting path(s): {paths}")


# --- JSON pointers --------------------------------------------------------------------------

_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE = re.compile(r"~(?![01])")


def pointer(keys: Iterable[str | int]) -> str:
    """The RFC 6901 pointer to ``keys`` (list indexes may be ints)."""
    # "~" first, or the "~" of a freshly written "~1" would be escaped again.
    return "".join("/" + str(key).replace("~", "~0").replace("/", "~1") for key in keys)


def parts(path: str) -> list[str]:
    """The keys an RFC 6901 pointer names, unescaped; "" (the whole document) names none."""
    if path == "":
        return []
    if not path.startswith("/") or _BAD_ESCAPE.search(path):
        raise ValueError(f"{path!r} is not a JSON pointer")
    # "~1" first, or "~01" (a key "~1") would come out as "/".
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _index(key: str) -> int | None:
    return int(key) if _INDEX.fullmatch(key) else None


# --- diff -------------------------------------------------------------------------------------

def diff(old: Any, new: Any) -> list[Change]:
    """The changes that turn ``old`` into ``new``; [] when they are the same document."""
    return list(_diff(old, new, ()))


def _diff(old: Any, new: Any, at: Path) -> Iterator[Change]:
    if isinstance(old, dict) and isinstance(new, dict):
        yield from _diff_dicts(old, new, at)
    elif isinstance(old, list) and isinstance(new, list):
        yield from _diff_lists(old, new, at)
    elif not _same(old, new):
        yield Change("replace", pointer(at), old, new)


def _diff_dicts(old: dict, new: dict, at: Path) -> Iterator[Change]:
    for key, value in old.items():
        if key in new:
            yield from _diff(value, new[key], at + (key,))
        else:
            yield Change("remove", pointer(at + (key,)), old_value=value)
    for key, value in new.items():
        if key not in old:
            yield Change("add", pointer(at + (key,)), new_value=value)


def _diff_lists(old: list, new: list, at: Path) -> Iterator[Change]:
    for index, (before, after) in enumerate(zip(old, new)):
        yield from _diff(before, after, at + (str(index),))
    for index in range(len(old), len(new)):
        yield Change("add", pointer(at + (str(index),)), new_value=new[index])
    for index in reversed(range(len(new), len(old))):
        yield Change("remove", pointer(at + (str(index),)), old_value=old[index])


def _kind(value: Any) -> type:
    # bool is a subclass of int, so it is asked first; int and float are one JSON number.
    if isinstance(value, bool):
        return bool
    if isinstance(value, (int, float)):
        return float
    return type(value)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: Python's == would call [True] and [1] equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return _kind(a) is _kind(b) and a == b


# --- summary ----------------------------------------------------------------------------------

def summary(changes: Iterable[Change]) -> list[dict]:
    """[{section, count}] sorted by section: the top-level key ("" for the root) and the leaves changed."""
    counts: dict[str, int] = {}
    for change in changes:
        keys = parts(change.path)
        section = keys[0] if keys else ""
        counts[section] = counts.get(section, 0) + _weight(change)
    return [{"section": section, "count": counts[section]} for section in sorted(counts)]


def _weight(change: Change) -> int:
    return max(_leaves(value) for value in (change.old_value, change.new_value) if value is not ABSENT)


def _leaves(value: Any) -> int:
    if isinstance(value, dict) and value:
        return sum(map(_leaves, value.values()))
    if isinstance(value, list) and value:
        return sum(map(_leaves, value))
    return 1


# --- merge ------------------------------------------------------------------------------------

def merge(base: Any, main: Any, branch: Any, resolutions: Mapping[str, str] | None = None) -> Any:
    """``main`` with the changes ``branch`` made since ``base``, as a new document.

    ``resolutions`` ({path: "main" | "branch"}) decides conflicts: "main" keeps main's value at the
    path, "branch" takes the branch's (the whole subtree, either way). Raises MergeConflict for
    conflicts left undecided, and ValueError for a resolution at a path that is not a conflict."""
    main_changes, branch_changes = diff(base, main), diff(base, branch)
    meeting = _meeting_points(main_changes, branch_changes)
    conflicts = [path for path in meeting if not _same(_lookup(main, path), _lookup(branch, path))]
    chosen = _checked(resolutions or {}, conflicts)
    undecided = [path for path in conflicts if pointer(path) not in chosen]
    if undecided:
        raise MergeConflict([_conflict(path, base, main, branch) for path in undecided])
    # Where the sides meet, the branch's own changes give way to the decision at the meeting point
    # (or to main, when both sides hold the same value there).
    meeting_set = set(meeting)
    changes = [change for change in branch_changes if not _below_any(_path(change), meeting_set)]
    changes += [_take_branch(path, main, branch) for path in conflicts if chosen[pointer(path)] == "branch"]
    return _apply_all(copy.deepcopy(main), changes)


def _path(change: Change) -> Path:
    return tuple(parts(change.path))


def _meeting_points(main_changes: list[Change], branch_changes: list[Change]) -> list[Path]:
    """The shorter path of every main/branch pair where one path equals or is a prefix of the other.

    A diff's paths never nest, so no two meeting points nest either: a main path has at most one
    branch path above it, and the other way round."""
    branch_paths = {_path(change) for change in branch_changes}
    at_or_above_branch = {path[:end] for path in branch_paths for end in range(len(path) + 1)}
    points: dict[Path, None] = {}  # a dict keeps main's document order and drops repeats
    for change in main_changes:
        path = _path(change)
        if path in at_or_above_branch:
            points[path] = None
            continue
        above = [path[:end] for end in range(len(path)) if path[:end] in branch_paths]
        if above:
            points[above[0]] = None
    return list(points)


def _below_any(path: Path, points: set[Path]) -> bool:
    return any(path[:end] in points for end in range(len(path) + 1))


def _checked(resolutions: Mapping[str, str], conflicts: list[Path]) -> Mapping[str, str]:
    conflicting = {pointer(path) for path in conflicts}
    stray = [path for path in resolutions if path not in conflicting]
    if stray:
        raise ValueError(f"no conflict to resolve at {', '.join(map(repr, stray))}")
    wrong = [path for path, side in resolutions.items() if side not in ("main", "branch")]
    if wrong:
        raise ValueError(f"the resolution at {', '.join(map(repr, wrong))} must be 'main' or 'branch'")
    return resolutions


def _lookup(document: Any, path: Path) -> Any:
    """The value at ``path``, or ABSENT when the document has no such place."""
    for key in path:
        if isinstance(document, dict) and key in document:
            document = document[key]
        elif isinstance(document, list) and (index := _index(key)) is not None and index < len(document):
            document = document[index]
        else:
            return ABSENT
    return document


def _conflict(path: Path, base: Any, main: Any, branch: Any) -> dict:
    def value(document):
        found = _lookup(document, path)
        return None if found is ABSENT else copy.deepcopy(found)
    return {"path": pointer(path), "baseValue": value(base), "mainValue": value(main),
            "branchValue": value(branch)}


def _take_branch(path: Path, main: Any, branch: Any) -> Change:
    """The change that puts the branch's value (or its absence) at ``path`` in main's document."""
    ours, theirs = _lookup(main, path), _lookup(branch, path)
    if ours is ABSENT:
        return Change("add", pointer(path), new_value=theirs)
    if theirs is ABSENT:
        return Change("remove", pointer(path), old_value=ours)
    return Change("replace", pointer(path), ours, theirs)


def _apply_all(document: Any, changes: list[Change]) -> Any:
    # Replaces never change a list's length, so they go first, at the indexes their paths name.
    # Removals then go from the highest index down so each leaves the lower indexes in place, and
    # additions from the lowest up so each finds the list as long as its index needs.
    ordered = [change for change in changes if change.op == "replace"]
    ordered += sorted((c for c in changes if c.op == "remove"), key=_order, reverse=True)
    ordered += sorted((c for c in changes if c.op == "add"), key=_order)
    for change in ordered:
        document = _apply(document, change)
    return document


def _order(change: Change) -> tuple:
    # List indexes compare as numbers ("10" after "9"); keys of one dict need no particular order.
    return tuple((0, index, "") if (index := _index(key)) is not None else (1, 0, key)
                 for key in _path(change))


def _apply(document: Any, change: Change) -> Any:
    """``document`` with ``change`` made in place, or the new document when the change is the root."""
    keys = _path(change)
    if not keys:
        if change.op == "remove":
            raise ValueError("the whole document cannot be removed")
        return copy.deepcopy(change.new_value)
    *above, key = keys
    container = document
    for step in above:
        container = container[int(step)] if isinstance(container, list) else container[step]
    value = copy.deepcopy(change.new_value)
    if isinstance(container, list):
        _apply_to_list(container, int(key), change.op, value)
    elif change.op == "remove":
        del container[key]
    else:
        container[key] = value
    return document


def _apply_to_list(items: list, index: int, op: Op, value: Any) -> None:
    if op == "remove":
        del items[index]
    elif op == "replace":
        items[index] = value
    else:
        # Past the end (main's list is shorter than the branch's was) list.insert appends.
        items.insert(index, value)
