"""AG2 1.0 layout stand-in: see fake_ag2_1/ag2/__init__.py."""
from autogen.beta.tools.sandbox.factory import *  # noqa: F401,F403
