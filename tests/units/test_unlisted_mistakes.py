"""Mistakes the grader has never been told about, and the diagnosis each must get (issue 12).

None of these is taken from the maintainers' held-out set. Two sets, each the reference with one function
replaced:

* ``VARIANTS``, written for this file, none in a task's list of known mistakes (autograder/units/<unit>/cases/<task>.py);
  the grader's diagnosis was built against them.
* ``BLIND_VARIANTS`` (tests/helpers/unlisted_variants_blind.py), written afterwards by someone who had not read the
  grader, as a held-out check. Measured first as written: 22 of 24 caught (two changed their inputs in place
  and returned the right values), 18 of 24 diagnosed. The grader then learnt to catch a change of the inputs
  and to tell values in another order, -inf entries, a detached weight and a variance given as the standard
  deviation; the figures asserted below are after that.

The grader must catch each variant (the task loses points), must never name a wrong cause (a "Likely
mistake:" line, where one is given, must say what the variant does), and should say *where* or *how* the
output goes wrong: the issue's figure is at least 9 in 10 variants whose feedback names the mistake, or the
condition and the relation of compare.relation and diagnosis.condition.
"""

import re
import textwrap

import pytest

from autograder.core.grade import Grader
from unlisted_variants_blind import BLIND_VARIANTS
from conftest import UNIT

# name: (task, the replacement, what the feedback of the task's failed tests must say: a regex; None where
# nothing simple can be said, counted against the 9 in 10)
VARIANTS = {
    # --- sinusoidal_table --------------------------------------------------------------------------------
    "sinusoidal_half_precision_angles": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            position = torch.arange(num_positions, device=device, dtype=torch.float16)
            two_k = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)
            frequency = (base ** (-two_k / d_model)).to(torch.float16)
            angle = (position[:, None] * frequency[None, :]).float()
            return torch.stack((angle.sin(), angle.cos()), dim=-1).reshape(num_positions, d_model).to(dtype)
        """, r"wrong from position \d+ on|up to num_positions"),
    "sinusoidal_half_precision_positions": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            position = torch.arange(num_positions, dtype=torch.float16).double()  # exact up to 2048 only
            two_k = torch.arange(0, d_model, 2, dtype=torch.float64)
            angle = position[:, None] * base ** (-two_k / d_model)
            return torch.stack((angle.sin(), angle.cos()), dim=-1).reshape(num_positions, d_model).to(dtype)
        """, r"right for position 0\.\.2048, wrong at \d+ of the \d+ from position 2049 on.*usually one of precision"),
    "sinusoidal_always_float32": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            return _reference_sinusoidal_table(num_positions, d_model, base, device=device)
        """, r"only the dtype differs"),
    "sinusoidal_negative_cosine": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            table = _reference_sinusoidal_table(num_positions, d_model, base, device=device, dtype=dtype)
            table[:, 1::2] = -table[:, 1::2]
            return table
        """, r"odd column"),
    "sinusoidal_base_ignored": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            return _reference_sinusoidal_table(num_positions, d_model, device=device, dtype=dtype)
        """, r"base"),
    "sinusoidal_exponent_over_d_minus_2": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            position = torch.arange(num_positions, dtype=torch.float64)[:, None]
            two_k = torch.arange(0, d_model, 2, dtype=torch.float64)
            angle = position * base ** (-two_k / max(d_model - 2, 1))
            return torch.stack((angle.sin(), angle.cos()), -1).reshape(num_positions, d_model).to(dtype)
        """, r"column 0\.\.1, wrong from column 2 on|position 0, wrong from position 1 on"),
    "sinusoidal_angles_in_degrees": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            position = torch.arange(num_positions, dtype=torch.float64)[:, None]
            angle = torch.deg2rad(position * base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model))
            return torch.stack((angle.sin(), angle.cos()), -1).reshape(num_positions, d_model).to(dtype)
        """, r"right for position 0, wrong from position 1 on"),
    "sinusoidal_positions_backwards": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            return _reference_sinusoidal_table(num_positions, d_model, base, device=device, dtype=dtype).flip(0)
        """, r"reversed along the position axis"),
    "sinusoidal_transposed": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            return _reference_sinusoidal_table(num_positions, d_model, base, device=device, dtype=dtype).T
        """, r"axes in another order"),
    # --- LearnedPositionalEmbedding ------------------------------------------------------------------------
    "learned_concat_without_expand": ("learned", """
        class LearnedPositionalEmbedding(_ReferenceLearned):
            def forward(self, x):
                if self.mode == "add":
                    return super().forward(x)
                if x.shape[1] > self.max_len:
                    raise ValueError(f"L={x.shape[1]} > max_len={self.max_len}")
                return torch.cat((x, self.weight[: x.shape[1]].unsqueeze(0)), dim=-1)
        """, r"batch > 1"),
    "learned_add_twice": ("learned", """
        class LearnedPositionalEmbedding(_ReferenceLearned):
            def forward(self, x):
                out = super().forward(x)
                if self.mode == "add":
                    return out + self.weight[: x.shape[1]]
                return out
        """, r"the term weight\[:L\] enters with the factor 2"),
    # --- clipped_relative_positions ----------------------------------------------------------------------
    "relative_positions_query_length_twice": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            return _reference_clipped_relative_positions(length_q, length_q, max_relative_position, device=device)
        """, r"Lq [<>] Lk|key axis"),
    "relative_positions_clip_one_short": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            k = max_relative_position
            d = torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None]
            return d.clamp(-max(k - 1, 0), max(k - 1, 0)) + k
        """, r"\|j - i\| up to"),
    "relative_positions_absolute_distance": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            k = max_relative_position
            d = torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None]
            return d.abs().clamp(max=k) + k
        """, r"j < i"),
    "relative_positions_float_index": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            return _reference_clipped_relative_positions(length_q, length_k, max_relative_position).float()
        """, r"only the dtype differs"),
    "relative_positions_shifted_by_k_plus_one": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            return _reference_clipped_relative_positions(length_q, length_k, max_relative_position) + 1
        """, r"1 too high"),
    # --- shaw_scores -------------------------------------------------------------------------------------
    "shaw_scaled_twice": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            used = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
            return _reference_shaw_scores(q, k, rel_k, max_relative_position, scale=scale) * used
        """, r"factor (1/sqrt\(dh\)|scale)"),
    "shaw_index_from_query_length": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
            Lq = q.shape[-2]
            index = clipped_relative_positions(Lq, Lq, max_relative_position)
            index = index.expand(*q.shape[:-2], Lq, k.shape[-2])
            per_distance = q @ rel_k.to(q.dtype).T
            return (q @ k.transpose(-2, -1) + per_distance.gather(-1, index)) * scale
        """, r"Lq [<>] Lk"),
    "shaw_relative_term_of_head_zero": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
            index = clipped_relative_positions(q.shape[-2], k.shape[-2], max_relative_position)
            relative = torch.einsum("bqd,qkd->bqk", q[:, 0], rel_k.to(q.dtype)[index])[:, None]
            return (q @ k.transpose(-2, -1) + relative) * scale
        """, r"head 0|one head"),
    "shaw_computed_in_float32": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            out = _reference_shaw_scores(q.float(), k.float(), rel_k.float(), max_relative_position, scale=scale)
            return out.to(q.dtype)
        """, r"float64"),
    "shaw_scale_from_key_length": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            scale = 1 / math.sqrt(k.shape[-2]) if scale is None else scale
            return _reference_shaw_scores(q, k, rel_k, max_relative_position, scale=scale)
        """, r"constant factor|default scale"),
    "shaw_relative_term_dropped": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
            return scale * (q @ k.transpose(-2, -1))
        """, r"the term q \. rel_k (is missing|enters with the factor)"),
    # --- t5_relative_position_bucket -----------------------------------------------------------------------
    "t5_bucket_rounds_the_log": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            _check_buckets(bidirectional, num_buckets, max_distance)
            n = num_buckets // 2 if bidirectional else num_buckets
            max_exact = n // 2
            if bidirectional:
                offset, distance = (relative_position > 0).long() * n, relative_position.abs()
            else:
                offset, distance = 0, (-relative_position).clamp(min=0)
            log = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
            far = (max_exact + log.round().long()).clamp(max=n - 1)
            return offset + torch.where(distance < max_exact, distance, far)
        """, r"one too high|Off by one"),
    "t5_bucket_exact_part_not_halved": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            _check_buckets(bidirectional, num_buckets, max_distance)
            n = num_buckets // 2 if bidirectional else num_buckets
            max_exact = num_buckets // 4
            if bidirectional:
                offset, distance = (relative_position > 0).long() * n, relative_position.abs()
            else:
                offset, distance = 0, (-relative_position).clamp(min=0)
            log = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
            far = (max_exact + log.long()).clamp(max=n - 1)
            return offset + torch.where(distance < max_exact, distance, far)
        """, r"bidirectional=False|relative_position\|? up to"),
    "t5_bucket_causal_future_not_clamped": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            if bidirectional:
                return _reference_t5_relative_position_bucket(relative_position, True, num_buckets, max_distance)
            _check_buckets(bidirectional, num_buckets, max_distance)
            distance = -relative_position
            max_exact = num_buckets // 2
            log = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
            far = (max_exact + (log * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
            return torch.where(distance < max_exact, distance, far)
        """, r"bidirectional=False|relative_position up to 0"),
    "t5_bucket_log10_ratio": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            _check_buckets(bidirectional, num_buckets, max_distance)
            n = num_buckets // 2 if bidirectional else num_buckets
            max_exact = n // 2
            if bidirectional:
                offset, distance = (relative_position > 0).long() * n, relative_position.abs()
            else:
                offset, distance = 0, (-relative_position).clamp(min=0)
            log = torch.log(distance.float() / max_exact) / math.log10(max_distance / max_exact) * (n - max_exact)
            far = (max_exact + log.long()).clamp(max=n - 1)
            return offset + torch.where(distance < max_exact, distance, far)
        """, r"\|relative_position\| (up to|from) \d+"),
    "t5_bucket_sixteen_written_in": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            return _reference_t5_relative_position_bucket(relative_position, bidirectional, 32, max_distance)
        """, r"settings passed|with num_buckets=32 and fails"),
    "t5_bucket_upper_half_one_late": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            buckets = _reference_t5_relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)
            return buckets + ((relative_position > 0) & bidirectional).long()
        """, r"relative_position up to 0, wrong from 1 on|one too high"),
    # --- t5_bias -------------------------------------------------------------------------------------------
    "t5_bias_key_axis_of_query_length": ("t5_bias", """
        def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
            return _reference_t5_bias(length_q, length_q, bias_table, bidirectional=bidirectional,
                                      num_buckets=num_buckets, max_distance=max_distance)
        """, r"Lq [<>] Lk|key axis"),
    "t5_bias_one_head_squeezed": ("t5_bias", """
        def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
            grid = torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None]
            buckets = t5_relative_position_bucket(grid, bidirectional=bidirectional, num_buckets=num_buckets,
                                                  max_distance=max_distance)
            return bias_table[buckets].squeeze().permute(2, 0, 1).unsqueeze(0)
        """, r"one head|a size of 1"),
    "t5_bias_offset_of_key_length": ("t5_bias", """
        def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
            offsets = torch.arange(-(length_q - 1), length_k)
            buckets = t5_relative_position_bucket(offsets, bidirectional=bidirectional, num_buckets=num_buckets,
                                                  max_distance=max_distance)
            per_offset = bias_table[buckets].transpose(0, 1)
            where = torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None] + (length_k - 1)
            return per_offset[:, where.clamp(max=per_offset.shape[1] - 1)].unsqueeze(0)
        """, r"Lq [<>] Lk"),
    "t5_bias_negated": ("t5_bias", """
        def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
            return -_reference_t5_bias(length_q, length_k, bias_table, bidirectional=bidirectional,
                                       num_buckets=num_buckets, max_distance=max_distance)
        """, r"opposite sign"),
    # --- biased_scores -----------------------------------------------------------------------------------
    "biased_scores_scale_from_key_length": ("biased_scores", """
        def biased_scores(q, k, bias, *, scale=None):
            scale = 1 / math.sqrt(k.shape[-2]) if scale is None else scale
            return scale * (q @ k.transpose(-2, -1)) + bias
        """, r"the term q @ k\^T enters with the factor"),
    "biased_scores_softmax_applied": ("biased_scores", """
        def biased_scores(q, k, bias, *, scale=None):
            return _reference_biased_scores(q, k, bias, scale=scale).softmax(-1)
        """, r"softmax"),
    "biased_scores_bias_unsqueezed": ("biased_scores", """
        def biased_scores(q, k, bias, *, scale=None):
            return _reference_biased_scores(q, k, bias.unsqueeze(0), scale=scale)
        """, r"bias \(Lq, Lk\)|only the shape differs"),
    "biased_scores_bias_subtracted": ("biased_scores", """
        def biased_scores(q, k, bias, *, scale=None):
            scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
            return scale * (q @ k.transpose(-2, -1)) - bias
        """, r"the term bias enters with the factor -1"),
}

# The reference under other names, for the variants to call, and the argument checks they keep.
PRELUDE = """

_reference_sinusoidal_table = sinusoidal_table
_ReferenceLearned = LearnedPositionalEmbedding
_reference_clipped_relative_positions = clipped_relative_positions
_reference_shaw_scores = shaw_scores
_reference_t5_relative_position_bucket = t5_relative_position_bucket
_reference_t5_bias = t5_bias
_reference_biased_scores = biased_scores


def _check(num_positions, d_model):
    if d_model <= 0 or d_model % 2 or num_positions < 0:
        raise ValueError(f"bad sizes num_positions={num_positions}, d_model={d_model}")


def _check_buckets(bidirectional, num_buckets, max_distance):
    n = num_buckets // 2 if bidirectional else num_buckets
    if n // 2 == 0 or max_distance <= n // 2:
        raise ValueError(f"num_buckets={num_buckets}, max_distance={max_distance}")
"""

DIAGNOSES = ("Likely mistake:", "How it goes wrong:", "When it goes wrong:", "only the dtype differs",
             "only the shape differs", "in place. A function must leave its inputs",
             "right to float32's precision only")  # a cause named: a float32 step inside a float64 call

# What the feedback of each blind variant must say (a regex over its task's failed tests), and the known
# mistake it may be told, where it is one.
BLIND_EXPECTED = {
    "sin_precedence_slip": r"right for position 0, wrong from position 1 on",
    "sin_stack_wrong_axis": r"exactly the expected values, but in another order",
    "sin_log10_in_exp": r"right for column 0\.\.1, wrong from column 2 on",
    "sin_half_precision_angles": r"wrong from position 1 on|wrong only at position",
    "learned_std_squared": r"variance was given where the standard deviation belongs",
    "learned_detached_rows": r"not connected to weight",
    "learned_in_place_add": r"changed its first argument \(x\) in place",
    "relpos_clamp_upper_2k_plus_1": r"one too high",
    "relpos_keys_use_length_q": r"Lq [<>] Lk",
    "relpos_int32_result": r"only the dtype differs",
    "shaw_default_scale_sqrt_lk": r"constant factor",
    "shaw_relative_term_from_keys": r"How it goes wrong",
    "shaw_scales_q_in_place": r"changed its first argument \(q\) in place",
    "shaw_causal_mask_added": r"-inf where the key index is above the query index",
    "t5_bucket_round_instead_of_trunc": r"off by one at \d+ of \d+ entries",
    "t5_bucket_causal_abs_distance": r"future keys \(relative_position > 0\) all go to bucket 0",
    "t5_bucket_offset_includes_zero": r"wrong for \|relative_position\| up to 0, right from 1 on",
    "t5_bucket_log_of_max_distance_only": r"wrong only for (\|relative_position\||relative_position) from",
    "t5_bias_permute_reversed": r"transposed|axes in another order",
    "t5_bias_forced_float32": r"dtype float64",
    "t5_bias_squeeze_drops_axes": r"only the shape differs|a size of 1",
    "biased_returns_softmax": r"softmax of the expected output",
    "biased_scale_uses_model_width": r"the term q @ k\^T enters with the factor",
    "biased_einsum_output_transposed": r"off the diagonal",
}
# The blind variants that are, after all, one of the grader's known mistakes: for these a name is right.
BLIND_KNOWN = {"t5_bucket_causal_abs_distance", "learned_std_squared"}
# Named by the error model (autograder/core/mutants.py: an edit of the reference whose output is the variant's on
# every case) or from the outcomes' form (core/form_slips.py), each checked by hand against the variant's code.
# Words of the name.
MODEL_NAMED = {
    "learned_in_place_add": "`x.add_(rows)` where the reference has `x + rows`",
    "learned_concat_without_expand": "the step `.expand(...)` left out",
    "relative_positions_query_length_twice": "`length_q` where the formula uses `length_k`",
    "relpos_keys_use_length_q": "`length_q` where the formula uses `length_k`",
    "relpos_int32_result": "the result cast to int32",
    "sin_stack_wrong_axis": "`torch.stack((angle.sin(), angle.cos()), dim=0)` where the reference has",
    "sinusoidal_always_float32": "the result cast to float32",
    "sinusoidal_base_ignored": "the argument `base` ignored",
    "t5_bias_forced_float32": "the result cast to float32",
    "t5_bucket_causal_future_not_clamped": "the step `.clamp(...)` left out",
    "t5_bucket_log10_ratio": "log10 where the formula takes the natural log",
    "t5_bucket_log_of_max_distance_only": "`max_distance` where the reference has `max_distance / max_exact`",
    "t5_bucket_offset_includes_zero": "`relative_position >= 0` where the reference has `relative_position > 0`",
    "t5_bucket_sixteen_written_in": "the argument `num_buckets` ignored",
    # Named from the outcomes' form (autograder/core/form_slips.py): the values right, an input changed.
    "shaw_scales_q_in_place": "your function changes `q` in place",
    "sinusoidal_transposed": "laid out (column, position) where the reference's is (position, column)",
    "t5_bias_permute_reversed": "laid out (batch, head, key, query) where the reference's is (batch, head, query, key)",
    "biased_returns_softmax": "your output is the softmax of the reference's values over the key axis",
    "biased_scores_softmax_applied": "your output is the softmax of the reference's values over the key axis",
}
ALL_VARIANTS = {**{name: (task, body, expected) for name, (task, body, expected) in VARIANTS.items()},
                **{name: (task, body, BLIND_EXPECTED[name]) for name, (task, body) in BLIND_VARIANTS.items()}}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, reference_text):
    """Every variant graded once: {name: (task, expected, the task's failed tests)}."""
    grader = Grader(UNIT, sandbox="auto", timing_mode="give")  # the timing tier is not what these are about
    folder = tmp_path_factory.mktemp("unlisted")
    found = {}
    try:
        for name, (task, body, expected) in ALL_VARIANTS.items():
            path = folder / f"{name}.py"
            path.write_text(reference_text + PRELUDE + "\n\n" + textwrap.dedent(body))
            result = grader.grade(path)
            found[name] = task, expected, [test for test in result.tests if test.task == task and not test.passed]
    finally:
        grader.close()
    return found


def _diagnosed(outputs):
    return any(marker in output for output in outputs for marker in DIAGNOSES)


def test_every_blind_variant_has_its_expected_diagnosis_written_down():
    assert set(BLIND_EXPECTED) == set(BLIND_VARIANTS) and not set(BLIND_VARIANTS) & set(VARIANTS)


@pytest.mark.parametrize("name", sorted(ALL_VARIANTS))
def test_an_unlisted_mistake_is_caught_and_told_where_it_goes_wrong(graded, name):
    task, expected, failed = graded[name]
    assert failed, f"{name} scores full marks on {task}"
    outputs = [test.output for test in failed]
    assert not any("grader could not check" in output or "grader failed" in output for output in outputs), outputs
    if expected is not None:
        assert any(re.search(expected, output) for output in outputs), "\n---\n".join(outputs)


@pytest.mark.parametrize("name", sorted(ALL_VARIANTS))
def test_no_unlisted_mistake_is_given_a_known_mistake_s_name(graded, name):
    """None of these is a declared mistake (but for BLIND_KNOWN), so a "Likely mistake:" line would be a wrong
    cause, unless it is the error model's name for it (MODEL_NAMED); for those, the name given is the one the
    expected pattern (or MODEL_NAMED) says."""
    _, expected, failed = graded[name]
    for test in failed:
        named = [line for line in test.output.splitlines() if line.startswith("Likely mistake:")]
        if name in BLIND_KNOWN:
            assert all(re.search(expected, line) for line in named), test.output
        elif name in MODEL_NAMED:
            assert all(MODEL_NAMED[name] in line for line in named), test.output
        else:
            assert not named, test.output


@pytest.mark.parametrize("variants", [VARIANTS, BLIND_VARIANTS], ids=["written_for_the_grader", "blind"])
def test_nine_in_ten_unlisted_mistakes_get_a_diagnosis(graded, variants):
    told = [name for name in variants if _diagnosed(test.output for test in graded[name][2])]
    missed = sorted(set(variants) - set(told))
    assert len(told) >= 0.9 * len(variants), f"{len(told)} of {len(variants)} diagnosed; not: {missed}"
    # the variants marked None are the ones this file expects no diagnosis for: if one gets one, say so here
    unexpected = [name for name in missed if ALL_VARIANTS[name][2] is not None]
    assert not unexpected, unexpected
