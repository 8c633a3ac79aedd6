"""Knowledge documents: files uploaded to a knowledge base or fetched from a URL, read into articles

Each article read from a document names it (document_id; NULL for one written by hand), and goes
with it: deleting a document deletes its articles, and a sync that finds new content replaces them.
"""

STATEMENTS = (
    """CREATE TABLE knowledge_document (
        id VARCHAR(255) NOT NULL PRIMARY KEY,
        workspace_id VARCHAR(255) NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
        knowledge_base_id VARCHAR(255) NOT NULL REFERENCES knowledge_base (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        content_type VARCHAR(255) NOT NULL,
        bytes BIGINT NOT NULL,
        source_url TEXT,
        content_hash VARCHAR(255) NOT NULL,
        created_by VARCHAR(255) NOT NULL,
        created_at TIMESTAMP NOT NULL,
        synced_at TIMESTAMP NOT NULL)""",
    "CREATE INDEX knowledge_document_workspace_id_knowledge_base_id_created_at_id "
    "ON knowledge_document (workspace_id, knowledge_base_id, created_at, id)",
    "ALTER TABLE knowledge_article ADD COLUMN document_id VARCHAR(255) "
    "REFERENCES knowledge_document (id) ON DELETE CASCADE",
    "CREATE INDEX knowledge_article_document_id ON knowledge_article (document_id)",
)
