"""What a workspace export holds, judged from the models alone: every table the workspace owns is
exported or excluded with a reason, no exported column's name looks secret unless it is named as
no secret, and every exclusion names a table and column that exist. A table another change adds
is exported by itself; it fails here when a column's name looks secret, or when it reaches a
workspace by foreign keys the walk does not follow, until it is classified in
models/exports/resources.py."""
from __future__ import annotations

import re

from models.exports import resources
from models.identity.tables import AccessToken, MfaRecoveryCode, SignInChallenge, User, UserMfa, UserPassword
from models.kernel.scoping import Workspace

SECRET_LOOKING = re.compile(r"secret|hash|digest|token|encrypted|password|totp|private|credential")


def _every_table_reaching_a_workspace() -> set[str]:
    """Tables whose foreign keys lead to the workspace, directly or through others: the
    workspace's rows, whichever way the walk in resources finds them."""
    models = resources.all_models()
    reaching = {Workspace}
    grew = True
    while grew:
        grew = False
        for model in models:
            if model not in reaching and any(f.rel_model in reaching for f in model._meta.refs):
                reaching.add(model)
                grew = True
    return {m._meta.table_name for m in reaching - {Workspace}}


def test_every_table_of_a_workspace_is_exported_or_excluded():
    owned = {r.name for r in resources.workspace_tables()}
    exported = {r.name for r in resources.exported()} - {"workspace", "user"}
    assert exported | set(resources.EXCLUDED_TABLES) == owned
    assert not exported & set(resources.EXCLUDED_TABLES)
    # A table that reaches a workspace by a foreign key but that the walk does not count as the
    # workspace's must be one of the user's own (a user belongs to several workspaces).
    users_own = {m._meta.table_name for m in (User, AccessToken, MfaRecoveryCode, SignInChallenge, UserMfa, UserPassword)}
    assert _every_table_reaching_a_workspace() - owned <= users_own


def test_no_exported_column_looks_secret():
    looks_secret = [f"{r.name}.{f.column_name}" for r in resources.exported() for f in r.columns()
                    if SECRET_LOOKING.search(f.column_name) and (r.name, f.column_name) not in resources.NOT_SECRET]
    assert looks_secret == [], ("classify these in models/exports/resources.py: EXCLUDED_COLUMNS if they hold a "
                                "secret, NOT_SECRET if not")


def test_the_users_credentials_are_never_exported():
    # The user row itself (id, email, name) is: a member's; their credentials are tables of their own.
    exported = {r.name for r in resources.exported()}
    for model in (AccessToken, MfaRecoveryCode, SignInChallenge, UserMfa, UserPassword):
        assert model._meta.table_name not in exported
    assert set(User._meta.columns) == {"id", "email", "display_name", "is_active", "created_at"}


def test_every_exclusion_names_what_exists():
    tables = {m._meta.table_name: m for m in resources.all_models()}
    assert set(resources.EXCLUDED_TABLES) <= set(tables)
    for table, column in [*resources.EXCLUDED_COLUMNS, *resources.NOT_SECRET, *resources.PII_COLUMNS]:
        assert column in tables[table]._meta.columns, (table, column)


def test_an_audio_files_transcript_is_exported_whole():
    # The transcript is the workspace's data (as a call's is, in the call file); its job's
    # bookkeeping (attempts, lease) rides along as a recording's job does.
    resource = next(r for r in resources.exported() if r.name == "audio_transcription")
    assert {"text", "words", "language", "status", "error", "audio_id"} <= {f.column_name for f in resource.columns()}


def test_syncs_are_exported_whole():
    # The workspace's history of pushes to its runtimes: no secret in it (the bearer is the
    # integration's, which the integration file leaves out), the runtime's answer included.
    [sync] = [r for r in resources.exported() if r.name == "config_sync"]
    assert {f.column_name for f in sync.columns()} >= {"entity_id", "version_id", "integration_id", "status",
                                                        "response_body", "error"}


def test_knowledge_documents_are_exported_whole_and_their_articles_name_them():
    # The file itself is not kept; its name, source URL and content hash are the workspace's data.
    exported = {r.name: r for r in resources.exported()}
    columns = {f.column_name for f in exported["knowledge_document"].columns()}
    assert {"name", "content_type", "bytes", "source_url", "content_hash", "synced_at"} <= columns
    assert "document_id" in {f.column_name for f in exported["knowledge_article"].columns()}


def test_the_knowledge_bases_their_articles_and_their_agents_are_exported_whole_without_the_search_index():
    # The links of agents to knowledge bases are the workspace's own configuration, nothing secret:
    # exported with every column. The search index (an FTS5 table on SQLite, a generated column on
    # PostgreSQL) is derived from the articles, so no model declares it and no file holds it.
    exported = {r.name: r for r in resources.exported()}
    for table in ("knowledge_base", "knowledge_article", "knowledge_base_agent"):
        assert table in exported and table not in resources.EXCLUDED_TABLES
        assert not [c for t, c in resources.EXCLUDED_COLUMNS if t == table]
    assert {f.column_name for f in exported["knowledge_base_agent"].columns()} == {
        "id", "workspace_id", "agent_id", "knowledge_base_id", "attached_by", "attached_at"}
    from models.knowledge import search
    assert not set(search.INDEX_TABLES) & set(exported)
    assert not {f.column_name for f in exported["knowledge_article"].columns()} & set(search.INDEX_COLUMNS)
