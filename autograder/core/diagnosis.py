"""Under which conditions a task's output goes wrong, told from the verdicts of all its cases.

Each hidden case carries features: what sets it apart from the others ("Lq != Lk", "dtype float64",
"bidirectional=False", the number of positions). When some cases of a task pass and others fail, a feature
whose values on the passing cases and on the failing ones do not overlap says where the function breaks:
"it works on every case with Lq == Lk and fails on every one with Lq != Lk". A task may add what that
usually means (its ``HINTS``), phrased as a pointer, never as a verdict. Trusted side only: it reads the
cases' features and the verdicts, and nothing here is sent to a job.

An exception is a diagnosis too: the sizes a message quotes ("The size of tensor a (5) must match the size of
tensor b (9)") are matched with the case's named sizes ("5 is Lq and 9 is Lk in this call").
"""

import re


def _numeric(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _natural(value):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(value))]


def _shown(values):
    values = sorted(values, key=_natural)
    return " or ".join(str(v) for v in values)


def separating_features(observations):
    """Every feature whose values on passing and failing cases do not overlap, as
    ``(name, kind, passing values, failing values)``, in the order in which the cases name them.

    ``observations``: ``[(features, failed, raised)]``, one per case that ran. ``kind`` is "set" (disjoint
    values) or "above" / "below" (a numeric feature: every failing case lies above, or below, every passing one).
    """
    passed = [features for features, failed, _ in observations if not failed]
    failed = [features for features, failed, _ in observations if failed]
    if not passed or not failed:
        return []
    names, found = [], []
    for features, _, _ in observations:
        names += [name for name in features if name not in names]
    for name in names:
        if any(name not in features for features, _, _ in observations):
            continue  # a feature some cases do not have cannot separate them all
        good = [features[name] for features in passed]
        bad = [features[name] for features in failed]
        if all(_numeric(v) for v in good + bad):
            if min(bad) > max(good):
                found.append((name, "above", good, bad))
            elif max(bad) < min(good):
                found.append((name, "below", good, bad))
        elif not set(map(str, good)) & set(map(str, bad)):
            found.append((name, "set", good, bad))
    return found


MIN_OBSERVATIONS = 3  # one passing case against one failing one is too little to tell a condition by


def condition(*levels, hints=None):
    """One sentence: under which condition the cases fail, and what that usually means; or "".

    ``levels``: lists of observations, narrowest first (a test's own cases, then its task's). The first level
    where exactly one feature separates passing from failing cases is the one told; where every level has
    several, the widest one's are told together, with no hint, since which of them matters cannot be told.
    """
    several = None
    for observations in levels:
        found = separating_features(observations) if len(observations) >= MIN_OBSERVATIONS else []
        if len(found) == 1:
            return _sentence(found[0], observations, hints)
        if found:
            several = (found, observations)
    if several is None:
        return ""
    found, observations = several
    verb = _verb(observations)
    good = " and ".join(_shown(set(map(str, g))) for _, kind, g, _ in found if kind == "set")
    bad = " and ".join(_shown(set(map(str, b))) for _, kind, _, b in found if kind == "set")
    if not good:
        return ""
    return (f"it works on every case with {good} and {verb} on every case with {bad} {_count(found[0])}; "
            "these cases differ in more than one way, so which of them matters cannot be told from them.")


def _verb(observations):
    return "raises" if all(raised for _, failed, raised in observations if failed) else "fails"


def _count(found):
    _, _, good, bad = found
    return f"({len(good)} {'case' if len(good) == 1 else 'cases'} pass, {len(bad)} fail)"


def _sentence(found, observations, hints):
    name, kind, good, bad = found
    verb, count, hints = _verb(observations), _count(found), hints or {}
    if kind == "set":
        good_values, bad_values = set(map(str, good)), set(map(str, bad))
        if len(bad_values) == 1 and len(good_values) > 2:
            sentence = f"it {verb} only on the cases with {_shown(bad_values)} {count}"
        elif len(good_values) == 1 and len(bad_values) > 2:
            sentence = f"it works only on the cases with {_shown(good_values)} and {verb} on all others {count}"
        else:
            sentence = f"it works on every case with {_shown(good_values)} and {verb} on every case with " \
                       f"{_shown(bad_values)} {count}"
        # A hint speaks of the failing values, all of them: one value, or a tuple of several (in natural order),
        # as ("lengths", ("Lq < Lk", "Lq > Lk")); a hint of one value would point at one of several only.
        hint = hints.get((name, str(bad[0]) if len(bad_values) == 1 else tuple(sorted(bad_values, key=_natural))), "")
    elif kind == "above":
        sentence = f"it works up to {name} {max(good)} and {verb} from {name} {min(bad)} on {count}"
        hint = hints.get((name, ">"), "")
    else:
        sentence = f"it {verb} up to {name} {max(bad)} and works from {name} {min(good)} on {count}"
        hint = hints.get((name, "<"), "")
    return sentence + (f": {hint}" if hint else "") + "."


def sizes_in_error(message, sizes):
    """"5 is Lq and 9 is Lk in this call" for the numbers of an error message that are one named size; or ""."""
    said = []
    # Counts of arguments ("takes 1 positional argument but 4 were given") are not sizes: left out.
    message = re.sub(r"\d+ (?:(?:required |keyword-only )?(?:positional |keyword )?arguments?\b|were given|was given)",
                     "", message or "")
    for number in dict.fromkeys(re.findall(r"(?<![\w.])(\d+)(?![\w.])", message)):
        names = [name for name, value in sizes.items() if _numeric(value) and str(value) == number]
        if len(names) == 1:  # the numbers are distinct already (dict.fromkeys)
            said.append((number, names[0]))
    if not said:
        return ""
    parts = [f"{number} is {name}" for number, name in said[:4]]
    return (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) + " in this call"
