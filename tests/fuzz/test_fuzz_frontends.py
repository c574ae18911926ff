"""Property-based fuzzing of the five frontends (see fzlib/frontends.py for the property).

Each test draws a `random.Random` from hypothesis and hands it to the frontend's
generator, the same generator the long campaign (`campaign.py`) uses. CI runs a small,
fixed set of examples: `derandomize=True` (the same inputs on every run), no example
database (nothing written to the repository), no shrinking (a failing case prints its
reproducer; shrinking would re-run compile-and-train cases for minutes), and our own
per-case time limits instead of hypothesis deadlines. `FRAME_FUZZ_EXAMPLES=N` runs N
examples per frontend (a long campaign with hypothesis; `campaign.py` counts outcomes).

Every check applies the acceptance property (`fzlib/frontends.py`, RUNTIME_RULES): what
validation accepts compiles and runs its first step, or is refused by a documented
run-time rule; a verifier's, pass's or library's message after acceptance is a
`late-refusal` bug. `test_option_values` runs it on option-value mutations alone: every
network operator type with options once, and a few specs, `.kyn` programs and API
programs whose option values are at the edges of their ranges.
"""

from __future__ import annotations

import os
import random

import pytest
from fzlib.frontends import FRONTENDS, VALUE_GENERATORS, gen_network_values
from fzlib.pool import Pool
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

# Per-frontend CI example counts, sized so that all of tests/fuzz stays within ~75 s on
# an idle 2-core machine (every accepted spec or network compiles; about half the api
# programs compile and run 1-3 small graphs).
CI_EXAMPLES = {"spec": 80, "ir": 150, "api": 100, "network": 80, "kyn": 40}
# Option-value examples (test_option_values) beyond one per network operator type.
CI_VALUE_EXAMPLES = {"spec": 15, "network": 10, "kyn": 10, "api": 15}


def _examples(frontend: str) -> int:
    env = os.environ.get("FRAME_FUZZ_EXAMPLES")
    return int(env) if env else CI_EXAMPLES[frontend]


def fuzz_settings(frontend: str) -> settings:
    """Reproducible, bounded hypothesis settings for one frontend."""
    return settings(max_examples=_examples(frontend), derandomize=True, database=None,
                    deadline=None, phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=list(HealthCheck), print_blob=False)


def check_one(pool: Pool, frontend: str, rng: random.Random) -> None:
    """Generate one input, run it, and fail with its reproducer if it shows a bug."""
    gen, check = FRONTENDS[frontend]
    inp = gen(rng)
    res = check(pool, inp)
    event(res.cls)  # outcome counts: pytest --hypothesis-show-statistics
    assert not res.is_bug, (f"{frontend} input gave {res.cls}:\n{res.bug}\n"
                            f"--- reproducer ---\n{inp.reproducer()}")


@pytest.mark.parametrize("frontend", sorted(FRONTENDS))
def test_fuzz_frontend(fuzz_pool: Pool, frontend: str) -> None:
    @fuzz_settings(frontend)
    @given(st.randoms(use_true_random=False))
    def run(rng: random.Random) -> None:
        check_one(fuzz_pool, frontend, rng)

    run()


@pytest.mark.parametrize("frontend", sorted(VALUE_GENERATORS))
def test_option_values(fuzz_pool: Pool, frontend: str) -> None:
    """The acceptance property on option-value mutations (`fzlib/values.py`)."""
    check = FRONTENDS[frontend][1]
    if frontend == "network":  # every operator type with options, once
        from fzlib import corpus

        for op_type in sorted(corpus.networks_by_operator()):
            inp = gen_network_values(random.Random(f"ci:{op_type}"), op_type)
            res = check(fuzz_pool, inp)
            assert not res.is_bug, (f"{op_type} option values gave {res.cls}:\n{res.bug}\n"
                                    f"--- reproducer ---\n{inp.reproducer()}")
    n = int(os.environ.get("FRAME_FUZZ_EXAMPLES") or CI_VALUE_EXAMPLES[frontend])

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck),
              print_blob=False)
    @given(st.randoms(use_true_random=False))
    def run(rng: random.Random) -> None:
        inp = VALUE_GENERATORS[frontend](rng)
        res = check(fuzz_pool, inp)
        event(res.cls)
        assert not res.is_bug, (f"{frontend} option values gave {res.cls}:\n{res.bug}\n"
                                f"--- reproducer ---\n{inp.reproducer()}")

    run()
