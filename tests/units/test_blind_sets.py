"""Held-out sets, one per unit: submissions written by people who had not read the grader (tests/submissions/blind/).

Each file defines one function (or the learned module) of its unit, appended after the reference; its first line
says what it does. ``alternatives/``: correct formulations, full marks. ``mistakes/``: a slip each, as students
make them: it loses points in its own task only, and the feedback says what is wrong, by the mistake's name where
the grader knows it (only the right name: NAMED lists every file whose feedback may name one), else where and how
the output goes wrong, or what is wrong with its form (a dtype, a shape, an argument it should refuse, an input
changed in place).

Measured as written (2026-12-02), before the grader learnt anything from them:

* positional_encodings: 15 alternatives, all full marks; 45 mistakes, 43 caught, 42 of them told what is wrong
  (17 by name). Then: int32 positions in t5_bucket's cases, and the two logs of different bases named.
* rotary_alibi (the unit's second blind set; its first is in tests/submissions/rotary_alibi/, *__blind_*):
  17 alternatives, all full marks; 39 mistakes, 33 caught, each told what is wrong (12 by name). Then: float32
  and far fractional float64 positions in scaled_positions' cases, a float32 step in a float64 result told.

* long_context (2026-12-04, by a helper who read only the released student folder): 14 alternatives, all full
  marks; 32 mistakes, 27 caught. Then: one of them (yarn_attention_scale__int_one_at_factor_one, the int 1 at
  factor 1) moved to the alternatives, accepted (a Python number of the right value); argument checks at short
  lengths, a negative mscale, positions per sequence and head, the meta device (frequencies on the CPU) and a
  YaRN bound past dh/2 - 1 added to the cases; a failure told against the stand-in's answer where the output is
  near it; a mistake whose output others give too named with them; the angles in float32 named. Every one of the
  31 caught, 15 by name, the others told where, when or how.

* With the error model (2026-12-05, autograder/core/mutants.py: the reference edited one step at a time, an edit
  whose outcome is the student's on every case named): of the 110 mistakes, 69 are named (48 before), each name
  checked against the file's first line; the alternatives keep full marks. Not named: most mistakes of form
  (a layout, a reshape, a softmax applied, work in place on an input) that no single or paired edit of the
  reference gives, and checks narrower or wider than the reference's in two places at once.

* With names of form (2026-12-05, autograder/core/form_slips.py: a case that passes once the input it changed is
  forgotten, or once its result is cast to the reference's dtype, and a dtype rule read off every case): 77 of the
  110 named (the 69, a float32 result the model now names as a cast, and six of form: three inputs changed in
  place, three dtypes). A mistake whose message the check reads is no longer named by an edit that raises the
  same exception with the reference's message (learned__message_without_values). With refusals named by the
  kinds of number the failing calls pass and no call of the other side does (NaN, infinite, zero, negative,
  between 0 and 1, odd; never a value), a refusal's message short of the values its check reads, two more dtype
  rules (kept where floating, float32 from integers; float64 only from float64) and a task wrong on the meta
  device only (a tensor made on the CPU): 86 of 110 (78%), each name checked against the file's first line.
  With layouts (2026-12-06: the reference's values with the axes in another order, reshaped in another order's
  memory order, in another shape, in halves where pairs are interleaved, or repeated along an axis), and a
  refusal left out where some calls raise another exception from deeper in the computation, and the model's
  edit of a number argument with a default into its reciprocal (a scale used as a divisor): 91 of 110 (83%).
  With (2026-12-06) NaN and infinity read as one outcome where both results are not finite (a scale of 0 divides
  by zero in another order), float32 results compared to float32's precision, the same rounding slip made twice
  on one line (floor and ceil both rounded), a softmax past the result, an input written into with wrong values,
  and the learned table's own checks naming N(0, 1) and a plain tensor: 99 of 110 (90%).

* vision_positions (2026-12-07, by a helper who read only the released module's docstrings and the second unit's
  given apply_rotary): 20 alternatives, all full marks; 38 mistakes, 36 caught as written. Then: a mode that
  F.interpolate itself takes (lanczos) or refuses with another exception (linear), and a one-column bias table
  broadcast over the heads, added to the invalid arguments; a float64 table resampled at its own grid named as that
  (before, as both grids read (w, h), whose output it shares there); the default scale 1/dh declared. All 38
  caught, 32 by name, the others told where, when or how.

Left out of the files here, and why: two written after Hugging Face's and the ALiBi authors' code (the kit's code
is its own); two that build a tensor on the CPU where the input is on another device (caught only by a grader
with a GPU, where the cases run on CUDA: tests/core/test_timing_tier.py, test_rotary_alibi_grading.py); angles in
float32 (an accepted formulation: the tolerance of every float32 formulation takes it); a float16 rotation
computed in float16 (within an ulp of the float32 one: no tolerance tells them apart).
"""

from pathlib import Path

import pytest

from autograder.core import units
from autograder.core.grade import Grader
from autograder.core.report import headline

FOLDER = Path(__file__).parents[1] / "submissions" / "blind"
UNITS = ("positional_encodings", "rotary_alibi", "long_context", "vision_positions")
FILES = {(unit, kind): sorted((FOLDER / unit / kind).glob("*.py")) for unit in UNITS
         for kind in ("alternatives", "mistakes")}
# The mistakes the feedback names, with words of the name: each is the mistake the file's first line says it makes.
NAMED = {
    "positional_encodings": {
        "biased_scores__applies_softmax": "your output is the softmax of the reference's values over the key axis",
        "shaw__divides_by_scale": "`1 / scale` in place of `scale`",
        "learned__std_one": "the weight is drawn from N(0, 1)",
        "learned__weight_not_parameter": "self.weight is a plain tensor, not an nn.Parameter",
        "biased_scores__default_scale_one_over_dh": "the scale is 1/dh",
        "biased_scores__scales_bias": "the scale multiplies the bias too",
        "learned__concat_positions_first": "the position vector comes first",
        "learned__length_check_off_by_one": "L == max_len is off by one",
        "relative_positions__i_minus_j": "the distance is i - j",
        "relative_positions__missing_shift": "the + k shift is missing",
        "shaw__i_minus_j": "picked by i - j",
        "shaw__scale_content_only": "the scale multiplies only q . k",
        "shaw__scale_relative_only": "the scale multiplies only the relative term",
        "sinusoidal__cos_first": "sin and cos are swapped",
        "sinusoidal__freq_k_not_2k": "k/d_model where the pair index k needs 2k/d_model",
        "sinusoidal__odd_column_own_frequency": "the cosine column 2k+1 uses the exponent (2k+1)/d_model",
        "sinusoidal__positions_from_one": "positions are counted from 1",
        "sinusoidal__split_halves": "the table is in halves",
        "t5_bias__i_minus_j": "the relative position is i - j",
        "t5_bias__ignores_bucket_options": "the settings are not passed on",
        "t5_bias__no_permute": "laid out (Lq, Lk, H)",
        "t5_bucket__causal_wrong_sign": "the past gets the buckets and the future bucket 0",
        "t5_bucket__log2_numerator": "the two logs have different bases",
        # Named by the error model (autograder/core/mutants.py): an edit of the reference with this output on every case.
        "learned__inplace_add": "`x.add_(rows)` where the reference has `x + rows`",
        "learned__no_length_check": "no check `if length > self.max_len: raise ...`",
        "relative_positions__assumes_square": "`length_q` where the formula uses `length_k`",
        "relative_positions__int32_output": "the result cast to int32",
        "sinusoidal__ignores_dtype": "the result cast to float32",
        "t5_bias__float32_buffer": "the result cast to float32",
        "t5_bias__missing_leading_axis": "the step `.unsqueeze(...)` left out",
        "t5_bucket__clamp_to_n": "`n` where the reference has `n - 1`",
        "t5_bucket__integer_log": "`distance.float() // max_exact` where the reference has `distance.float() / max_exact`",
        "t5_bucket__zero_in_upper_half": "`relative_position >= 0` where the reference has `relative_position > 0`",
        # Named from the outcomes' form (autograder/core/form_slips.py): values right, an input changed or a dtype.
        "biased_scores__scales_query_inplace": "your function changes `q` in place",
        "shaw__float64_output": "your result's dtype is always float64, where the reference's is `q`'s",
        "t5_bucket__keeps_input_dtype": "your result's dtype is `relative_position`'s dtype, where the reference's is "
                                        "always int64",
        "sinusoidal__zero_d_model_allowed": "where it should raise ValueError: for `d_model` negative or zero",
        "learned__message_without_values": "your ValueError's message does not give the values in conflict",
        "biased_scores__divides_by_scale": "`1 / scale` in place of `scale` (the argument used as a divisor",
        "t5_bias__permute_swaps_positions": "laid out (batch, head, key, query) where the reference's is (batch, "
                                            "head, query, key)",
    },
    "rotary_alibi": {
        "rope_scores__divides_by_scale": "`1 / scale` in place of `scale`",
        "rope_scores__upcasts_to_float32": "the result cast to float32",
        "apply_rotary__inplace_on_x": "your function writes into `x` in place",
        "alibi_bias__bloom_key_position": "BLOOM's form",
        # Named since the comparison matches an infinity only with the same infinity (before, -inf against -inf
        # failed every mistake's comparison, so none could be named).
        "alibi_bias__minus_inf_future": "the future keys get -inf",
        "alibi_bias__queries_aligned_to_end": "the last Lq of a square (Lk, Lk) bias",
        "alibi_bias__triu_instead_of_tril": "the other way (j - i)",
        "alibi_slopes__exponent_from_zero": "the powers start at 0",
        "alibi_slopes__formula_for_every_n": "used for every n",
        "alibi_slopes__next_power_up": "the next power of two",
        "alibi_slopes__odd_heads_wrong_half": "starting from the second ([1::2])",
        "apply_rotary__clockwise": "turns the wrong way",
        "rope_scores__default_queries_at_end": "the queries default to the last Lq",
        "rope_scores__layout_not_passed_to_keys": "different layouts",
        "rotary_angles__positions_cast_to_long": "fractional positions are cut to whole numbers",
        "rotary_angles__theta_without_2": "i/dh where pair i needs 2i/dh",
        "scaled_positions__float32_before_division": "divided in float32",
        # Named by the error model.
        "alibi_slopes__numpy_float64": "torch.float64 where the formula uses torch.float32",
        "apply_rotary__no_cast_back": "`out` where the reference has `out.to(x.dtype)`",
        "apply_rotary__always_float32": "`torch.float64 if not x.dtype == torch.float64 else torch.float32`",
        "apply_rotary__no_length_check": "no check `if positions.dim() == 0 or positions.shape[-1] != length: raise",
        "rope_scores__keys_use_query_positions": "`positions_q` where the formula uses `positions_k`",
        "rotary_angles__assert_not_valueerror": "an assert (AssertionError) where the function raises ValueError",
        "alibi_bias__float32_distances": "the result cast to float32",
        # Named from the outcomes' form.
        "scaled_positions__float_then_inplace": "your function changes `positions` in place",
        "alibi_slopes__while_loop_no_check": "where it should raise ValueError: for `num_heads` negative or zero",
        "scaled_positions__only_checks_sign": "where it should raise ValueError: for `factor` NaN or infinite",
        "scaled_positions__plain_division": "`positions`'s dtype where it is floating, else float32",
        "scaled_positions__rejects_factor_below_one": "raises ValueError where the reference returns a result: for "
                                                      "`factor` between 0 and 1",
        "alibi_bias__heads_last": "laid out (batch, query, key, head) where the reference's is (batch, head, query, "
                                  "key)",
        "rotary_angles__repeated_to_dh": "the reference's values 2 times over along the pair axis",
    },
    "long_context": {
        "yarn_inverse_frequencies__round_instead_of_floor_ceil":
            "`round(low)` where the reference has `math.floor(low)` (rounded to nearest where the formula rounds down), "
            "and `round(high)`",
        "dynamic_ntk_inverse_frequencies__offset_dropped": "the shift - (factor - 1) is missing",
        "ntk_inverse_frequencies__only_head_dim_2_rejected": "returns a result (or raises RuntimeError) where it "
                                                             "should raise ValueError: for `head_dim` negative or zero",
        # Past (2 - 1/factor) L a ceiling at the factor gives static NTK's frequencies: both are named.
        "dynamic_ntk_inverse_frequencies__s_capped_at_factor": "s stops at the factor",
        "llama3_inverse_frequencies__smooth_reversed": "the blend runs the wrong way",
        "llama3_inverse_frequencies__wavelength_without_2pi": "the wavelength is 1 / theta_i",
        "ntk_inverse_frequencies__exponent_inverted": "factor ** ((dh - 2) / dh)",
        # dh // (dh - 2) is 1 for every dh above 4: the base times the factor itself.
        "ntk_inverse_frequencies__integer_division_exponent": "multiplied by the factor itself",
        "scaled_rope_scores__angles_in_float32": "are computed in float32",
        "scaled_rope_scores__interleaved_pairs": "the interleaved layout",
        "scaled_rope_scores__scale_on_q_and_k_each": "multiplies q and k each",
        "yarn_attention_scale__sqrt_not_squared": "this is sqrt(1/t)",
        "yarn_inverse_frequencies__bounds_swapped": "the ramp's bounds are swapped",
        "yarn_inverse_frequencies__dimension_index_in_pair_formula": "the bounds are dimensions",
        "yarn_inverse_frequencies__high_clamped_at_last_pair": "high is clamped at dh/2 - 1",
        "yarn_inverse_frequencies__low_not_clamped_at_zero": "the bounds are not clamped",
        "yarn_inverse_frequencies__no_guard_for_equal_bounds": "where low == high the ramp divides by zero",
        # Named by the error model.
        "dynamic_ntk_inverse_frequencies__length_minus_one": "`length - 1` where the formula has `length`",
        "llama3_inverse_frequencies__equal_freq_factors_accepted": "`0 < low_freq_factor <= high_freq_factor < math.inf`",
        "llama3_inverse_frequencies__head_dim_zero_accepted": "the condition `head_dim <= 0` left out",
        "ntk_inverse_frequencies__base_finiteness_unchecked": "`1 < base <= math.inf`",
        # Read as the first axis's length: the positions of every case are 1-D or have a first axis other than L.
        "scaled_rope_scores__positions_must_be_one_dimensional": "`positions.shape[0]` where the reference has",
        "yarn_inverse_frequencies__equal_betas_rejected": "`0 < beta_slow < beta_fast < math.inf`",
        # Named from the outcomes' form.
        # Both rules hold on every case (float32 from half precision and from float32): the first one read is said.
        "scaled_rope_scores__half_input_returns_float32": "float64 where `q` is float64, else float32, where the "
                                                          "reference's is `q`'s and `k`'s dtype",
        "scaled_rope_scores__default_positions_on_cpu": "a tensor your function makes is on the CPU, not on the "
                                                        "inputs' device",
        "scaled_rope_scores__rotates_q_in_place": "your function changes `q` and `k` in place",
        "yarn_attention_scale__mscale_must_be_positive": "raises ValueError where the reference returns a result: "
                                                         "for `mscale` negative",
        "yarn_attention_scale__mscale_only_nan_checked": "where it should raise ValueError: for `mscale` infinite",
    },
    "vision_positions": {
        "resize_learned_grid__align_corners_true": "align_corners=True: the convention is align_corners=False",
        "resize_learned_grid__antialias_not_passed": "antialias is not applied where antialias=True asks for it",
        "resize_learned_grid__class_token_inside_grid": "the class token is resampled as patch (0, 0)",
        "resize_learned_grid__column_order_reshape": "the old grid is read column by column",
        "resize_learned_grid__same_grid_not_short_circuited": "the same grid is resampled instead of copied",
        "rope_2d__angles_exponent_2i_over_dh": "each half uses the frequencies of a whole head",
        "rope_2d__angles_pairs_alternate_axes": "the pairs alternate between the axes",
        "rope_2d__angles_repeated_to_head_dim": "2 times in a row along the pair axis",
        "rope_2d__angles_rows_columns_swapped": "the column turns the first half of the head and the row the second",
        "rope_2d__apply_pairs_alternate_axes": "the pairs alternate between the axes",
        "rope_2d__apply_prefix_tokens_rotated": "the prefix tokens are turned as if they were patches",
        "rope_2d__apply_rotate_half_layout": "each half is turned in the rotate-half layout",
        "rope_2d__apply_rows_columns_swapped": "the column turns the first half of the head and the row the second",
        "sincos_2d_table__exponent_2k_over_dim": "the frequencies use the exponent 2k/dim",
        "sincos_2d_table__mae_meshgrid_xy_column_first": "the halves are swapped: the column's table comes first",
        "sincos_2d_table__sin_cos_interleaved": "the sines and cosines are interleaved in each half",
        "sincos_2d_table__timm_quarter_order": "the quarters are in timm's order",
        "window_relative_index__key_minus_query": "the index is the key's patch minus the query's",
        "window_relative_index__multiplier_2wh_minus_1": "the row offset is multiplied by 2Wh - 1",
        "window_relative_index__multiplier_2ww": "the row offset is multiplied by 2Ww, not 2Ww - 1",
        "window_relative_index__not_shifted": "the offsets are not shifted",
        "window_relative_index__shift_by_w_not_w_minus_1": "the offsets are shifted by W, not W - 1",
        "window_scores__bias_transposed_index": "the bias is transposed",
        "window_scores__default_scale_one_over_dh": "the default scale is 1 / dh",
        "window_scores__scale_on_bias_too": "the scale multiplies the bias too",
        "window_scores__table_index_not_permuted": "bias_table[index] is (N, N, H) and was reshaped to (H, N, N)",
        # Named by the error model.
        "resize_learned_grid__half_interpolated_in_half": "`patches` where the reference has `patches.float()`",
        "resize_learned_grid__mode_not_validated": "no check `if mode not in MODES: raise ...`",
        "resize_learned_grid__not_rounded_back": "the result cast to float32",
        # Named from the outcomes' form.
        "rope_2d__apply_modifies_x_in_place": "your function changes `x`",
        "sincos_2d_table__device_ignored": "a tensor your function makes is on the CPU, not on the inputs' device",
        "window_scores__q_scaled_in_place": "your function changes `q` in place",
    },
}
# BLOOM's form earns the causal tests (the rubric's decision) and fails without the mask.
ACCEPTED = {"alibi_bias__bloom_key_position": {"alibi_bias_bidirectional"}}
# What a failure says when it names no mistake.
TOLD = ("How it goes wrong", "When it goes wrong", "only the dtype differs", "only the shape differs", "on the meta device",
        "float32's precision only", "should raise", " raised ", "in place", "standard deviation", "nn.Parameter")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    results = {}
    for unit_name in UNITS:
        unit = units.get(unit_name)
        reference = unit.finished_reference  # the reference as a finished file reads (a unit's given code in it)
        folder = tmp_path_factory.mktemp(unit_name)
        paths = []
        for source in FILES[(unit_name, "alternatives")] + FILES[(unit_name, "mistakes")]:
            path = folder / source.name
            path.write_text(reference + "\n\n" + source.read_text(encoding="utf-8"))
            paths.append(path)
        grader = Grader(unit, sandbox="auto", timing_mode="give")  # the timing tier has tests of its own
        try:
            results[unit_name] = {result.name: result for result in grader.grade_many(paths, jobs=2)}
        finally:
            grader.close()
    return results


def _cases(kind):
    return [(unit, path) for unit in UNITS for path in FILES[(unit, kind)]]


def test_each_unit_has_a_blind_set_of_both_kinds_for_every_task():
    for unit_name in UNITS:
        tasks = set(units.get(unit_name).rubric.TASK_NAMES)
        for kind in ("alternatives", "mistakes"):
            assert {path.stem.split("__")[0] for path in FILES[(unit_name, kind)]} == tasks, (unit_name, kind)


@pytest.mark.parametrize("unit, path", _cases("alternatives"), ids=[path.stem for _, path in _cases("alternatives")])
def test_a_correct_formulation_written_blind_scores_full_marks(graded, unit, path):
    result = graded[unit][path.stem]
    assert {test.id: test.output for test in result.tests if not test.passed} == {}


@pytest.mark.parametrize("unit, path", _cases("mistakes"), ids=[path.stem for _, path in _cases("mistakes")])
def test_a_mistake_written_blind_costs_its_own_task_and_is_told_what_is_wrong(graded, unit, path):
    result = graded[unit][path.stem]
    task = path.stem.split("__")[0]
    failed = [test for test in result.tests if not test.passed and test.task != "timing"]
    if path.stem in ACCEPTED:
        assert {test.id for test in failed} == ACCEPTED[path.stem]
        return
    assert failed, "the mistake went unseen"
    assert {test.task for test in failed} == {task}, [test.id for test in failed]
    said = "\n".join(test.output for test in failed)
    named = NAMED[unit].get(path.stem)
    if named:
        assert named in said, said
        # The class table's line (report.headline, which reads "Likely mistake: ...") names a mistake too.
        assert headline(result).startswith(f"{task}: ") and "\n" not in headline(result), headline(result)
    else:
        assert "Likely mistake" not in said, said  # a name where none was expected: a wrong one, or a new one to list
    assert named or any(words in failed[0].output for words in TOLD), failed[0].output
