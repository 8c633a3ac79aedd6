"""Configuration diffs, their per-section summary, and three-way merges of a branch onto the main line."""
from __future__ import annotations

import copy

import pytest

from models.configs.diff import ABSENT, Change, MergeConflict, diff, merge, parts, pointer, summary


def wire(changes):
    return [change.as_wire() for change in changes]


def typed(value):
    """``value`` with its booleans tagged, so that == tells True from 1 as JSON does."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return value


def apply_patch(document, changes):
    """A plain RFC 6902 applier (add/remove/replace), one change after the other."""
    document = copy.deepcopy(document)
    for change in changes:
        keys = parts(change.path)
        if not keys:
            document = copy.deepcopy(change.new_value)
            continue
        container = document
        for key in keys[:-1]:
            container = container[int(key) if isinstance(container, list) else key]
        key = int(keys[-1]) if isinstance(container, list) else keys[-1]
        if change.op == "remove":
            del container[key]
        elif change.op == "add" and isinstance(container, list):
            assert key <= len(container), f"{change.path} is past the end"
            container.insert(key, copy.deepcopy(change.new_value))
        else:
            container[key] = copy.deepcopy(change.new_value)
    return document


AGENT = {
    "prompt": "You are a helpful voice assistant.",
    "voice": {"provider": "default", "voiceId": "alloy"},
    "model": {"provider": "openai", "name": "gpt-4o-mini", "temperature": 0.7, "maxTokens": 1024},
    "tools": [
        {"name": "lookup", "description": "Find an order", "parameters": {"type": "object"}},
        {"name": "refund", "description": "Refund an order", "parameters": {}},
    ],
    "endCallPhrases": ["bye", "goodbye"],
    "metadata": {},
}


# --- pointers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("keys, path", [
    ([], ""),
    (["tools", 0, "name"], "/tools/0/name"),
    (["a/b"], "/a~1b"),
    (["a~b"], "/a~0b"),
    (["~1"], "/~01"),
    (["/~"], "/~1~0"),
    ([""], "/"),
    (["", ""], "//"),
])
def test_pointers_escape_tilde_and_slash(keys, path):
    assert pointer(keys) == path
    assert parts(path) == [str(key) for key in keys]


@pytest.mark.parametrize("path", ["tools", "/a~2", "/a~", "~0"])
def test_a_malformed_pointer_is_refused(path):
    with pytest.raises(ValueError, match="not a JSON pointer"):
        parts(path)


# --- Change -------------------------------------------------------------------------------------

def test_the_wire_form_leaves_out_the_absent_value_but_keeps_null():
    assert Change("add", "/a", new_value=None).as_wire() == {"op": "add", "path": "/a", "newValue": None}
    assert Change("remove", "/a", old_value=None).as_wire() == {"op": "remove", "path": "/a", "oldValue": None}
    assert Change("replace", "/a", None, 2).as_wire() == {
        "op": "replace", "path": "/a", "oldValue": None, "newValue": 2}


@pytest.mark.parametrize("op, old, new", [
    ("add", 1, 2), ("add", ABSENT, ABSENT), ("remove", ABSENT, 1), ("replace", ABSENT, 1), ("move", 1, 2)])
def test_a_change_must_carry_the_values_its_op_needs(op, old, new):
    with pytest.raises(ValueError):
        Change(op, "/a", old, new)


# --- diff ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("document", [{}, [], None, 0, "", AGENT, {"a": [1, {"b": [True, None]}]}])
def test_a_document_has_no_changes_from_itself(document):
    assert diff(document, copy.deepcopy(document)) == []


def test_key_order_is_not_a_change():
    assert diff({"a": 1, "b": 2}, {"b": 2, "a": 1}) == []


def test_nested_dict_changes_name_each_leaf_in_the_old_documents_key_order_then_new_keys():
    old = {"model": {"name": "gpt-4o-mini", "temperature": 0.7, "maxTokens": 1024}, "language": "en", "x": 1}
    new = {"y": 2, "model": {"maxTokens": 2048, "name": "gpt-4o", "temperature": 0.7, "seed": 7}, "language": "en"}
    assert wire(diff(old, new)) == [
        {"op": "replace", "path": "/model/name", "oldValue": "gpt-4o-mini", "newValue": "gpt-4o"},
        {"op": "replace", "path": "/model/maxTokens", "oldValue": 1024, "newValue": 2048},
        {"op": "add", "path": "/model/seed", "newValue": 7},
        {"op": "remove", "path": "/x", "oldValue": 1},
        {"op": "add", "path": "/y", "newValue": 2},
    ]


def test_booleans_and_numbers_differ_but_ints_and_floats_do_not():
    assert wire(diff({"a": 1, "b": [0]}, {"a": True, "b": [False]})) == [
        {"op": "replace", "path": "/a", "oldValue": 1, "newValue": True},
        {"op": "replace", "path": "/b/0", "oldValue": 0, "newValue": False},
    ]
    assert diff({"a": 1, "b": [2]}, {"a": 1.0, "b": [2.0]}) == []
    assert wire(diff([None], [0])) == [{"op": "replace", "path": "/0", "oldValue": None, "newValue": 0}]
    assert wire(diff({"a": "1"}, {"a": 1})) == [{"op": "replace", "path": "/a", "oldValue": "1", "newValue": 1}]


def test_a_boolean_deep_inside_a_replaced_leaf_still_counts():
    # {"x": [True]} == {"x": [1]} in Python; a scalar-vs-container replace must not hide behind it.
    assert wire(diff({"a": {"x": [True]}}, {"a": {"x": [1]}})) == [
        {"op": "replace", "path": "/a/x/0", "oldValue": True, "newValue": 1}]


def test_list_elements_are_compared_by_index():
    old = {"tools": [{"name": "lookup"}, {"name": "refund"}]}
    new = {"tools": [{"name": "lookup"}, {"name": "refunds"}]}
    assert wire(diff(old, new)) == [
        {"op": "replace", "path": "/tools/1/name", "oldValue": "refund", "newValue": "refunds"}]


def test_a_longer_list_adds_each_new_index_lowest_first():
    assert wire(diff({"p": ["a"]}, {"p": ["a", "b", {"c": 1}]})) == [
        {"op": "add", "path": "/p/1", "newValue": "b"},
        {"op": "add", "path": "/p/2", "newValue": {"c": 1}},
    ]


def test_a_shorter_list_removes_each_old_index_highest_first():
    assert wire(diff({"p": ["a", "b", "c", "d"]}, {"p": ["x", "b"]})) == [
        {"op": "replace", "path": "/p/0", "oldValue": "a", "newValue": "x"},
        {"op": "remove", "path": "/p/3", "oldValue": "d"},
        {"op": "remove", "path": "/p/2", "oldValue": "c"},
    ]


def test_an_element_that_changes_type_is_one_replace():
    assert wire(diff([{"a": 1}, [1], "s"], [[1], {"a": 1}, None])) == [
        {"op": "replace", "path": "/0", "oldValue": {"a": 1}, "newValue": [1]},
        {"op": "replace", "path": "/1", "oldValue": [1], "newValue": {"a": 1}},
        {"op": "replace", "path": "/2", "oldValue": "s", "newValue": None},
    ]


def test_added_and_removed_subtrees_are_one_change_each():
    old = {"voice": {"provider": "default", "voiceId": "alloy"}}
    new = {"tools": [{"name": "lookup", "parameters": {"type": "object"}}]}
    assert wire(diff(old, new)) == [
        {"op": "remove", "path": "/voice", "oldValue": {"provider": "default", "voiceId": "alloy"}},
        {"op": "add", "path": "/tools", "newValue": [{"name": "lookup", "parameters": {"type": "object"}}]},
    ]


def test_keys_with_slash_and_tilde_are_escaped():
    assert wire(diff({"metadata": {"a/b": 1, "a~b": 2}}, {"metadata": {"a/b": 3, "~/": 4}})) == [
        {"op": "replace", "path": "/metadata/a~1b", "oldValue": 1, "newValue": 3},
        {"op": "remove", "path": "/metadata/a~0b", "oldValue": 2},
        {"op": "add", "path": "/metadata/~0~1", "newValue": 4},
    ]


def test_a_root_of_another_kind_is_one_replace_of_the_whole_document():
    assert wire(diff({"a": 1}, [1])) == [{"op": "replace", "path": "", "oldValue": {"a": 1}, "newValue": [1]}]


PAIRS = [
    (AGENT, {**AGENT, "prompt": "Be brief.", "tools": AGENT["tools"][:1], "endCallPhrases": ["bye", "ciao", "adieu"]}),
    (AGENT, {**AGENT, "model": {**AGENT["model"], "temperature": 1}, "metadata": {"a/b": {"~": [1, 2]}}}),
    (AGENT, {"prompt": AGENT["prompt"]}),
    ({}, AGENT),
    ({"a": [1, 2, 3, 4, 5]}, {"a": [5]}),
    ({"a": [1]}, {"a": [[1], [2], {"x": True}, None]}),
    ({"a": [[1, 2, 3], [4, 5, 6]]}, {"a": [[1], [4, 5, 6, 7]]}),
    ({"a": [{"b": [1, 2]}, 3]}, {"a": [{"b": [True]}]}),
    ({"a": {"b": {"c": {}}}}, {"a": {"b": {"c": []}}}),
    ({"a": 1}, {"a": True}),
    ({"a": None}, {"a": {"b": None}}),
    ({"x~/": 1, "": 2}, {"x~/": [1], "": {"": 3}}),
    ([1, 2, 3], {"a": 1}),
    ("text", None),
    ([], [[], {}]),
]


@pytest.mark.parametrize("old, new", PAIRS)
def test_the_changes_read_in_order_are_a_patch_from_old_to_new(old, new):
    assert typed(apply_patch(old, diff(old, new))) == typed(new)


# --- summary ------------------------------------------------------------------------------------

def test_summary_counts_changed_leaves_per_top_level_section_sorted():
    new = copy.deepcopy(AGENT)
    new["model"]["name"] = "gpt-4o"
    new["model"]["temperature"] = 1.2
    new["tools"][1]["description"] = "Refund"
    new["tools"].append({"name": "hangup", "description": "End", "parameters": {"type": "object"}})
    del new["voice"]
    new["endCallPhrases"] = ["bye"]
    assert summary(diff(AGENT, new)) == [
        {"section": "endCallPhrases", "count": 1},
        {"section": "model", "count": 2},
        {"section": "tools", "count": 4},  # a description, then a new tool with three leaves
        {"section": "voice", "count": 2},  # a removed subtree counts its leaves
    ]


def test_an_empty_container_counts_as_one_leaf():
    assert summary(diff({}, {"metadata": {}, "tools": [], "a": {"b": {}, "c": [[], 1]}})) == [
        {"section": "a", "count": 3}, {"section": "metadata", "count": 1}, {"section": "tools", "count": 1}]
    assert summary(diff({"metadata": {"k": {}}}, {"metadata": {}})) == [{"section": "metadata", "count": 1}]


def test_a_replace_counts_the_larger_side():
    changes = diff({"a": 1, "b": {"x": 1, "y": [1, 2]}}, {"a": [1, 2, 3], "b": "flat"})
    assert summary(changes) == [{"section": "a", "count": 3}, {"section": "b", "count": 3}]


def test_a_replace_of_the_root_is_section_empty_and_escaped_keys_are_unescaped():
    assert summary(diff({"a": 1, "b": 2}, [])) == [{"section": "", "count": 2}]
    assert summary(diff({"a/b": 1}, {"a/b": 2})) == [{"section": "a/b", "count": 1}]


def test_summary_of_no_changes_is_empty():
    assert summary([]) == []


# --- merge without conflicts --------------------------------------------------------------------

@pytest.mark.parametrize("old, new", PAIRS)
def test_merging_a_branch_onto_an_unchanged_main_gives_the_branch(old, new):
    assert typed(merge(old, old, new)) == typed(new)


def test_changes_at_different_paths_both_land():
    main = copy.deepcopy(AGENT)
    main["model"]["temperature"] = 0.2
    main["tools"][0]["description"] = "Find an order by number"
    main["metadata"]["team"] = "support"
    branch = copy.deepcopy(AGENT)
    branch["model"]["name"] = "gpt-4o"
    branch["tools"][1]["description"] = "Refund part of an order"
    branch["endCallPhrases"].append("see you")
    del branch["voice"]

    merged = merge(AGENT, main, branch)

    expected = copy.deepcopy(main)
    expected["model"]["name"] = "gpt-4o"
    expected["tools"][1]["description"] = "Refund part of an order"
    expected["endCallPhrases"].append("see you")
    del expected["voice"]
    assert merged == expected


def test_identical_changes_on_both_sides_are_not_a_conflict():
    main = {**AGENT, "prompt": "Be brief.", "tools": AGENT["tools"][:1], "metadata": {"k": True}}
    branch = copy.deepcopy(main)
    branch["language"] = "fr"
    assert merge(AGENT, main, branch) == {**main, "language": "fr"}


def test_a_branch_that_shortened_a_list_removes_from_the_end():
    base = {"p": ["a", "b", "c", "d", "e"]}
    assert merge(base, {"p": ["A", "b", "c", "d", "e"]}, {"p": ["a", "b"]}) == {"p": ["A", "b"]}


def test_a_branch_addition_past_the_end_of_mains_shorter_list_appends():
    base = {"p": ["a", "b", "c"]}
    main = {"p": ["a"]}
    branch = {"p": ["a", "b", "c", "d", "e"]}
    assert merge(base, main, branch) == {"p": ["a", "d", "e"]}


def test_list_indexes_order_as_numbers_when_applied():
    # As strings "10" sorts before "9": the removals would run off the end, the additions land out of order.
    base = {"p": list(range(12))}
    assert merge(base, {"p": [-1] + list(range(1, 12))}, {"p": [0, 1]}) == {"p": [-1, 1]}
    assert merge({"p": [0, 1]}, {"p": [0, 1]}, base) == base


def test_main_appending_and_the_branch_editing_another_element_both_land():
    base = {"p": [{"n": 1}, {"n": 2}]}
    main = {"p": [{"n": 1}, {"n": 2}, {"n": 3}]}
    branch = {"p": [{"n": 10}, {"n": 2}]}
    assert merge(base, main, branch) == {"p": [{"n": 10}, {"n": 2}, {"n": 3}]}


def test_the_same_change_in_more_leaves_on_one_side_than_the_other_is_not_a_conflict():
    # Main replaced the whole model; the branch edited its leaves to the very same object.
    base = {"model": {"name": "a", "temperature": 0.5}}
    main = {"model": {"name": "b", "temperature": 1}}
    branch = {"model": {"name": "b", "temperature": 1.0}}
    assert merge(base, main, branch) == main


# --- conflicts ----------------------------------------------------------------------------------

def conflict_of(base, main, branch):
    with pytest.raises(MergeConflict) as raised:
        merge(base, main, branch)
    return raised.value.conflicts


def test_both_sides_changing_one_leaf_differently_conflict():
    base = {"model": {"temperature": 0.7}}
    main, branch = {"model": {"temperature": 0.2}}, {"model": {"temperature": 1.5}}
    assert conflict_of(base, main, branch) == [
        {"path": "/model/temperature", "baseValue": 0.7, "mainValue": 0.2, "branchValue": 1.5}]
    assert merge(base, main, branch, {"/model/temperature": "main"}) == main
    assert merge(base, main, branch, {"/model/temperature": "branch"}) == branch


def test_true_and_one_are_different_values_for_a_conflict():
    assert conflict_of({"a": 0}, {"a": 1}, {"a": True}) == [
        {"path": "/a", "baseValue": 0, "mainValue": 1, "branchValue": True}]


@pytest.mark.parametrize("parent_side", ["main", "branch"])
@pytest.mark.parametrize("parent_metadata", [{}, {"crm": ["eu"]}], ids=["removed", "retyped"])
def test_a_parent_changed_on_one_side_and_a_child_on_the_other_conflict_at_the_parent(parent_side, parent_metadata):
    # Dicts diff key by key, so a parent is changed as a whole only when it goes or changes kind.
    base = {"metadata": {"crm": {"id": 1, "region": "eu"}}, "language": "en"}
    parent = {"metadata": parent_metadata, "language": "en"}
    child = {"metadata": {"crm": {"id": 1, "region": "us"}}, "language": "de"}
    main, branch = (parent, child) if parent_side == "main" else (child, parent)

    def crm(document):
        return document["metadata"].get("crm")

    assert conflict_of(base, main, branch) == [
        {"path": "/metadata/crm", "baseValue": crm(base), "mainValue": crm(main), "branchValue": crm(branch)}]
    # Either way the whole subtree at the conflict comes from the chosen side, the rest merges.
    assert merge(base, main, branch, {"/metadata/crm": "main"}) == {"metadata": main["metadata"], "language": "de"}
    assert merge(base, main, branch, {"/metadata/crm": "branch"}) == {"metadata": branch["metadata"], "language": "de"}


@pytest.mark.parametrize("remover", ["main", "branch"])
def test_a_removed_element_against_an_edited_one_reports_the_absent_side_as_null(remover):
    base = {"tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}
    removed = {"tools": [{"name": "a"}]}
    edited = {"tools": [{"name": "a"}, {"name": "b"}, {"name": "C"}]}
    main, branch = (removed, edited) if remover == "main" else (edited, removed)

    assert conflict_of(base, main, branch) == [{
        "path": "/tools/2", "baseValue": {"name": "c"},
        "mainValue": None if remover == "main" else {"name": "C"},
        "branchValue": None if remover == "branch" else {"name": "C"}}]
    # /tools/1 was removed by one side only: it goes, whatever the decision at /tools/2.
    assert merge(base, main, branch, {"/tools/2": "main"}) == {"tools": [{"name": "a"}] + main["tools"][2:]}
    assert merge(base, main, branch, {"/tools/2": "branch"}) == {"tools": [{"name": "a"}] + branch["tools"][2:]}


def test_both_sides_appending_different_elements_at_one_index_conflict():
    base, main, branch = {"p": ["a"]}, {"p": ["a", "m"]}, {"p": ["a", "b", "c"]}
    assert conflict_of(base, main, branch) == [
        {"path": "/p/1", "baseValue": None, "mainValue": "m", "branchValue": "b"}]
    assert merge(base, main, branch, {"/p/1": "main"}) == {"p": ["a", "m", "c"]}
    assert merge(base, main, branch, {"/p/1": "branch"}) == {"p": ["a", "b", "c"]}


def test_every_undecided_conflict_is_reported_and_decided_ones_are_not():
    base = {"a": 1, "b": 1, "c": 1}
    main = {"a": 2, "b": 2, "c": 2}
    branch = {"a": 3, "b": 3, "c": 1}
    with pytest.raises(MergeConflict) as raised:
        merge(base, main, branch, {"/a": "branch"})
    assert raised.value.conflicts == [{"path": "/b", "baseValue": 1, "mainValue": 2, "branchValue": 3}]
    assert "'/b'" in str(raised.value)
    assert merge(base, main, branch, {"/a": "branch", "/b": "main"}) == {"a": 3, "b": 2, "c": 2}


def test_a_conflict_at_the_root_is_resolved_with_the_whole_document():
    base, main, branch = {"a": 1}, [1], {"a": 2}
    assert conflict_of(base, main, branch) == [
        {"path": "", "baseValue": base, "mainValue": main, "branchValue": branch}]
    assert merge(base, main, branch, {"": "main"}) == main
    assert merge(base, main, branch, {"": "branch"}) == branch


@pytest.mark.parametrize("path", ["/b", "/a/x", "/nowhere", "/c"])
def test_a_resolution_for_a_path_that_does_not_conflict_is_refused_by_name(path):
    # /c is changed identically on both sides, /b by the branch only, /a/x lies under the conflict.
    base, main, branch = {"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 1, "c": 5}, {"a": 3, "b": 2, "c": 5}
    with pytest.raises(ValueError, match=f"no conflict to resolve at '{path}'"):
        merge(base, main, branch, {"/a": "main", path: "branch"})


def test_a_resolution_must_name_a_side():
    with pytest.raises(ValueError, match="'/a' must be 'main' or 'branch'"):
        merge({"a": 1}, {"a": 2}, {"a": 3}, {"/a": "theirs"})


def test_merge_never_changes_its_inputs_nor_shares_objects_with_them():
    base = {"tools": [{"name": "a", "p": {"x": [1]}}, {"name": "b"}], "metadata": {"k": {"v": 1}}}
    main = {"tools": [{"name": "a", "p": {"x": [1, 2]}}], "metadata": {"k": {"v": 2}}}
    branch = {"tools": [{"name": "a", "p": {"x": [1]}}, {"name": "b"}, {"name": "c", "p": {"y": []}}],
              "metadata": {"k": {"v": 3}}, "extra": {"deep": [{}]}}
    copies = copy.deepcopy((base, main, branch))

    merged = merge(base, main, branch, {"/metadata/k/v": "branch"})
    assert merged == {"tools": [{"name": "a", "p": {"x": [1, 2]}}, {"name": "c", "p": {"y": []}}],
                      "metadata": {"k": {"v": 3}}, "extra": {"deep": [{}]}}
    merged["tools"][0]["p"]["x"].append(99)
    merged["tools"][1]["p"]["y"].append(99)
    merged["extra"]["deep"][0]["z"] = 1
    assert (base, main, branch) == copies

    with pytest.raises(MergeConflict) as raised:
        merge(base, main, branch)
    raised.value.conflicts[0]["mainValue"] = "changed"
    assert (base, main, branch) == copies
