"""A cordon profile that adds this Python (and any other trees) read-only to another profile.

    python3 -m cordon.profile > /etc/cordon/profiles/mypython.conf     # as root
    python3 -m cordon.profile --include default /opt/tools > mine.conf

The sandbox shows only a profile's `ro_bind` trees, the workdir and a private /tmp, so a Python
under a home directory (pyenv, a venv, conda: `sys.executable`, or `python` on a venv's PATH)
is not there. The profile printed here includes another one (default `ag2-compat`) and binds,
read-only, the system trees that profile binds by default plus this interpreter's prefixes
(`sys.prefix`, `sys.base_prefix`, the real executable's; for a pyenv Python the whole pyenv
root, whose shims `python` runs through) and the extra paths given. A first
`ro_bind` in a profile replaces the included list, hence the system trees are repeated.
"""

import argparse
import os
import sys
from typing import Iterable, List, Optional, Sequence

SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc")


def _inside(path: str, trees: Iterable[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in trees)


def _pyenv_root(prefix: str) -> Optional[str]:
    """The pyenv root of a prefix `<root>/versions/<name>`, when `<root>/shims` exists: `python`
    on a pyenv user's PATH is a shim there that runs `pyenv exec`, so the whole root is
    needed, not only the version's prefix."""
    versions = os.path.dirname(prefix)
    root = os.path.dirname(versions)
    if os.path.basename(versions) == "versions" and os.path.isdir(os.path.join(root, "shims")):
        return root
    return None


def python_trees() -> List[str]:
    """This interpreter's prefixes (a pyenv's whole root) not covered by the system trees."""
    out: List[str] = []
    exe_prefix = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    for p in (sys.prefix, sys.base_prefix, exe_prefix):
        p = os.path.realpath(p)
        p = _pyenv_root(p) or p
        if not _inside(p, SYSTEM_TREES) and not _inside(p, out):
            out = [o for o in out if not _inside(o, [p])] + [p]
    return out


def profile_text(
    include: str = "ag2-compat",
    extra: Sequence[str] = (),
    description: Optional[str] = None,
    python: bool = True,
) -> str:
    """The profile, as text. Paths must be absolute (cordon refuses others when loading)."""
    binds: List[str] = [t for t in SYSTEM_TREES if os.path.exists(t)]
    for e in extra:
        if not os.path.isabs(e):
            raise ValueError(f"not an absolute path: {e}")
    for p in list(python_trees() if python else []) + [os.path.realpath(e) for e in extra]:
        if p not in binds and not _inside(p, SYSTEM_TREES):
            binds.append(p)
    desc = description or f"{include} plus {sys.executable} read-only"
    lines = ["[profile]", f"description = {desc}", f"include = {include}", "[sandbox]"]
    lines += [f"ro_bind = {b}" for b in binds]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m cordon.profile", description=__doc__.split("\n\n")[0])
    ap.add_argument("--include", default="ag2-compat", help="the profile to extend (ag2-compat)")
    ap.add_argument("--no-python", action="store_true", help="do not add this Python's trees")
    ap.add_argument("paths", nargs="*", help="more absolute paths to bind read-only")
    args = ap.parse_args(argv)
    try:
        sys.stdout.write(profile_text(args.include, args.paths, python=not args.no_python))
    except ValueError as e:
        print(f"cordon.profile: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
