#!/usr/bin/env python3
"""Generate python_cases.json, the differential test data for package fnmatch.

Each case is a (pattern, subject, expected) triple where
    expected = fnmatch.fnmatchcase(subject.lower(), pattern.lower())
as computed by CPython 3.11. The Go test (TestPythonCases) reads the JSON;
it never runs Python, so CI needs no interpreter.

Re-run from the repository root after changing this script:

    python3.11 internal/fnmatch/testdata/gen_cases.py

The output is deterministic (fixed seed) for a given Python version.

The alphabet avoids characters whose lower-casing differs between Python's
str.lower() (full, context-sensitive Unicode mapping) and Go's per-code-point
unicode.ToLower, e.g. U+0130 (Python: "i" + U+0307, Go: "i") and U+03A3
(Python picks final sigma by context). Every character used lower-cases to
exactly one code point; the JSON records the mapping and the Go test checks
that unicode.ToLower agrees.
"""

import fnmatch
import json
import os
import random
import sys
import warnings

# re warns about "possible nested set" etc. for some translated patterns.
warnings.simplefilter("ignore", FutureWarning)

META = "*?[]!-^\\/"
LETTERS = "aAbBzZkK"
NON_ASCII = "éÉȺⱥ\u212a"  # Ⱥ->ⱥ grows 2->3 bytes; KELVIN SIGN -> k shrinks 3->1
OTHER = "-/\n .!]^\\["

PATTERN_ALPHABET = META * 3 + LETTERS + NON_ASCII
SUBJECT_ALPHABET = LETTERS * 2 + NON_ASCII + OTHER
CLASS_ALPHABET = "az!-]^\\[cAZ"
CLASS_SUBJECTS = "abcyzAZ-!]^\\[é"


def check_alphabet():
    chars = sorted(set(PATTERN_ALPHABET + SUBJECT_ALPHABET + CLASS_ALPHABET + CLASS_SUBJECTS))
    for c in chars:
        if len(c.lower()) != 1:
            sys.exit(f"{c!r} lower-cases to {c.lower()!r}; remove it")
    return [[c, c.lower()] for c in chars]


def rand_string(rng, alphabet, lo, hi):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def instantiate(rng, pattern):
    """A subject that often matches pattern: stars and '?' filled in, other
    characters kept (with random case)."""
    out = []
    for c in pattern:
        if c == "*":
            out.append(rand_string(rng, SUBJECT_ALPHABET, 0, 3))
        elif c == "?":
            out.append(rng.choice(SUBJECT_ALPHABET))
        else:
            out.append(c.upper() if rng.random() < 0.3 else c)
    return "".join(out)


def main():
    rng = random.Random(20240611)
    alphabet = check_alphabet()
    seen = set()
    cases = []

    def add(p, s):
        if (p, s) in seen:
            return
        seen.add((p, s))
        cases.append({"p": p, "s": s, "m": fnmatch.fnmatchcase(s.lower(), p.lower())})

    # Random patterns against random and instantiated subjects.
    for _ in range(1200):
        p = rand_string(rng, PATTERN_ALPHABET, 0, 9)
        add(p, rand_string(rng, SUBJECT_ALPHABET, 0, 8))
        add(p, instantiate(rng, p))
        add(p, instantiate(rng, p))

    # Bracket expressions: random bodies, single-character subjects, with
    # optional surrounding literals/stars.
    for _ in range(700):
        body = rand_string(rng, CLASS_ALPHABET, 1, 5)
        wrap = rng.choice(["[%s]", "[%s]", "[!%s]", "*[%s]", "[%s]*", "x[%s]y"])
        p = wrap % body
        for _ in range(3):
            c = rng.choice(CLASS_SUBJECTS)
            if p.startswith("x"):
                s = "x" + c + "y"
            elif p.startswith("*"):
                s = rand_string(rng, "ab", 0, 2) + c
            elif p.endswith("*"):
                s = c + rand_string(rng, "ab", 0, 2)
            else:
                s = c
            add(p, s)

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "python_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        f.write('"generator": "gen_cases.py",\n')
        f.write('"python": %s,\n' % json.dumps(sys.version.split()[0]))
        f.write('"lower": %s,\n' % json.dumps(alphabet, ensure_ascii=False))
        f.write('"cases": [\n')
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n]}\n")
    matches = sum(c["m"] for c in cases)
    print(f"wrote {len(cases)} cases ({matches} matching) to {path}")


if __name__ == "__main__":
    main()
