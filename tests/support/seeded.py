"""The seed and the verdict of a seeded test script: the seed comes from an environment
variable or is drawn, and is printed first; failures are printed with how to repeat them."""
import os
import random


def seed_from(variable, what):
    """The seed in `variable`, or a new one; printed with how to repeat `what`."""
    seed = int(os.environ.get(variable) or random.SystemRandom().randrange(1, 2**31))
    print("seed %d (%s=%d repeats %s)" % (seed, variable, seed, what), flush=True)
    return seed


def verdict(failures, variable, seed):
    """Prints each failure and how to repeat the run; the script's exit status."""
    for failure in failures:
        print("FAIL " + failure)
    if failures:
        print("repeat with %s=%d" % (variable, seed))
        return 1
    return 0
