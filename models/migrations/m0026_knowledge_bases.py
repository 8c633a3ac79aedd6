"""Knowledge bases: named sets of articles, searchable by their words

An article's words are indexed by the database's own full-text search: an FTS5 table on SQLite,
an expression GIN index over its English tsvector on PostgreSQL (models.knowledge.search).
"""

STATEMENTS = (
    """CREATE TABLE knowledge_base (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX knowledge_base_workspace_id_created_at_id ON knowledge_base (workspace_id, created_at, id)",
    """CREATE TABLE knowledge_article (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        knowledge_base_id VARCHAR(255) NOT NULL REFERENCES knowledge_base (id) ON DELETE CASCADE,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX knowledge_article_workspace_id_knowledge_base_id_created_at_id "
    "ON knowledge_article (workspace_id, knowledge_base_id, created_at, id)",
)


def apply(database) -> None:
    from models.kernel.db import is_postgres
    if is_postgres():
        database.execute_sql(
            "CREATE INDEX knowledge_article_search ON knowledge_article "
            "USING GIN (to_tsvector('english', title || ' ' || body))")
    else:
        database.execute_sql(
            "CREATE VIRTUAL TABLE knowledge_article_fts USING fts5("
            "article_id UNINDEXED, title, body, tokenize = 'porter unicode61')")
