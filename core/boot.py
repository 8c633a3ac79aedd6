"""The one start-up sequence of every entry point: logging, the database, the schema."""
from __future__ import annotations

from models.audio import library as audio_library
from models.billing import credits
from models.calls import calls, recordings
from models.catalog import offered
from models.exports import exports
from models.kernel import chat_completions, encryption
from models.kernel.db import open_database, session
from models.knowledge import documents as knowledge_documents
from models.migrations import migrate
from models.optimization import runs as optimization_runs
from models.simulations import simulations
from models.webhooks import addresses

from .request_log import configure_logging
from .settings import Settings


def boot(settings: Settings, *, migrate_schema: bool = True, log_level: str | int | None = None) -> None:
    """Configure logging, bind the models to the configured database and bring its schema up to date.

    Migrating is safe from several processes at once (see models.migrations); ``migrate_schema``
    is off where a parent process has migrated already.
    """
    configure_logging(log_level or settings.log_level, settings.log_format)
    encryption.configure(settings.secret_key, settings.data_dir)
    recordings.configure(settings.data_dir)
    exports.configure(settings.data_dir, settings.export_ttl_s)
    offered.configure(offered.Configured(settings.data_dir, settings.stt_model_path, settings.stt_model_aliases,
                                         settings.stt_weights))
    audio_library.configure(settings.data_dir)
    knowledge_documents.configure(max_bytes=settings.kb_max_document_bytes, fetch_timeout_s=settings.webhook_timeout_s)
    addresses.configure(allow_http=settings.webhook_allow_http,
                                allow_private=settings.webhook_allow_private_addresses)
    credits.configure(credits.Prices(call_minute=settings.credits_per_call_minute,
                                     transcribed_second=settings.credits_per_transcribed_second),
                      enforced=settings.credits_enforced)
    calls.configure(max_duration_s=settings.max_call_duration_s)
    chat_completions.configure(chat_completions.Endpoint(settings.llm_base_url, settings.llm_api_key,
                                                         settings.llm_model, settings.llm_timeout_s)
                               if settings.llm_base_url else None)
    simulations.configure(simulations.Prices(settings.llm_input_cost_per_million,
                                             settings.llm_output_cost_per_million))
    optimization_runs.configure(external_timeout_s=settings.external_optimizer_timeout_s)
    open_database(settings.database_url, settings.data_dir, settings.db_pool_size, settings.db_pool_timeout_s)
    if migrate_schema:
        with session():
            migrate()
