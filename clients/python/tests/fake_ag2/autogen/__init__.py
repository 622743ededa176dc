"""A stand-in for AG2 (tests only): see fake_ag2/autogen/beta/tools/sandbox/__init__.py."""
