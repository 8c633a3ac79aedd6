"""Version numbers under concurrency: ``versionNumber`` counts 1, 2, 3... per entity, branch commits
included, with no gap and no duplicate however many threads and processes save at once (issue 11;
models.configs.versioning explains how: every write updates the entity's row first). Also what the same
row lock must keep true: one published version per entity, and no workflow left naming an agent
deleted under it.

Threads run in one process (each in its own ``session()``, as handler threads do); processes are
started with multiprocessing's spawn, as tests/models/test_rate_limits.py does, each with threads
of its own and its own connections. Every test runs on SQLite and, with TEST_DATABASE_URL set, on a
scratch PostgreSQL database (the ``database_url`` fixture skips it otherwise).
"""
from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from models.configs import branches, entities, versioning
from models.configs.schemas import agent_ids
from models.configs.tables import OPEN, Agent, Branch, Version, Workflow
from models.identity.permissions import ROLES
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, open_database, session
from models.kernel.errors import Conflict, InvalidInput
from tests.support import factories
from tests.support.threads import run_processes, run_threads


def principal(workspace_id: str, user_id: str) -> Principal:
    return Principal("test", "access_token", user_id, workspace_id, frozenset(ROLES["owner"]))


def save_and_commit(workspace_id: str, user_id: str, agent_id: str, branch_ids: list[str], worker: int,
                    saves: int, commit_every: int) -> list[int]:
    """``saves`` configurations of the agent, each its own; after every ``commit_every``-th save a
    commit to one of the branches. The numbers the domain handed out, in order."""
    who = principal(workspace_id, user_id)
    numbers = []
    with session():
        for i in range(saves):
            _, version = entities.update(Agent, who, workspace_id=workspace_id, entity_id=agent_id,
                                         config={"prompt": f"Worker {worker}, save {i}."})
            assert version is not None, "a configuration unlike the head's made no version"
            numbers.append(version.version_number)
            if branch_ids and i % commit_every == 0:
                _, version = branches.commit(Agent, who, workspace_id=workspace_id, entity_id=agent_id,
                                             branch_id=branch_ids[(worker + i) % len(branch_ids)],
                                             config={"prompt": f"Worker {worker}, branch commit {i}."})
                numbers.append(version.version_number)
    if not is_postgres():
        database.close()  # this thread's SQLite connection (session() keeps it for the thread's life)
    return numbers


def commits_per_worker(saves: int, commit_every: int) -> int:
    return len(range(0, saves, commit_every))


def assert_numbering(workspace_id: str, agent_id: str, expected: int, handed_out: list[int] | None = None) -> None:
    """The agent's versions are exactly 1..expected; the main line is one parent chain ending at
    the head; each branch is one chain from its base to its head; what callers were handed is
    2..expected once each (version 1 came with the agent)."""
    with session():
        rows = list(Version.select(Version.id, Version.version_number, Version.parent_version_id, Version.branch_id)
                    .where((Version.workspace == workspace_id) & (Version.entity_type == Agent.KIND)
                           & (Version.entity_id == agent_id))
                    .order_by(Version.version_number).tuples())
        agent = Agent.get_by_id(agent_id)
        branch_rows = list(Branch.select().where(Branch.entity_id == agent_id))
    numbers = [number for _, number, _, _ in rows]
    duplicates = [n for n, c in Counter(numbers).items() if c > 1]
    missing = sorted(set(range(1, expected + 1)) - set(numbers))
    assert numbers == list(range(1, expected + 1)), f"duplicates {duplicates}, missing {missing[:20]}"
    assert agent.version_count == expected
    if handed_out is not None:
        assert sorted(handed_out) == list(range(2, expected + 1))

    main = [(vid, parent) for vid, _, parent, branch in rows if branch is None]
    assert main[0][1] is None, "version 1 has a parent"
    broken = [i for i in range(1, len(main)) if main[i][1] != main[i - 1][0]]
    assert not broken, f"{len(broken)} main-line versions whose parent is not the previous main-line version"
    assert agent.head_version_id == main[-1][0], "the head is not the highest main-line version"

    for branch in branch_rows:
        line = [(vid, parent) for vid, _, parent, b in rows if b == branch.id]
        assert branch.commit_count == len(line)
        if line:
            assert line[0][1] == branch.base_version_id
            assert all(line[i][1] == line[i - 1][0] for i in range(1, len(line))), "a branch's chain is broken"
            assert branch.head_version_id == line[-1][0]
        else:
            assert branch.head_version_id == branch.base_version_id


def agent_with_branches(count: int) -> tuple[factories.Actor, str, list[str]]:
    """A new workspace's owner, its agent, and ``count`` open branches from the agent's version 1."""
    owner = factories.workspace()
    agent_id = factories.agent(owner)
    who = principal(owner.workspace_id, owner.user_id)
    with session():
        v1 = entities.get(Agent, workspace_id=owner.workspace_id, entity_id=agent_id).entity.head_version_id
        branch_ids = [branches.create_branch(Agent, who, workspace_id=owner.workspace_id, entity_id=agent_id,
                                             name=f"b{i}", base_version_id=v1).id for i in range(count)]
    return owner, agent_id, branch_ids


# --- threads in one process ---------------------------------------------------------------------

def test_concurrent_saves_and_branch_commits_number_without_gaps_in_threads(db):
    """8 threads × 10 saves of one agent, with branch commits in between: versions 1..N exactly."""
    threads, saves, commit_every = 8, 10, 2
    owner, agent_id, branch_ids = agent_with_branches(2)

    handed = run_threads(threads, lambda t: save_and_commit(owner.workspace_id, owner.user_id, agent_id, branch_ids,
                                                            t, saves, commit_every))

    for numbers in handed:
        assert numbers == sorted(numbers), "one thread's saves were numbered out of order"
    expected = 1 + threads * (saves + commits_per_worker(saves, commit_every))
    assert_numbering(owner.workspace_id, agent_id, expected, [n for numbers in handed for n in numbers])


# --- several processes --------------------------------------------------------------------------

def _process_saves(url: str, data_dir: str, threads: int, args: tuple, start, results) -> None:
    """A worker process: ``threads`` threads of save_and_commit; reports the numbers or an error."""
    try:
        open_database(url, data_dir, pool_size=threads + 1)
        workspace_id, user_id, agent_id, branch_ids, index, saves, commit_every = args
        start.wait(timeout=60)
        handed = run_threads(threads, lambda t: save_and_commit(workspace_id, user_id, agent_id, branch_ids,
                                                                index * threads + t, saves, commit_every))
        results.put(("ok", [n for numbers in handed for n in numbers]))
    except BaseException as exc:
        results.put(("error", repr(exc)))


def _process_publishes(url: str, data_dir: str, threads: int, args: tuple, start, results) -> None:
    """A worker process: ``threads`` threads publishing the given versions in a shuffled order."""
    try:
        open_database(url, data_dir, pool_size=threads + 1)
        workspace_id, user_id, agent_id, version_ids, rounds, seed = args
        who = principal(workspace_id, user_id)

        def publish(t: int) -> int:
            rng = random.Random(seed * 100 + t)
            with session():
                for _ in range(rounds):
                    version_id = rng.choice(version_ids)
                    version = versioning.publish_version(Agent, who, workspace_id=workspace_id,
                                                         entity_id=agent_id, version_id=version_id)
                    assert version.is_published and version.id == version_id
            return rounds

        start.wait(timeout=60)
        results.put(("ok", sum(run_threads(threads, publish))))
    except BaseException as exc:
        results.put(("error", repr(exc)))


def test_concurrent_saves_from_several_processes_number_without_gaps(db, tmp_path):
    """3 processes × 2 threads saving one agent (and committing to a branch): versions 1..N."""
    processes, threads, saves, commit_every = 3, 2, 10, 3
    owner, agent_id, branch_ids = agent_with_branches(1)

    handed = run_processes(_process_saves, db, str(tmp_path), processes, threads,
                           lambda p: (owner.workspace_id, owner.user_id, agent_id, branch_ids, p, saves, commit_every))

    expected = 1 + processes * threads * (saves + commits_per_worker(saves, commit_every))
    assert_numbering(owner.workspace_id, agent_id, expected, [n for numbers in handed for n in numbers])


def test_concurrent_publishes_leave_exactly_one_published_version(db, tmp_path):
    """3 processes × 2 threads each publishing 15 versions picked at random among 12: at the end
    exactly one version is published, and it is the one the agent names as published."""
    processes, threads, rounds = 3, 2, 15
    owner = factories.workspace()
    agent_id = factories.agent(owner)
    factories.save_versions(owner, agent_id, 11)
    with session():
        version_ids = [v.id for v in Version.select(Version.id).where(Version.entity_id == agent_id)]
    assert len(version_ids) == 12

    done = run_processes(_process_publishes, db, str(tmp_path), processes, threads,
                         lambda p: (owner.workspace_id, owner.user_id, agent_id, version_ids, rounds, p))

    assert sum(done) == processes * threads * rounds
    with session():
        published = list(Version.select().where((Version.entity_id == agent_id) & Version.is_published))
        agent = Agent.get_by_id(agent_id)
    assert len(published) == 1, f"{len(published)} versions are published"
    assert published[0].id == agent.published_version_id
    assert published[0].published_at is not None and published[0].published_by == owner.user_id
    # Publishing numbers nothing.
    assert_numbering(owner.workspace_id, agent_id, 12)


# --- deleting an agent while a workflow is saved naming it ----------------------------------------

def _workflow_config(agent_id: str | None) -> dict:
    nodes = [{"id": "start", "type": "start"}, {"id": "end", "type": "end"}]
    if agent_id is None:
        return {"nodes": nodes, "edges": [{"from": "start", "to": "end"}]}
    nodes.insert(1, {"id": "agent", "type": "agent", "agentId": agent_id})
    return {"nodes": nodes, "edges": [{"from": "start", "to": "agent"}, {"from": "agent", "to": "end"}]}


def assert_no_workflow_names_a_missing_agent(workspace_id: str) -> None:
    """No workflow's head, published version or open branch head names an agent that is gone:
    the configurations that can still go live (models.configs.references)."""
    with session():
        agents = {a.id for a in Agent.select(Agent.id).where(Agent.workspace == workspace_id)}
        dangling = []
        for workflow in Workflow.select().where(Workflow.workspace == workspace_id):
            open_heads = [b.head_version_id for b in Branch.select(Branch.head_version_id).where(
                (Branch.entity_id == workflow.id) & (Branch.status == OPEN))]
            for what, version_id in [("head", workflow.head_version_id), ("published", workflow.published_version_id),
                                     *(("open branch head", v) for v in open_heads)]:
                missing = set(agent_ids(versioning.config_of(workspace_id, version_id))) - agents
                if missing:
                    dangling.append(f"workflow {workflow.name} {what} names deleted agent(s) {sorted(missing)}")
    assert not dangling, dangling


def test_deleting_an_agent_while_a_workflow_is_saved_naming_it(db):
    """20 rounds of "delete agent A" racing "save a workflow naming A" (in turn: an update of a
    workflow's head, a new workflow, a commit to a workflow's open branch, the publishing of an
    older version that names A while neither head nor published version does): exactly one of the
    two succeeds, and no workflow is left naming a deleted agent."""
    rounds = 20
    owner = factories.workspace()
    who = principal(owner.workspace_id, owner.user_id)
    ws = owner.workspace_id
    with session():
        shared = entities.create(Workflow, who, workspace_id=ws, name="shared", config=_workflow_config(None))
        branch = branches.create_branch(Workflow, who, workspace_id=ws, entity_id=shared.entity.id, name="b",
                                        base_version_id=shared.entity.head_version_id)
    outcomes = Counter()
    delays = random.Random(11)

    for r in range(rounds):
        agent_id = factories.agent(owner, f"agent {r}")
        how = ("update", "create", "branch commit", "publish")[r % 4]
        if how == "publish":
            with session():
                _, older = entities.update(Workflow, who, workspace_id=ws, entity_id=shared.entity.id,
                                           config=_workflow_config(agent_id))
                entities.update(Workflow, who, workspace_id=ws, entity_id=shared.entity.id,
                                config={**_workflow_config(None), "metadata": {"round": r}})

        # Either side may reach the agent's row first: the save has more to do before (validation,
        # the workflow's lock), so each side starts up to 3 ms late, at random.
        save_delay, delete_delay = delays.uniform(0, 0.003), delays.uniform(0, 0.003)

        def save() -> str:
            time.sleep(save_delay)
            with session():
                try:
                    if how == "update":
                        entities.update(Workflow, who, workspace_id=ws, entity_id=shared.entity.id,
                                        config=_workflow_config(agent_id))
                    elif how == "create":
                        entities.create(Workflow, who, workspace_id=ws, name=f"workflow {r}",
                                        config=_workflow_config(agent_id))
                    elif how == "branch commit":
                        branches.commit(Workflow, who, workspace_id=ws, entity_id=shared.entity.id,
                                        branch_id=branch.id, config=_workflow_config(agent_id))
                    else:
                        versioning.publish_version(Workflow, who, workspace_id=ws, entity_id=shared.entity.id,
                                                   version_id=older.id)
                except (InvalidInput, Conflict):
                    return "refused"
            return "saved"

        def delete() -> str:
            time.sleep(delete_delay)
            with session():
                try:
                    entities.delete(Agent, workspace_id=ws, entity_id=agent_id)
                except Conflict:
                    return "refused"
            return "deleted"

        saved, deleted = run_threads(2, lambda t: (save, delete)[t]())
        outcomes[(how, saved, deleted)] += 1
        assert (saved, deleted) in (("saved", "refused"), ("refused", "deleted")), (how, saved, deleted)
        assert_no_workflow_names_a_missing_agent(ws)
    print(dict(outcomes))  # which side won how often (-s shows it)


def test_publishing_a_workflow_version_that_names_a_deleted_agent_is_refused(db):
    """The live configuration is the published version (issue 11), and an agent a workflow uses
    cannot be deleted. An older version of a workflow may name an agent deleted since (it was
    deletable because neither the head nor the published version named it): publishing that
    version must be refused (400 or 409), as restoring it is (versioning.restore_version checks
    again), or the workflow goes live routing to an agent that no longer exists."""
    owner = factories.workspace()
    who = principal(owner.workspace_id, owner.user_id)
    ws = owner.workspace_id
    agent_id = factories.agent(owner)
    workflow_id = factories.workflow(owner, [])
    with session():
        _, naming = entities.update(Workflow, who, workspace_id=ws, entity_id=workflow_id,
                                    config=_workflow_config(agent_id))
        entities.update(Workflow, who, workspace_id=ws, entity_id=workflow_id, config=_workflow_config(None))
        entities.delete(Agent, workspace_id=ws, entity_id=agent_id)  # neither head nor published names it
        with pytest.raises((InvalidInput, Conflict)):  # restoring it is refused...
            versioning.restore_version(Workflow, who, workspace_id=ws, entity_id=workflow_id, version_id=naming.id)
        published_before = Workflow.get_by_id(workflow_id).published_version_id
        try:  # ...and so must publishing it be
            versioning.publish_version(Workflow, who, workspace_id=ws, entity_id=workflow_id, version_id=naming.id)
        except (InvalidInput, Conflict):
            pass
        live = entities.get(Workflow, workspace_id=ws, entity_id=workflow_id)
    assert live.entity.published_version_id == published_before, (
        f"version {naming.version_number}, naming the deleted agent {agent_id}, was published: the live "
        f"configuration routes to an agent that no longer exists ({agent_ids(live.live_config)})")
    assert_no_workflow_names_a_missing_agent(ws)
