"""Knowledge bases attached to agents, and a stored search vector for bounded retrieval

An agent's knowledge bases are what retrieval searches during its calls; deleting the agent or the
knowledge base deletes the link (the foreign keys' cascade; the knowledge_base_id index serves it).

On PostgreSQL the articles' weighted tsvector (title A, body D) becomes a stored generated column
with its GIN index, replacing the expression index: ranking reads the stored vector instead of
parsing each candidate's text again (models.knowledge.search).
"""

STATEMENTS = (
    """CREATE TABLE knowledge_base_agent (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        agent_id VARCHAR(255) NOT NULL REFERENCES agent (id) ON DELETE CASCADE,
        knowledge_base_id VARCHAR(255) NOT NULL REFERENCES knowledge_base (id) ON DELETE CASCADE,
        attached_by VARCHAR(255) NOT NULL,
        attached_at TIMESTAMP NOT NULL)""",
    "CREATE UNIQUE INDEX knowledge_base_agent_agent_id_knowledge_base_id "
    "ON knowledge_base_agent (agent_id, knowledge_base_id)",
    "CREATE INDEX knowledge_base_agent_workspace_id_agent_id_attached_at_id "
    "ON knowledge_base_agent (workspace_id, agent_id, attached_at, id)",
    "CREATE INDEX knowledge_base_agent_knowledge_base_id ON knowledge_base_agent (knowledge_base_id)",
)


def apply(database) -> None:
    from models.kernel.db import is_postgres
    if is_postgres():
        database.execute_sql(
            "ALTER TABLE knowledge_article ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
            "setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'D')) STORED")
        database.execute_sql("CREATE INDEX knowledge_article_search_vector ON knowledge_article "
                             "USING GIN (search_vector)")
        database.execute_sql("DROP INDEX knowledge_article_search")
