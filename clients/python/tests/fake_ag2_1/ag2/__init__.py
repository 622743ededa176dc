"""A stand-in for AG2 1.0's package layout (tests only): AG2 1.0 renamed `autogen.beta` to
`ag2`, with the same sandbox types. Each module re-exports the older stand-in's (fake_ag2,
which must be on the path too), so cordon's tests can check that the client finds either
layout, AG2 1.0's first."""
