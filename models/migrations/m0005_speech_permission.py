"""speech:transcribe on the API keys that could transcribe before it existed

Before this release the speech server admitted any valid credential. The permission it now
needs is added to every existing key that holds any permission, so that no key in use stops
transcribing at the upgrade; a key frozen with an empty list stays empty.
"""
import json

STATEMENTS = ()
PERMISSION = "speech:transcribe"


def apply(database) -> None:
    p = database.param
    for key_id, permissions in database.execute_sql("SELECT id, permissions FROM api_key").fetchall():
        held = json.loads(permissions)
        if held and PERMISSION not in held:
            database.execute_sql(f"UPDATE api_key SET permissions = {p} WHERE id = {p}",
                                 (json.dumps([*held, PERMISSION], separators=(",", ":")), key_id))
