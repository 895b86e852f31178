"""diagnosis.condition on generated observations: a feature that decides which cases fail is told, and no
condition is told where none separates the passing cases from the failing ones (issue 12)."""

from hypothesis import given, strategies as st

from autograder.core.diagnosis import condition, separating_features, sizes_in_error

VALUES = {"lengths": ["Lq == Lk", "Lq != Lk"], "dtype": ["dtype float32", "dtype float64"],
          "heads": ["one head", "several heads"]}

cases = st.lists(st.fixed_dictionaries({name: st.sampled_from(values) for name, values in VALUES.items()}),
                 min_size=3, max_size=12)


@given(cases, st.sampled_from(sorted(VALUES)), st.booleans())
def test_a_feature_that_decides_the_failures_is_told(features, deciding, raised):
    failing = VALUES[deciding][1]
    observations = [(f, f[deciding] == failing, raised) for f in features]
    passed = {f[deciding] for f, failed, _ in observations if not failed}
    if not passed or passed == {f[deciding] for f in features}:
        return  # every case passes, or every one fails: nothing to separate
    found = separating_features(observations)
    assert deciding in [name for name, *_ in found]
    said = condition(observations, observations)
    assert failing in said and ("raises" in said) == raised


@given(cases, st.lists(st.booleans(), min_size=12, max_size=12))
def test_whatever_is_told_is_true_of_every_case(features, failures):
    observations = [(f, failed, False) for f, failed in zip(features, failures)]
    for name, kind, good, bad in separating_features(observations):
        assert kind == "set" and not set(good) & set(bad)
        assert all((f[name] in bad) == failed for f, failed, _ in observations)


@given(st.dictionaries(st.sampled_from(["Lq", "Lk", "H", "dh"]), st.integers(1, 40), min_size=1))
def test_the_sizes_an_error_quotes_are_named_only_when_one_size_has_that_value(sizes):
    message = "The size of tensor a (" + ") must match the size of tensor b (".join(map(str, sizes.values())) + ")"
    said = sizes_in_error(message, sizes)
    claims = [part.split(" is ") for part in said.removesuffix(" in this call").replace(" and ", ", ").split(", ")
              if part]
    for value, name in claims:  # every claim is true, and names the one size with that value
        assert sizes[name] == int(value) and list(sizes.values()).count(int(value)) == 1
    unique = [name for name, value in sizes.items() if list(sizes.values()).count(value) == 1]
    assert len(claims) == min(len(unique), 4)


ORDERS = ["Lq < Lk", "Lq == Lk", "Lq > Lk"]


@given(st.lists(st.sampled_from(ORDERS), min_size=3, max_size=12), st.sets(st.sampled_from(ORDERS), min_size=1,
                                                                            max_size=2))
def test_a_hint_is_said_for_exactly_the_failing_levels(orders, failing):
    """A hint keyed by the failing levels (one, or a tuple of several in order) is said; one keyed by a single
    level among several failing ones is not: it would point at one of them only."""
    observations = [({"lengths": order}, order in failing, False) for order in orders]
    if len({failed for _, failed, _ in observations}) < 2:
        return
    told = {order for order in orders if order in failing}
    key = next(iter(told)) if len(told) == 1 else tuple(sorted(told))
    hints = {("lengths", key): "THE HINT", **{("lengths", one): f"ONE OF {one}" for one in ORDERS if len(told) > 1}}
    said = condition(observations, hints=hints)
    assert "THE HINT" in said and "ONE OF" not in said, said


def _takes(a, b, *, c=None):
    return a


@given(st.integers(0, 6), st.dictionaries(st.sampled_from(["Lq", "Lk", "H", "max_exact"]), st.integers(0, 8),
                                           min_size=1))
def test_a_count_of_arguments_is_never_taken_for_a_size(count, sizes):
    """Python's own message for a call with the wrong number of arguments quotes counts, not sizes (before: "4 is
    max_exact in this call" for "takes 1 positional argument but 4 were given")."""
    try:
        _takes(*range(count))
        return
    except TypeError as error:
        message = str(error)
    assert sizes_in_error(message, sizes) == "", message
