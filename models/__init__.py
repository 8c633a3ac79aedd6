"""The domain: Peewee models and the functions that act on them, usable without HTTP."""
