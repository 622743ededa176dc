#!/usr/bin/env python3
"""Run the README's tour (its ```console block) and compare every output with the README's.

Each "$ CMD" line runs with bash from the repository root; the lines after it, up to the next
"$ ", are what it must print (stdout and stderr together, as a terminal shows them). `echo $?`
prints the previous command's status. A leading `sudo ` is dropped (this runs as root), and the
fields of the JSON result that change from run to run (durations, usage, the temp workdir's
random name) are compared by shape. Prints one line per command and exits 1 on a difference.

Usage: tests/readme_tour.py [README.md]
"""
import re
import subprocess
import sys


def tour(text):
    block = re.search(r"^```console\n(.*?)^```", text, re.S | re.M)
    if not block:
        sys.exit("readme_tour: no ```console block in the README")
    steps = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            steps.append([line[2:], []])
        elif steps:
            steps[-1][1].append(line)
    return steps


VARIABLE = [
    (r'"duration_ms": [0-9.]+', '"duration_ms": N'),
    (r'"cpu_ms": [0-9.]+', '"cpu_ms": N'),
    (r'"peak_memory_bytes": -?[0-9]+', '"peak_memory_bytes": N'),
    (r'"workdir": "/tmp/cordon-[A-Za-z0-9]{6}"', '"workdir": "/tmp/cordon-XXXXXX"'),
]


def normal(s):
    for pat, rep in VARIABLE:
        s = re.sub(pat, rep, s)
    return s.rstrip("\n")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "README.md"
    with open(path, encoding="utf-8") as f:
        steps = tour(f.read())
    last, bad = 0, 0
    for cmd, want in steps:
        if cmd.startswith("sudo "):
            cmd = cmd[5:]
        if cmd == "echo $?":
            got = f"{last}\n"
        else:
            p = subprocess.run(["bash", "-c", cmd], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               timeout=120)
            got, last = p.stdout.decode("utf-8", "replace"), p.returncode
        ok = normal(got) == normal("\n".join(want))
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} $ {cmd}")
        if not ok:
            print("  README says:\n    " + "\n    ".join(want))
            print("  it printed:\n    " + "\n    ".join(got.rstrip("\n").splitlines()))
    print(f"readme_tour: {len(steps) - bad} of {len(steps)} commands as the README shows")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
